#include "amd/kfd/amd_aql_queue.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "amd/aql_facts.hpp"
#include "amd/kfd/amd_program.hpp"
#include "amd/pm4_facts.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {

void AmdAqlQueue::encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) {
  // The packet is always built: it is what the ring gets. The CP hands its ring address to kernels that ask for
  // the dispatch pointer.
  const Launch l = build_launch(program, args, global, local, true, /*grid_at_submit=*/true);
  dispatches_.push_back({static_cast<uint32_t>(words_.size()), l.packet, l.launch_block, program.name()});
}

std::byte* AmdAqlQueue::bind_words(std::span<const uint32_t> words) {
  const uint32_t max = pm4::kIndirectBuffer.find("ib_size")->mask();
  if (words.size() > max)
    throw InvalidArgument(cat(device().name(), ": bind of an AQL queue with ", words.size(),
                              " dwords of PM4: an indirect buffer holds at most ", max));
  if (words.empty()) {
    static constexpr uint32_t kNone[1] = {0};  // only dispatches: nothing to copy, but the copy must exist
    return bind_to_side(kNone);
  }
  return bind_to_side(words);
}

AmdAqlQueue::Staging& AmdAqlQueue::take_staging(uint64_t bytes) {
  for (Staging& s : staging_)
    if (s.bytes >= bytes && ring_.consumed(s.end)) return s;
  Staging s;
  s.block = device().alloc_side(bytes, 256);
  s.bytes = bytes;
  side_.push_back(s.block);  // given back with the queue's other side memory
  staging_.push_back(s);
  return staging_.back();
}

void AmdAqlQueue::add_ib(uint64_t va, uint64_t n) {
  static const uint64_t max = pm4::kIndirectBuffer.find("ib_size")->mask();  // per dispatch per replay: once
  if (n > max)
    throw InvalidArgument(cat(device().name(), ": AQL queue: ", n,
                              " dwords of PM4 between dispatches; an indirect "
                              "buffer holds at most ",
                              max, " (bind() or split the queue)"));
  if (n != 0) AqlEncoder(target(), packets_).pm4_ib(va, static_cast<uint32_t>(n));
}

void AmdAqlQueue::submit_words(uint64_t completion_addr, uint64_t seq) {
  // The completion write, as PM4 (it must run after everything before it, like the rest of the queue).
  tail_.clear();
  if (completion_addr != 0) Pm4Encoder(target(), tail_).write(completion_addr, seq, true);
  // Where the PM4 words are: the bound copy, or a staging block filled now; the tail follows in staging.
  const uint64_t words_bytes = bound() ? 0 : words_.size() * 4;
  Staging* st = nullptr;
  if (words_bytes + tail_.size() * 4 != 0) {
    st = &take_staging(words_bytes + tail_.size() * 4);
    if (words_bytes) std::memcpy(st->block.host, words_.data(), words_bytes);
    if (!tail_.empty()) std::memcpy(st->block.host + words_bytes, tail_.data(), tail_.size() * 4);
  }
  const uint64_t words_va = bound() ? bound_.va : (st ? st->block.va : 0);

  packets_.clear();
  uint32_t done = 0;
  for (const Dispatch& d : dispatches_) {
    add_ib(words_va + uint64_t{done} * 4, d.at - done);
    const size_t n = packets_.size();
    packets_.resize(n + aql::kPacketWords);
    std::memcpy(packets_.data() + n, d.packet, aql::kPacketBytes);  // patched in side memory by HWQueue::submit
    // grid (work-items) = groups x local, from the launch block as this submit patched it. The fields are looked
    // up by name once: this runs per dispatch on every replay.
    static const std::array<uint32_t, 3> kGridDword = {aql::kKernelDispatch.find("grid_size_x")->dword,
                                                       aql::kKernelDispatch.find("grid_size_y")->dword,
                                                       aql::kKernelDispatch.find("grid_size_z")->dword};
    uint32_t dims[6];
    std::memcpy(dims, d.launch_block, sizeof dims);
    for (int i = 0; i < 3; ++i) {
      const uint64_t grid = uint64_t{dims[i]} * dims[3 + i];
      if (grid > 0xffffffffull)
        throw InvalidArgument(cat(device().name(), ": exec of ", d.program, " on the AQL queue: grid dim ", i, " of ",
                                  grid, " work-items does not fit the packet's 32 bits"));
      packets_[n + kGridDword[i]] = static_cast<uint32_t>(grid);
    }
    done = d.at;
  }
  add_ib(words_va + uint64_t{done} * 4, words_.size() - done);
  if (!tail_.empty()) add_ib(st->block.va + words_bytes, tail_.size());
  if (st) st->end = ~uint64_t{0};  // until the ring has it: a submit that fails part-way never frees it
  last_end_ = ring_.submit(packets_, {}, {});
  if (st) st->end = last_end_;
  capture::on_submit(*this, "aql", last_end_, packets_);
}

}  // namespace hcq::amd
