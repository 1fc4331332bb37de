// The AQL compute queue, for parts whose compute queues run in HSA mode (multi-XCC gfx942/gfx950): the ring holds
// 64-byte AQL packets. As the reference (tinygrad) does it, each exec is a KERNEL_DISPATCH packet, and the PM4
// between dispatches (waits, signals, timestamps, barriers, writes, polls) runs as an indirect buffer through AMD's
// vendor PM4-IB packet. Every packet carries the barrier bit, so the queue runs in order like the PM4 ring.
//
// Where the words live: bound, in the bound copy (side memory, patched in place); unbound, in a staging block of
// side memory filled at each submit (reused once the ring has read past the submission that last used it). The
// completion write of a tracked queue changes with every submit, so it goes in the staging block as well, never in
// the bound copy. Dispatch packets are built in side memory (patched there) and copied into the ring at submit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "amd/kfd/amd_queue.hpp"

namespace hcq::amd {

class AmdAqlQueue final : public AmdPm4Queue {
 public:
  AmdAqlQueue(Device& dev, AmdRing& ring) : AmdPm4Queue(dev, ring) {}

 protected:
  void encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) override;
  std::byte* bind_words(std::span<const uint32_t> words) override;
  void submit_words(uint64_t completion_addr, uint64_t seq) override;

 private:
  struct Staging {
    SideBlock block;
    uint64_t bytes = 0;  // capacity
    uint64_t end = 0;    // ring position (words) past the last submission that reads it
  };
  // A staging block of at least `bytes` the GPU no longer reads.
  Staging& take_staging(uint64_t bytes);
  // Appends PM4-IB packets running `n` dwords at `va` (none when n is 0).
  void add_ib(uint64_t va, uint64_t n);

  // Per exec: the PM4 word index it sits before, its dispatch packet in side memory, and its launch block (the
  // grid sizes, groups x local, are computed from it at each submit: a patch cannot multiply).
  struct Dispatch {
    uint32_t at;
    const std::byte* packet;
    const std::byte* launch_block;
    std::string program;
  };
  std::vector<Dispatch> dispatches_;
  std::vector<Staging> staging_;
  std::vector<uint32_t> packets_;  // the submission's AQL packets, built at submit
};

}  // namespace hcq::amd
