#include "cuda/cuda_queue.hpp"

#include <bit>
#include <cstring>

#include "cuda/cuda_commands.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/cuda_program.hpp"
#include "cuda/cuda_stream.hpp"
#include "hcq/error.hpp"

namespace hcq::cuda {

CudaQueue::CudaQueue(CudaDevice& dev, QueueKind kind, CudaStream& stream)
    : HWQueue(dev, kind), cuda_(dev), stream_(stream) {}

// Nothing to give back late: the executor reads the words on the host during submit, and CUDA copies a launch's
// parameters when the launch is enqueued, so no submission reads this queue's memory once submit returned.
CudaQueue::~CudaQueue() = default;

void CudaQueue::encode_wait(Sym signal_addr, Sym value) {
  emit(make_header(Opcode::wait, 5));
  emit_sym64(signal_addr);
  emit_sym64(value);
}

void CudaQueue::encode_signal(Sym signal_addr, Sym value) {
  emit(make_header(Opcode::signal, 5));
  emit_sym64(signal_addr);
  emit_sym64(value);
}

void CudaQueue::encode_timestamp(Sym signal_addr) {
  emit(make_header(Opcode::timestamp, 3));
  emit_sym64(signal_addr);
}

void CudaQueue::encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) {
  const auto* p = dynamic_cast<const CudaProgram*>(&program);
  if (!p || &p->device() != &device())
    throw InvalidArgument(
        cat(device().name(), ": exec of ", program.name(), ", which is not a program of this device"));
  // The parameter block in place: buffer addresses (8 bytes each), then 32-bit values, then zero words up to the
  // kernel's parameter size (the struct's tail padding), all patched like any other operand.
  const uint32_t block_words = static_cast<uint32_t>(2 * args.bufs.size() + args.vals.size());
  const uint32_t param_words = std::max(block_words, (p->param_bytes() + 3) / 4);
  emit(make_header(Opcode::exec, 1 + 8 + param_words));
  emit64(p->serial());
  for (const Sym& g : global) emit_sym32(g);
  for (const Sym& l : local) emit_sym32(l);
  for (const Sym& b : args.bufs) emit_sym64(b);
  for (const Sym& v : args.vals) emit_sym32(v);
  for (uint32_t i = block_words; i < param_words; ++i) emit(0);
}

void CudaQueue::encode_copy(Sym dst, Sym src, uint64_t size) {
  emit(make_header(Opcode::copy, 7));
  emit_sym64(dst);
  emit_sym64(src);
  emit64(size);
}

void CudaQueue::encode_memory_barrier() { emit(make_header(Opcode::barrier, 1)); }

void CudaQueue::encode_write(Sym addr, Sym value, Width width) {
  if (width == Width::b32) {
    emit(make_header(Opcode::write32, 4));
    emit_sym64(addr);
    emit_sym32(value);
  } else {
    emit(make_header(Opcode::write64, 5));
    emit_sym64(addr);
    emit_sym64(value);
  }
}

void CudaQueue::encode_poll_bit(Sym addr, uint32_t mask, bool set) {
  // CUDA's 32-bit waits test "any bit of the mask set" (AND) or "any bit of the mask clear" (NOR): "every bit" only
  // for one bit. A wider mask is one wait per bit, lowest first: the same as waiting for all at once when a bit,
  // once in the awaited state, stays there (how flags are used); a bit that flips back while a later one is awaited
  // is not looked at again. docs/cuda.md says so.
  if (mask == 0) throw InvalidArgument(cat(device().name(), ": poll_bit with an empty mask"));
  if (!set && !cuda_.facts().wait_value_nor)
    throw UnsupportedDriver(cat(device().name(), ": poll_bit for clear bits needs CU_STREAM_WAIT_VALUE_NOR, which ",
                                cuda_.facts().product, " does not support"));
  for (uint32_t rest = mask; rest != 0; rest &= rest - 1) {
    emit(make_header(Opcode::wait_bit, 5));
    emit_sym64(addr);
    emit(rest & (~rest + 1));  // the lowest bit left
    emit(set ? 1u : 0u);
  }
}

std::byte* CudaQueue::bind_words(std::span<const uint32_t> words) {
  bound_ = std::make_unique<uint32_t[]>(words.size());
  std::memcpy(bound_.get(), words.data(), words.size_bytes());
  bound_size_ = words.size();
  return reinterpret_cast<std::byte*>(bound_.get());
}

void CudaQueue::submit_words(uint64_t completion_addr, uint64_t seq) {
  const std::span<const uint32_t> w = bound() ? std::span<const uint32_t>(bound_.get(), bound_size_) : words();
  stream_.run(w, completion_addr, seq);
}

}  // namespace hcq::cuda
