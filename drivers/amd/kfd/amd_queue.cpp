#include "amd/kfd/amd_queue.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <thread>
#include <typeinfo>

#include "amd/aql_facts.hpp"
#include "amd/decode.hpp"
#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/amd_program.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/backend/heap_cache.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

namespace hcq::amd {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t load_ptr(volatile uint64_t* p) {
  return __atomic_load_n(const_cast<uint64_t*>(p), __ATOMIC_ACQUIRE);
}

// AmdProgram is final, so an exact type compare is enough, and cheaper than a dynamic_cast on every exec.
const AmdProgram* as_amd(const Program& program) {
  return typeid(program) == typeid(AmdProgram) ? static_cast<const AmdProgram*>(&program) : nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// AmdRing

AmdRing::AmdRing(KfdGpu& gpu, const Target& target, KfdQueue::Type type, uint32_t ring_bytes,
                 std::string device_name)
    : gpu_(gpu), target_(target), device_name_(std::move(device_name)) {
  queue_ = gpu_.create_queue(type, ring_bytes);
  scratch_ = std::make_unique<AmdScratch>(gpu_, target_, queue_->amd_queue(),
                                          cat(device_name_, ": ", kind_name(), " queue ", queue_->queue_id()));
  ring_words_ = ring_bytes / 4;
  ring_ = static_cast<uint32_t*>(queue_->ring());
  if (aql()) {
    // Every slot starts INVALID: the packet processor stops at the first slot whose header is not published.
    for (uint32_t i = 0; i < ring_words_; i += aql::kPacketWords)
      ring_[i] = aql::header(aql::INVALID, false, aql::SCOPE_NONE, aql::SCOPE_NONE);
  }
}

const char* AmdRing::units_name() const {
  switch (queue_->type()) {
    case KfdQueue::Type::compute_pm4: return "dwords";
    case KfdQueue::Type::sdma: return "bytes";
    case KfdQueue::Type::compute_aql: return "packets";
  }
  return "?";
}

uint64_t AmdRing::to_units(uint64_t words) const {
  switch (queue_->type()) {
    case KfdQueue::Type::sdma: return words * 4;
    case KfdQueue::Type::compute_aql: return words / aql::kPacketWords;
    case KfdQueue::Type::compute_pm4: break;
  }
  return words;
}

uint64_t AmdRing::to_words(uint64_t units) const {
  switch (queue_->type()) {
    case KfdQueue::Type::sdma: return units / 4;
    case KfdQueue::Type::compute_aql: return units * aql::kPacketWords;
    case KfdQueue::Type::compute_pm4: break;
  }
  return units;
}

const char* AmdRing::kind_name() const {
  switch (queue_->type()) {
    case KfdQueue::Type::compute_pm4: return "PM4 compute";
    case KfdQueue::Type::sdma: return "SDMA";
    case KfdQueue::Type::compute_aql: return "AQL compute";
  }
  return "?";
}

uint64_t AmdRing::read_words() const { return to_words(load_ptr(queue_->read_ptr())); }

void AmdRing::publish(uint64_t pos_words) {
  if (pos_words == published_words_) return;
  queue_->submit(to_units(pos_words));
  published_words_ = pos_words;
}

bool AmdRing::drained() const {
  return load_ptr(queue_->read_ptr()) >= load_ptr(queue_->write_ptr());
}

std::string AmdRing::describe() const {
  // No lock: the pointers are read atomically, and a submitter waiting for room must not block a hang report.
  const uint64_t r = load_ptr(queue_->read_ptr()), w = load_ptr(queue_->write_ptr());
  std::string s = cat(kind_name(), " queue ", queue_->queue_id(), ": rptr ", r, " wptr ", w, " (", units_name(),
                      ", ring of ", queue_->ring_bytes(), " bytes)");
  if (r >= w) return s + ", idle";
  // The packet the GPU stopped at: up to 64 dwords from the read pointer (wrapping), decoded with the target's
  // tables. A garbled ring decodes as an error packet rather than failing the report.
  const uint64_t from = to_words(r);
  const uint64_t n = std::min<uint64_t>({to_words(w) - from, 64, ring_words_});
  std::vector<uint32_t> words(n);
  for (uint64_t i = 0; i < n; ++i)
    words[i] = __atomic_load_n(ring_ + (from + i) % ring_words_, __ATOMIC_RELAXED);
  std::vector<DecodedPacket> pkts;
  switch (queue_->type()) {
    case KfdQueue::Type::compute_pm4: pkts = decode_pm4(words, target_); break;
    case KfdQueue::Type::sdma: pkts = decode_sdma(words, target_); break;
    case KfdQueue::Type::compute_aql: pkts = decode_aql(words, target_); break;
  }
  if (pkts.empty()) return s;
  const DecodedPacket& p = pkts.front();
  s += cat(", at rptr: ", p.op);
  for (const DecodedField& f : p.fields)
    s += cat(" ", f.name, "=", f.text.empty() ? hex(f.value) : f.text);
  if (!p.ok()) s += cat(" [", p.error, "]");
  return s;
}

capture::RingDump AmdRing::pending() const {
  capture::RingDump d;
  d.queue = cat(kind_name(), " queue ", queue_->queue_id());
  switch (queue_->type()) {
    case KfdQueue::Type::compute_pm4: d.format = "pm4"; break;
    case KfdQueue::Type::sdma: d.format = "sdma"; break;
    case KfdQueue::Type::compute_aql: d.format = "aql"; break;
  }
  d.read = load_ptr(queue_->read_ptr());
  d.write = load_ptr(queue_->write_ptr());
  const uint64_t from = to_words(d.read);
  const uint64_t pending = d.write > d.read ? to_words(d.write) - from : 0;
  const uint64_t n = std::min<uint64_t>({pending, ring_words_, capture::kMaxWords});
  d.words.resize(n);
  for (uint64_t i = 0; i < n; ++i) d.words[i] = __atomic_load_n(ring_ + (from + i) % ring_words_, __ATOMIC_RELAXED);
  d.dropped = pending - n;
  return d;
}

void AmdRing::wait_room(uint64_t pos, uint64_t need) {
  // The read pointer lives on a line the GPU keeps writing: load it only when the room seen last is not enough
  // (an AQL submit asks once per 64-byte packet).
  if (pos + need - read_seen_words_ <= ring_words_) [[likely]]
    return;
  read_seen_words_ = read_words();
  if (pos + need - read_seen_words_ <= ring_words_) return;
  publish(pos);  // what is already written must reach the GPU, or it never frees room
  const auto limit = knobs::wait_timeout();
  uint64_t seen = read_words();
  auto moved_at = Clock::now();
  auto sleep = std::chrono::microseconds(1);
  for (;;) {
    const uint64_t r = read_words();
    if (pos + need - r <= ring_words_) {
      read_seen_words_ = r;
      return;
    }
    if (check_) check_();
    const auto now = Clock::now();
    if (r != seen) {
      seen = r;
      moved_at = now;
      sleep = std::chrono::microseconds(1);
    } else if (now - moved_at >= limit) {
      throw TimeoutError(cat(device_name_, ": ", kind_name(), " queue ", queue_->queue_id(), ": no room for ", need,
                             " dwords in the ring of ", queue_->ring_bytes(), " bytes after ", limit.count(),
                             " ms: the GPU's read pointer stays at rptr ", to_units(r), ", wptr ", to_units(pos),
                             " (", units_name(), "); ", describe()));
    }
    if (sleep.count() < 4)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(200));
  }
}

void AmdRing::fill(uint32_t n, uint64_t& pos) {
  // Only ever up to the ring end, so the filler itself never wraps.
  wait_room(pos, n);
  filler_.clear();
  const bool sdma = queue_->type() == KfdQueue::Type::sdma;
  const uint32_t max_packet = sdma ? target_.sdma->nop->find("count")->mask() + 1 : pm4::kNopCountHeaderOnly + 1;
  for (uint32_t left = n; left > 0;) {
    const uint32_t k = std::min(left, max_packet);
    if (sdma)
      SdmaEncoder(target_, filler_).nop(k);
    else
      Pm4Encoder(target_, filler_).nop(k);
    left -= k;
  }
  std::memcpy(ring_ + pos % ring_words_, filler_.data(), filler_.size() * 4);
  pos += n;
}

void AmdRing::put(std::span<const uint32_t> group, uint64_t& pos) {
  const uint64_t n = group.size();
  if (n == 0) return;
  if (n > ring_words_)
    throw InvalidArgument(cat(device_name_, ": ", kind_name(), " queue ", queue_->queue_id(), ": a packet group of ",
                              n, " dwords does not fit the ring of ", ring_words_, " dwords"));
  if (aql()) {
    // Packet by packet: the body first, then the header dword with release order, which publishes the packet.
    if (n % aql::kPacketWords)
      throw InvalidArgument(cat(device_name_, ": AQL queue ", queue_->queue_id(), ": ", n,
                                " dwords are not whole 64-byte packets"));
    for (uint64_t i = 0; i < n; i += aql::kPacketWords) {
      wait_room(pos, aql::kPacketWords);
      uint32_t* slot = ring_ + pos % ring_words_;  // slots never straddle the end: the ring is whole packets
      std::memcpy(slot + 1, group.data() + i + 1, (aql::kPacketWords - 1) * 4);
      __atomic_store_n(slot, group[i], __ATOMIC_RELEASE);
      pos += aql::kPacketWords;
    }
    return;
  }
  const uint64_t off = pos % ring_words_;
  if (off + n > ring_words_) fill(static_cast<uint32_t>(ring_words_ - off), pos);
  wait_room(pos, n);
  std::memcpy(ring_ + pos % ring_words_, group.data(), n * 4);
  pos += n;
}

uint64_t AmdRing::submit(std::span<const uint32_t> words, std::span<const uint32_t> starts,
                         std::span<const uint32_t> tail) {
  std::lock_guard lock(mu_);
  uint64_t pos = wptr_words_;
  try {
    if (starts.empty()) {
      put(words, pos);
    } else {
      for (size_t i = 0; i < starts.size(); ++i) {
        const size_t b = starts[i], e = i + 1 < starts.size() ? starts[i + 1] : words.size();
        put(words.subspan(b, e - b), pos);
      }
    }
    put(tail, pos);
  } catch (...) {
    // Part of the submission may already be published; what is written stays (the GPU may be reading it), so
    // the ring stays consistent: the next submission continues after it.
    wptr_words_ = pos;
    publish(pos);
    throw;
  }
  wptr_words_ = pos;
  publish(pos);
  return pos;
}

bool AmdRing::wait_consumed(uint64_t end_words, std::chrono::milliseconds timeout) const {
  const auto until = Clock::now() + timeout;
  auto sleep = std::chrono::microseconds(1);
  while (read_words() < end_words) {
    if (Clock::now() >= until) return false;
    if (check_) {
      try {
        check_();
      } catch (const Error&) {
        return false;
      }
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(500));
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// AmdQueue

AmdQueue::AmdQueue(Device& dev, QueueKind kind, AmdRing& ring)
    : HWQueue(dev, kind), ring_(ring), starts_(VectorCache<uint32_t>::take(16)) {}

AmdQueue::~AmdQueue() {
  if (!side_.empty()) release_side(last_end_ == 0 || ring_.wait_consumed(last_end_, knobs::wait_timeout()));
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

void AmdPm4Queue::encode_exec(const Program& program, const LaunchArgs& args, const Dims& global,
                              const Dims& local) {
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

void AmdQueue::write_dispatch_packet(const AmdProgram& program, std::byte* at, uint64_t kargs_va,
                                     const Dims& global, const Dims& local, bool grid_at_submit) {
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
      throw InvalidArgument(cat(what(), ": global and local dim ", i, " are both symbolic; the packet's grid size "
                                "(their product) cannot be patched"));
    } else {
      const uint64_t c = g.is_const() ? g.add : w.add;
      if (c == 0 || !std::has_single_bit(c) || c > (1u << 16))
        throw InvalidArgument(cat(what(), ": dim ", i, " has a symbolic ", g.is_const() ? "local" : "global",
                                  " size times a constant ", c, ", which is not a power of two: the packet's grid "
                                  "size cannot be patched (use a power-of-two constant or make both constant)"));
    }
  }
  for (int i = 0; i < 3; ++i) {
    const Sym& g = global[i];
    const Sym& w = local[i];
    set_sym(*fl.wg[i], w, 0);
    if (grid_at_submit) continue;
    if (g.is_const() && w.is_const())
      set(*fl.grid[i], g.add * w.add);
    else if (g.is_const())
      set_sym(*fl.grid[i], w, static_cast<uint8_t>(std::countr_zero(g.add)));
    else
      set_sym(*fl.grid[i], g, static_cast<uint8_t>(std::countr_zero(w.add)));
  }
  set(*fl.group_segment, program.info().group_segment_size);
  set(*fl.private_segment, program.info().private_segment_size);
  set(*fl.kernel_object, program.descriptor_va());
  set(*fl.kernarg, kargs_va);
}

void AmdPm4Queue::encode_copy(Sym, Sym, uint64_t size) {
  throw InvalidArgument(cat(device().name(), ": copy of ", size, " bytes on the PM4 compute queue: AMD copies run "
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
    throw InvalidArgument(cat(device().name(), ": bind of a PM4 queue of ", words.size(),
                              " dwords: an INDIRECT_BUFFER holds 1..", max));
  return bind_to_side(words);
}

void AmdPm4Queue::submit_words(uint64_t completion_addr, uint64_t seq) {
  tail_.clear();
  Pm4Encoder t(target(), tail_);
  if (bound()) t.indirect_buffer(bound_.va, static_cast<uint32_t>(words_.size()));
  if (completion_addr != 0) t.write(completion_addr, seq, true);
  if (bound())
    last_end_ = ring_.submit({}, {}, tail_);
  else
    submit_groups(words_, tail_);
  // Captured: the commands as the GPU reads them (bound: the patched copy its INDIRECT_BUFFER points at), then
  // the ring's tail.
  capture::on_submit(*this, "pm4", last_end_,
                     bound() ? std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(bound_.host), words_.size())
                             : std::span<const uint32_t>(words_),
                     tail_);
}

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
  throw InvalidArgument(cat(device().name(), ": memory_barrier on the SDMA copy queue: the HDP flush it needs is "
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
