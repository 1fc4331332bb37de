// The `framework.multi` figures of `hcq bench` (issue 18): an allreduce (sum) of `bytes` of float32 over a device
// and its peer (CPU:0 and CPU:1; SIM-AMD:gfx1100 and SIM-AMD:gfx1100:1; AMD:0 and AMD:1), through hcq::allreduce
// with its automatic choice, beside one peer copy of the same bytes (Buffer::copy_from, the copy the allreduce's
// steps are made of) in the same run:
//   allreduce_gbps   bytes / time of one allreduce, realized and both devices waited for (the "algorithm
//                    bandwidth"); bus_gbps = that * 2(N-1)/N, the bytes each device receives per second
//   peer_copy_gbps   bytes / time of one copy from the device to its peer, waited for
//   of_peer_copy     bus_gbps / peer_copy_gbps: an allreduce moves 2(N-1)/N of the tensor into each device, so with
//                    copies no faster than one peer copy, and combining free, that is its bound
//   exchange_gbps    bytes / time of the allreduce's first step alone: each device's tensor copied to the other
//                    (Tensor::to), both at once, both devices waited for
//   combine_gbps     bytes / time of its second step alone, right after: each device adds what it received to its
//                    own tensor, both at once
//   bound_gbps       the direct algorithm's bound on this machine: it exchanges the tensors, then each device adds
//                    (the add needs the whole copy, and a device runs its copies and kernels in its timeline's
//                    order), so its time is at least exchange + combine: 1 / (1/exchange + 1/combine)
//   of_bound         allreduce_gbps / bound_gbps (target >= 0.8). On a GPU combining is ~100x faster than a peer
//                    copy and the bound is about the exchange; a simulated GPU runs its kernels on host threads
//                    (its L2 model makes a 16 MiB add ~10x a peer copy), so there the combine dominates it
//   direct_gbps, ring_gbps: allreduce_gbps with each algorithm forced (what the automatic choice is based on)
//   dp_step_ms   {devices, one}: the MLP's jitted data-parallel Adam step (`hcq train --devices`) over the device
//                and its peer, and on the device alone, on the same global batch of 128 (a fixed synthetic one)
// Medians of `runs` (steps: `dp_steps`); one untimed run first (the kernels compiled, the schedule cached).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace hcq {
class Device;
}

namespace hcq::tool {

struct MultiBenchResult {
  static constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
  std::string peer;         // the second device
  std::string unavailable;  // why nothing was measured (no peer)
  std::string algorithm;    // what automatic chose: "direct" or "ring"
  uint64_t bytes = 0;
  double allreduce_gbps = kNotMeasured, bus_gbps = kNotMeasured, peer_copy_gbps = kNotMeasured;
  double direct_gbps = kNotMeasured, ring_gbps = kNotMeasured;  // each algorithm forced, same bytes
  double exchange_gbps = kNotMeasured, combine_gbps = kNotMeasured;
  double bound_gbps() const { return 1.0 / (1.0 / exchange_gbps + 1.0 / combine_gbps); }
  double dp_step_ms = kNotMeasured, one_device_step_ms = kNotMeasured;
};

// The second device of dev's kind, or "" when there is none by that naming.
std::string peer_of(const std::string& device);
MultiBenchResult measure_multi(Device& dev, uint64_t bytes, int runs, int dp_steps);

}  // namespace hcq::tool
