// AmdSdmaQueue: the copy queue, SDMA packets on a KFD SDMA ring.
#include "amd/kfd/amd_queue.hpp"

#include "amd/kfd/amd_device.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {

// ---------------------------------------------------------------------------------------------------------------
// SDMA copy queue

void AmdSdmaQueue::encode_wait(Sym signal_addr, Sym value) {
  start_group();
  enc().wait(signal_addr, value);
  flush_patches();
}

void AmdSdmaQueue::encode_signal(Sym signal_addr, Sym value) {
  // SDMA runs its packets in order: the clock at +8, then the value with two 32-bit FENCEs, low word first (a
  // reader may see the new low word with the old high one: never a value above the new one).
  start_group();
  SdmaEncoder e = enc();
  e.timestamp(signal_addr + 8);
  e.fence(signal_addr, value);
  if (value.is_const()) {
    e.fence(signal_addr + 4, static_cast<uint32_t>(value.add >> 32));
  } else {
    e.fence(signal_addr + 4, 0u);
    patch_word(words_.size() - 1, value, PatchList::Kind::u32, 32);
  }
  // The timeline signal wakes host waiters: the event id into the mailbox, then TRAP with it as the context.
  if (const auto ev = static_cast<const AmdDevice&>(device()).signal_event_for(signal_addr))
    e.signal_event(ev->mailbox, ev->id);
  flush_patches();
}

void AmdSdmaQueue::encode_timestamp(Sym signal_addr) {
  start_group();
  enc().timestamp(signal_addr + 8);
  flush_patches();
}

void AmdSdmaQueue::encode_exec(const Program& program, const LaunchArgs&, const Dims&, const Dims&) {
  throw InvalidArgument(cat(device().name(), ": exec of ", program.name(), " on the SDMA copy queue"));
}

void AmdSdmaQueue::encode_copy(Sym dst, Sym src, uint64_t size) {
  // One group per COPY_LINEAR, so a long copy can stream through a ring smaller than itself.
  const uint64_t max = target().sdma->max_copy_bytes;
  for (uint64_t done = 0; done < size; done += max) {
    start_group();
    enc().copy(dst + static_cast<int64_t>(done), src + static_cast<int64_t>(done), std::min(max, size - done));
  }
  flush_patches();
}

void AmdSdmaQueue::encode_memory_barrier() {
  throw InvalidArgument(cat(device().name(),
                            ": memory_barrier on the SDMA copy queue: the HDP flush it needs is "
                            "not encoded for SDMA; put the barrier on the compute queue"));
}

void AmdSdmaQueue::encode_write(Sym addr, Sym value, Width width) {
  start_group();
  enc().write(addr, value, width == Width::b64);
  flush_patches();
}

void AmdSdmaQueue::encode_poll_bit(Sym addr, uint32_t mask, bool set) {
  start_group();
  enc().poll_bits(addr, mask, set ? mask : 0u);
  flush_patches();
}

std::byte* AmdSdmaQueue::bind_words(std::span<const uint32_t> words) {
  if (words.empty()) throw InvalidArgument(cat(device().name(), ": bind of an empty SDMA queue"));
  return bind_to_side(words);
}

void AmdSdmaQueue::submit_words(uint64_t completion_addr, uint64_t seq) {
  tail_.clear();
  if (completion_addr != 0) SdmaEncoder(target(), tail_).write(completion_addr, seq, true);
  const std::span<const uint32_t> words =
      bound() ? std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(bound_.host), words_.size())
              : std::span<const uint32_t>(words_);
  submit_groups(words, tail_);
  capture::on_submit(*this, "sdma", last_end_, words, tail_);
}

}  // namespace hcq::amd
