#include "bench_multi.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/jit.hpp"
#include "hcq/multi.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"
#include "train_replicas.hpp"

namespace hcq::tool {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The MLP's jitted training step (TrainReplicas, as `hcq train --devices` runs it) over `devices`, on a fixed
// synthetic batch of 128 rows sharded as hcq train shards it: the median milliseconds of `steps` replays, the loss
// read back. The loss must fall: a step that trains nothing is no measurement.
double dp_step_ms(const std::vector<std::string>& devices, int steps) {
  TrainReplicas replicas("mlp", devices, 0);
  constexpr size_t kBatch = 128;
  std::vector<Tensor> shards;
  size_t start = 0;
  for (size_t r = 0; r < devices.size(); ++r) {
    const size_t rows = kBatch / devices.size() + (r < kBatch % devices.size() ? 1 : 0);
    std::vector<float> x(rows * 784);
    std::vector<int32_t> y(rows);
    for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(((start * 784 + k) * 2654435761u) % 1000) / 1000.0f;
    for (size_t k = 0; k < rows; ++k) y[k] = static_cast<int32_t>((start + k) % 10);
    const auto n = static_cast<int64_t>(rows);
    shards.push_back(Tensor(x, {n, 1, 28, 28}, replicas.devices()[r]));
    shards.push_back(Tensor(y, {n}, replicas.devices()[r]));
    start += rows;
  }
  TinyJit step([&](const std::vector<Tensor>& in) { return replicas.step(in); });
  auto loss_of = [&] {
    double loss = 0;
    for (const Tensor& l : step(shards)) loss += l.item();
    return loss;
  };
  double first = 0;
  for (int k = 0; k < 3; ++k) first = loss_of();  // run, capture, first replay
  std::vector<double> ms;
  double last = first;
  for (int k = 0; k < steps; ++k) {
    const auto t0 = Clock::now();
    last = loss_of();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  if (!(std::isfinite(last) && last < first))
    throw Error(cat("framework.multi: the data-parallel step did not train: loss ", first, " after the capture, ", last,
                    " after ", steps, " more steps"));
  return median(ms);
}

}  // namespace

std::string peer_of(const std::string& device) {
  if (device.rfind("CPU", 0) == 0) return device == "CPU:1" ? "CPU:0" : "CPU:1";
  if (device.rfind("SIM-", 0) == 0) return device + ":1";  // the simulated machine's second GPU
  const size_t colon = device.find(':');
  if (colon == std::string::npos) return {};
  return device.substr(0, colon) + (device.substr(colon + 1) == "1" ? ":0" : ":1");
}

MultiBenchResult measure_multi(Device& dev, uint64_t bytes, int runs, int dp_steps) {
  MultiBenchResult r;
  r.peer = peer_of(dev.name());
  Device* peer = nullptr;
  try {
    if (!r.peer.empty()) peer = &open_device(r.peer);
  } catch (const std::exception& e) {
    r.unavailable = cat("no peer: ", r.peer, " does not open (", e.what(), ")");
    return r;
  }
  if (peer == nullptr) {
    r.unavailable = cat("no peer device for ", dev.name());
    return r;
  }
  r.bytes = bytes;
  const auto n = static_cast<int64_t>(bytes / 4);
  const std::vector<std::string> devs = {dev.name(), peer->name()};
  check_devices_reach(devs);
  r.algorithm = "direct";  // what automatic picks over two devices (allreduce.cpp)

  // The yardstick: one copy of the same bytes from the device to its peer.
  Buffer src(dev, bytes), dst(*peer, bytes);
  // Written first, as the allreduce's inputs are: a simulated GPU's memory costs more once its lines hold data.
  src.copyin(std::span<const std::byte>(std::vector<std::byte>(bytes, std::byte{1})));
  std::vector<double> copy_s;
  for (int k = 0; k <= runs; ++k) {
    dev.synchronize();
    peer->synchronize();
    const auto t0 = Clock::now();
    dst.copy_from(src);
    peer->synchronize();
    dev.synchronize();
    if (k > 0) copy_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }

  std::vector<Tensor> in = {Tensor::ones({n}, dtypes::float32, devs[0]),
                            Tensor::full({n}, 2.0, dtypes::float32, devs[1])};
  Tensor::realize(in);
  auto time_allreduce = [&](AllreduceAlgo algo) {
    std::vector<double> secs;
    for (int k = 0; k <= runs; ++k) {
      dev.synchronize();
      peer->synchronize();
      const auto t0 = Clock::now();
      {
        // Dropped at the end of each run: an equal graph still held would be realized already, and run nothing.
        std::vector<Tensor> out = allreduce(in, ReduceOp::sum, algo);
        Tensor::realize(out);
        dev.synchronize();
        peer->synchronize();
        if (k == 0 && (out[0].shape(0) != n || out[1].slice(0, n - 1, n).item() != 3.0))
          throw Error(cat("framework.multi: the allreduce of 1 + 2 did not give 3 on ", devs[1]));
      }
      if (k > 0) secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return static_cast<double>(bytes) / median(secs) / 1e9;
  };
  r.direct_gbps = time_allreduce(AllreduceAlgo::direct);
  r.ring_gbps = time_allreduce(AllreduceAlgo::ring);
  // The direct allreduce's two steps, each alone, both devices waited for after each: the exchange (each device's
  // tensor copied to the other, both at once), then the combine (each device adds the tensor it received to its
  // own: data a copy engine just wrote, as in the allreduce).
  std::vector<double> exchange_s, combine_s;
  for (int k = 0; k <= runs; ++k) {
    dev.synchronize();
    peer->synchronize();
    const auto t0 = Clock::now();
    std::vector<Tensor> received = {in[1].to(devs[0]), in[0].to(devs[1])};
    Tensor::realize(received);
    dev.synchronize();
    peer->synchronize();
    const auto t1 = Clock::now();
    {
      std::vector<Tensor> sums = {in[0] + received[0], received[1] + in[1]};
      Tensor::realize(sums);
      dev.synchronize();
      peer->synchronize();
    }
    if (k == 0) continue;
    exchange_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    combine_s.push_back(std::chrono::duration<double>(Clock::now() - t1).count());
  }
  const double b = static_cast<double>(bytes);
  r.peer_copy_gbps = b / median(copy_s) / 1e9;
  r.exchange_gbps = b / median(exchange_s) / 1e9;
  r.combine_gbps = b / median(combine_s) / 1e9;
  r.allreduce_gbps = r.algorithm == "ring" ? r.ring_gbps : r.direct_gbps;
  r.bus_gbps = r.allreduce_gbps * 2.0 * (2 - 1) / 2;  // N = 2
  r.one_device_step_ms = dp_step_ms({devs[0]}, dp_steps);
  r.dp_step_ms = dp_step_ms(devs, dp_steps);
  return r;
}

}  // namespace hcq::tool
