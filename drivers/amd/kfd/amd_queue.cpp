// AmdQueue, what the PM4 and SDMA queues share (recording into side memory, submitting groups to the ring, building
// a launch and its dispatch packet), and AmdPm4Queue, the compute queue. The ring is amd_ring.cpp, SDMA
// amd_sdma_queue.cpp.
#include "amd/kfd/amd_queue.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <typeinfo>

#include "amd/aql_facts.hpp"
#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/amd_program.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/backend/heap_cache.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

namespace hcq::amd {
namespace {

// AmdProgram is final, so an exact type compare is enough, and cheaper than a dynamic_cast on every exec.
const AmdProgram* as_amd(const Program& program) {
  return typeid(program) == typeid(AmdProgram) ? static_cast<const AmdProgram*>(&program) : nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// AmdQueue

AmdQueue::AmdQueue(Device& dev, QueueKind kind, AmdRing& ring)
    : HWQueue(dev, kind), ring_(ring), starts_(VectorCache<uint32_t>::take(16)) {}

AmdQueue::~AmdQueue() {
  // wait_timeout_or_default: a destructor must not throw, and a bad HCQ_WAIT_TIMEOUT_MS is reported by the waits.
  release_side([&] { return last_end_ == 0 || ring_.wait_consumed(last_end_, knobs::wait_timeout_or_default()); });
  VectorCache<uint32_t>::give(starts_);
}

void AmdQueue::flush_patches() {
  for (const RecordingSink::Entry& e : sink_.entries) patch_word(e.word, e.value, e.kind, e.shift, e.lo_bit, e.nbits);
  sink_.entries.clear();
}

std::byte* AmdQueue::bind_to_side(std::span<const uint32_t> words) {
  const SideBlock block = device().alloc_side(words.size_bytes(), 256);
  side_.push_back(block);
  std::memcpy(block.host, words.data(), words.size_bytes());
  bound_ = block;
  return block.host;
}

void AmdQueue::submit_groups(std::span<const uint32_t> words, std::span<const uint32_t> tail) {
  last_end_ = ring_.submit(words, starts_, tail);
}

// ---------------------------------------------------------------------------------------------------------------
// PM4 compute queue

void AmdPm4Queue::encode_wait(Sym signal_addr, Sym value) {
  start_group();
  enc().wait(signal_addr, value);
  flush_patches();
}

void AmdPm4Queue::encode_signal(Sym signal_addr, Sym value) {
  // End-of-pipe with the caches flushed: the clock at +8, then the 64-bit value at +0 (in order: a reader that
  // sees the value sees the clock).
  start_group();
  Pm4Encoder e = enc();
  e.release_mem(target().pm4->release_flush_all, pm4::DATA_GPU_CLOCK, pm4::INT_NONE, signal_addr + 8, 0u, 0);
  e.release_mem(0, pm4::DATA_64, pm4::INT_NONE, signal_addr, value, 0);
  // The timeline signal also wakes host waiters sleeping in WAIT_EVENTS: after the value, the event id into the
  // mailbox and the interrupt naming it (one more RELEASE_MEM). AQL queues run this same PM4 through the IB packet.
  if (const auto ev = static_cast<const AmdDevice&>(device()).signal_event_for(signal_addr))
    e.signal_event(ev->mailbox, ev->id);
  flush_patches();
}

void AmdPm4Queue::encode_timestamp(Sym signal_addr) {
  start_group();
  enc().timestamp(signal_addr + 8);
  flush_patches();
}

AmdQueue::Launch AmdQueue::build_launch(const Program& program, const LaunchArgs& args, const Dims& global,
                                        const Dims& local, bool with_packet, bool grid_at_submit) {
  // HWQueue::exec checked that the program was loaded on this device, and AmdDevice loads only AmdPrograms.
  const AmdProgram* p = as_amd(program);
  if (p == nullptr)
    throw InvalidArgument(cat(device().name(), ": exec of ", program.name(), ", which is not an AMD program"));
  // Scratch first (it may refuse the kernel): grown on this queue's ring before anything is recorded.
  AmdScratch::Use scratch;
  if (p->needs_scratch(target())) {
    try {
      scratch = ring_.scratch().ensure(p->info().private_segment_size);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(cat("exec of ", program.name(), ": ", e.what()));
    }
  }

  // Side memory: the kernarg segment (explicit arguments, then the launch block the kernel reads its group counts and
  // local size from), after the AQL-layout dispatch packet when one is wanted.
  const uint64_t kalign = std::max<uint64_t>(16, p->kernarg_segment_align());
  const uint64_t karg_off = with_packet ? align_up(aql::kPacketBytes, kalign) : 0;
  const uint64_t side_bytes = karg_off + p->kernarg_bytes();
  Launch l;
  l.program = p;
  l.scratch = scratch;
  l.side = device().alloc_side(side_bytes, std::max<uint64_t>(64, kalign));
  side_.push_back(l.side);
  std::memset(l.side.host, 0, side_bytes);
  std::byte* kargs = l.side.host + karg_off;
  l.kargs_va = l.side.va + karg_off;
  // The packet first: it may refuse the dims, and then no patch into this side block must have been recorded.
  if (with_packet) {
    write_dispatch_packet(*p, l.side.host, l.kargs_va, global, local, grid_at_submit);
    l.packet = l.side.host;
    l.packet_va = l.side.va;
  }
  l.launch_block = kargs + p->launch_block_offset();
  // A constant is stored right away; a symbol becomes a patch.
  auto put = [&](const Sym& v, uint64_t off, PatchList::Kind kind) { patches_.add_absolute(v, kargs + off, kind); };
  for (size_t i = 0; i < args.bufs.size(); ++i) put(args.bufs[i], 8 * i, PatchList::Kind::u64);
  for (size_t i = 0; i < args.vals.size(); ++i) put(args.vals[i], 8 * args.bufs.size() + 4 * i, PatchList::Kind::u32);
  // The launch block takes each dim as it is (a constant, or a direct patch of its variable): no products.
  const uint64_t lb = p->launch_block_offset();
  for (uint64_t i = 0; i < 3; ++i) {
    put(global[i], lb + 4 * i, PatchList::Kind::u32);
    put(local[i], lb + 12 + 4 * i, PatchList::Kind::u32);
  }
  return l;
}

void AmdPm4Queue::encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) {
  // A kernel that asks for the dispatch pointer (hand-written IR) gets an AQL-layout packet in side memory.
  const AmdProgram* ap = as_amd(program);
  const Launch l = build_launch(program, args, global, local, ap != nullptr && ap->info().dispatch_ptr);
  const KernelInfo& k = l.program->info();
  DispatchArgs a;
  a.code_addr = l.program->code_va();
  a.kernarg_addr = l.kargs_va;
  a.dispatch_packet_addr = l.packet_va;
  a.scratch_addr = l.scratch.base;  // 0 with TMPRING_SIZE 0 for a kernel without scratch
  a.tmpring_size = l.scratch.tmpring;
  a.groups = global;
  a.local = local;
  const size_t words_before = words_.size(), starts_before = starts_.size();
  start_group();
  try {
    enc().exec(k, a);
  } catch (...) {
    words_.resize(words_before);  // the queue stays as it was before this exec
    starts_.resize(starts_before);
    sink_.entries.clear();
    throw;
  }
  flush_patches();
}

void AmdQueue::write_dispatch_packet(const AmdProgram& program, std::byte* at, uint64_t kargs_va, const Dims& global,
                                     const Dims& local, bool grid_at_submit) {
  // Only for kernels that read the dispatch pointer (hand-written IR; HCQ C kernels read the launch block). The
  // packet, written field by field from the AQL facts; symbolic dims become field patches.
  auto* pkt = reinterpret_cast<uint32_t*>(at);
  // The packet's fields, looked up by name once (this runs on every launch of an AQL queue).
  struct Fields {
    const Field *type, *barrier, *acquire_scope, *release_scope, *dimensions, *wg[3], *grid[3], *group_segment,
        *private_segment, *kernel_object, *kernarg;
  };
  static const Fields fl = [] {
    const Layout& l = aql::kKernelDispatch;
    auto f = [&](const char* name) { return l.find(name); };
    return Fields{f("type"),
                  f("barrier"),
                  f("acquire_fence_scope"),
                  f("release_fence_scope"),
                  f("dimensions"),
                  {f("workgroup_size_x"), f("workgroup_size_y"), f("workgroup_size_z")},
                  {f("grid_size_x"), f("grid_size_y"), f("grid_size_z")},
                  f("group_segment_size"),
                  f("private_segment_size"),
                  f("kernel_object"),
                  f("kernarg_address")};
  }();
  auto set = [&](const Field& f, uint64_t v) {
    if (f.is64()) {
      pkt[f.dword] = static_cast<uint32_t>(v);
      pkt[f.dword + 1] = static_cast<uint32_t>(v >> 32);
    } else {
      pkt[f.dword] |= f.place(v);
    }
  };
  // value << lo_extra into field f: a patch writes (var + add) >> shift into [lo, lo + nbits) of its word.
  auto set_sym = [&](const Field& f, const Sym& v, uint8_t lo_extra) {
    if (v.is_const()) return set(f, v.add << lo_extra);
    patches_.add(v, {PatchList::kAbsolute, reinterpret_cast<uint64_t>(pkt + f.dword), PatchList::Kind::field, 0,
                     static_cast<uint8_t>(f.lo + lo_extra), static_cast<uint8_t>(f.width - lo_extra)});
  };
  set(*fl.type, aql::KERNEL_DISPATCH);
  set(*fl.barrier, 1);
  set(*fl.acquire_scope, aql::SCOPE_SYSTEM);
  set(*fl.release_scope, aql::SCOPE_SYSTEM);
  set(*fl.dimensions, 3);
  // grid (work-items) = groups * local. Both constant: the product. One symbolic: exact only when the other is a
  // power of two, which becomes a left shift (the field starts that many bits higher). Anything else is refused,
  // before any patch is recorded.
  auto what = [&] { return cat(device().name(), ": exec of ", program.name(), ", which reads the dispatch packet"); };
  for (int i = 0; i < 3 && !grid_at_submit; ++i) {
    const Sym& g = global[i];
    const Sym& w = local[i];
    if (g.is_const() && w.is_const()) {
      if (g.add * w.add > 0xffffffffull)
        throw InvalidArgument(cat(what(), ": grid dim ", i, " of ", g.add * w.add, " work-items does not fit 32 bits"));
    } else if (!g.is_const() && !w.is_const()) {
      throw InvalidArgument(cat(what(), ": global and local dim ", i,
                                " are both symbolic; the packet's grid size "
                                "(their product) cannot be patched"));
    } else {
      const uint64_t c = g.is_const() ? g.add : w.add;
      if (c == 0 || !std::has_single_bit(c) || c > (1u << 16))
        throw InvalidArgument(cat(what(), ": dim ", i, " has a symbolic ", g.is_const() ? "local" : "global",
                                  " size times a constant ", c,
                                  ", which is not a power of two: the packet's grid "
                                  "size cannot be patched (use a power-of-two constant or make both constant)"));
    }
  }
  for (int i = 0; i < 3; ++i) {
    const Sym& g = global[i];
    const Sym& w = local[i];
    set_sym(*fl.wg[i], w, 0);
    if (grid_at_submit) continue;
    if (g.is_const() && w.is_const()) set(*fl.grid[i], g.add * w.add);
    else if (g.is_const()) set_sym(*fl.grid[i], w, static_cast<uint8_t>(std::countr_zero(g.add)));
    else set_sym(*fl.grid[i], g, static_cast<uint8_t>(std::countr_zero(w.add)));
  }
  set(*fl.group_segment, program.info().group_segment_size);
  set(*fl.private_segment, program.info().private_segment_size);
  set(*fl.kernel_object, program.descriptor_va());
  set(*fl.kernarg, kargs_va);
}

void AmdPm4Queue::encode_copy(Sym, Sym, uint64_t size) {
  throw InvalidArgument(cat(device().name(), ": copy of ", size,
                            " bytes on the PM4 compute queue: AMD copies run "
                            "on the SDMA copy queue (copy_queue())"));
}

void AmdPm4Queue::encode_memory_barrier() {
  start_group();
  enc().memory_barrier();
  flush_patches();
}

void AmdPm4Queue::encode_write(Sym addr, Sym value, Width width) {
  start_group();
  enc().write(addr, value, width == Width::b64);
  flush_patches();
}

void AmdPm4Queue::encode_poll_bit(Sym addr, uint32_t mask, bool set) {
  start_group();
  enc().poll_bits(addr, mask, set ? mask : 0u);
  flush_patches();
}

std::byte* AmdPm4Queue::bind_words(std::span<const uint32_t> words) {
  const uint32_t max = pm4::kIndirectBuffer.find("ib_size")->mask();
  if (words.empty() || words.size() > max)
    throw InvalidArgument(
        cat(device().name(), ": bind of a PM4 queue of ", words.size(), " dwords: an INDIRECT_BUFFER holds 1..", max));
  return bind_to_side(words);
}

void AmdPm4Queue::submit_words(uint64_t completion_addr, uint64_t seq) {
  tail_.clear();
  Pm4Encoder t(target(), tail_);
  if (bound()) t.indirect_buffer(bound_.va, static_cast<uint32_t>(words_.size()));
  if (completion_addr != 0) t.write(completion_addr, seq, true);
  if (bound()) last_end_ = ring_.submit({}, {}, tail_);
  else submit_groups(words_, tail_);
  // Captured: the commands as the GPU reads them (bound: the patched copy its INDIRECT_BUFFER points at), then
  // the ring's tail.
  capture::on_submit(*this, "pm4", last_end_,
                     bound() ? std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(bound_.host), words_.size())
                             : std::span<const uint32_t>(words_),
                     tail_);
}

}  // namespace hcq::amd
