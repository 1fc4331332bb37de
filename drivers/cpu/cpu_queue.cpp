#include "cpu_queue.hpp"

#include <algorithm>
#include <cstring>

#include "cpu_commands.hpp"
#include "cpu_program.hpp"
#include "cpu_ring.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/error.hpp"

namespace hcq::cpu {

CpuQueue::CpuQueue(Device& dev, QueueKind kind, CpuRing& ring) : HWQueue(dev, kind), ring_(ring) {}

CpuQueue::~CpuQueue() {
  // A queue not ending on the timeline need not be on it: the ring's read pointer is the exact fence.
  release_side([&] { return last_end_ == 0 || ring_.wait_consumed(last_end_); });
}

void CpuQueue::encode_wait(Sym signal_addr, Sym value) {
  emit(make_header(Opcode::wait, command_length(Opcode::wait)));
  emit_sym64(signal_addr);
  emit_sym64(value);
}

void CpuQueue::encode_signal(Sym signal_addr, Sym value) {
  emit(make_header(Opcode::signal, command_length(Opcode::signal)));
  emit_sym64(signal_addr);
  emit_sym64(value);
}

void CpuQueue::encode_timestamp(Sym signal_addr) {
  emit(make_header(Opcode::timestamp, command_length(Opcode::timestamp)));
  emit_sym64(signal_addr);
}

void CpuQueue::encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) {
  const auto* cpu_program = dynamic_cast<const CpuProgram*>(&program);
  if (!cpu_program)
    throw InvalidArgument(cat(device().name(), ": exec of ", program.name(), ", which is not a CPU program"));

  // Kernarg segment: buffer addresses (8 bytes each), then 32-bit values; symbolic ones are patched in place.
  // A kernel without arguments needs no segment (kernarg address 0, size 0): no side memory, no absolute patches,
  // so the queue needs no completion tracking either. That keeps the eager launch of such kernels lean.
  const uint64_t bytes = args.bufs.size() * 8 + args.vals.size() * 4;
  SideBlock kernargs;
  if (bytes != 0) {
    kernargs = device().alloc_side(bytes, 16);
    side_.push_back(kernargs);
  }
  // A constant is stored right away (what PatchList::add would do for it); a symbol becomes a patch.
  auto put = [&](const Sym& v, uint64_t off, PatchList::Kind kind) {
    std::byte* at = kernargs.host + off;
    if (v.is_const()) {
      if (kind == PatchList::Kind::u64) {
        std::memcpy(at, &v.add, 8);
      } else {
        const auto w = static_cast<uint32_t>(v.add);
        std::memcpy(at, &w, 4);
      }
      return;
    }
    patches_.add(v, {PatchList::kAbsolute, reinterpret_cast<uint64_t>(at), kind});
  };
  for (size_t i = 0; i < args.bufs.size(); ++i) put(args.bufs[i], 8 * i, PatchList::Kind::u64);
  for (size_t i = 0; i < args.vals.size(); ++i) put(args.vals[i], 8 * args.bufs.size() + 4 * i, PatchList::Kind::u32);

  emit(make_header(Opcode::exec, command_length(Opcode::exec)));
  emit64(cpu_program->handle());
  emit64(kernargs.va);
  for (const Sym& g : global) emit_sym64(g);
  for (const Sym& l : local) emit_sym64(l);
}

void CpuQueue::encode_copy(Sym dst, Sym src, uint64_t size) {
  emit(make_header(Opcode::copy, command_length(Opcode::copy)));
  emit_sym64(dst);
  emit_sym64(src);
  emit64(size);
}

void CpuQueue::encode_memory_barrier() { emit(make_header(Opcode::barrier, command_length(Opcode::barrier))); }

void CpuQueue::encode_write(Sym addr, Sym value, Width width) {
  if (width == Width::b32) {
    emit(make_header(Opcode::write32, command_length(Opcode::write32)));
    emit_sym64(addr);
    emit_sym32(value);
  } else {
    emit(make_header(Opcode::write64, command_length(Opcode::write64)));
    emit_sym64(addr);
    emit_sym64(value);
  }
}

void CpuQueue::encode_poll_bit(Sym addr, uint32_t mask, bool set) {
  emit(make_header(Opcode::poll_bit, command_length(Opcode::poll_bit)));
  emit_sym64(addr);
  emit(mask);
  emit(set ? 1u : 0u);
}

std::byte* CpuQueue::bind_words(std::span<const uint32_t> words) {
  if (words.size() > 0xffffffffu)
    throw InvalidArgument(cat(device().name(), ": a bound queue of ", words.size(), " dwords is too large"));
  const SideBlock block = device().alloc_side(words.size_bytes(), 64);
  side_.push_back(block);
  std::memcpy(block.host, words.data(), words.size_bytes());
  bound_va_ = block.va;
  bound_dwords_ = static_cast<uint32_t>(words.size());
  return block.host;
}

void CpuQueue::submit_words(uint64_t completion_addr, uint64_t seq) {
  // The completion write lives in the ring, after the commands: it runs once they are all done.
  const uint32_t tail[] = {make_header(Opcode::write64, command_length(Opcode::write64)),
                           static_cast<uint32_t>(completion_addr), static_cast<uint32_t>(completion_addr >> 32),
                           static_cast<uint32_t>(seq), static_cast<uint32_t>(seq >> 32)};
  const std::span<const uint32_t> completion =
      completion_addr ? std::span<const uint32_t>(tail) : std::span<const uint32_t>();
  if (bound()) {
    const uint32_t indirect[] = {make_header(Opcode::indirect, command_length(Opcode::indirect)),
                                 static_cast<uint32_t>(bound_va_), static_cast<uint32_t>(bound_va_ >> 32),
                                 bound_dwords_};
    last_end_ = ring_.submit(indirect, completion);
    capture::on_submit(*this, "cpu", last_end_, indirect, completion);
  } else {
    last_end_ = ring_.submit(words_, completion);
    capture::on_submit(*this, "cpu", last_end_, words_, completion);
  }
}

capture::RingDump pending_ring_words(const CpuRing& ring, const char* queue) {
  capture::RingDump d;
  d.queue = queue;
  d.format = "cpu";
  d.read = ring.read_pointer();
  d.write = ring.write_pointer();
  const uint64_t pending = d.write > d.read ? d.write - d.read : 0;
  const uint64_t n = std::min<uint64_t>({pending, ring.capacity(), capture::kMaxWords});
  d.words.resize(n);
  // Relaxed loads: the worker may move on while we copy; the dump then shows words it has just run.
  for (uint64_t i = 0; i < n; ++i) d.words[i] = __atomic_load_n(ring.slot(d.read + i), __ATOMIC_RELAXED);
  d.dropped = pending - n;
  return d;
}

}  // namespace hcq::cpu
