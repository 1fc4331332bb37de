#include "nv/rm/nv_queue.hpp"

#include <algorithm>
#include <cstring>
#include <thread>
#include <typeinfo>

#include "hcq/backend/capture.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "nv/decode.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/facts/methods.hpp"
#include "nv/facts/qmd.hpp"
#include "nv/rm/nv_program.hpp"

namespace hcq::nv {
namespace {

using Clock = std::chrono::steady_clock;

// Waits with a short spin, then sleeps that double up to 200 us: GPGet moves within microseconds on a busy GPU.
struct Backoff {
  std::chrono::microseconds sleep{1};
  void pause() {
    if (sleep.count() < 4) std::this_thread::yield();
    else std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(200));
  }
};

// The QMD of the last exec on this thread after its launch fields, and what it was made from. An eager stream
// launches one kernel with the same dims again and again, and those QMDs differ only in constant bank 0's address
// (each launch has its own side memory): the next such launch copies these words and rewrites that address. Only
// for constant dims. Keyed on the program's serial number, which no later program reuses (its address may be).
struct LaunchMemo {
  static constexpr size_t kMaxWords = 128;
  uint64_t program = 0;  // NvProgram::serial(); 0: nothing remembered
  const qmd::QmdLayout* layout = nullptr;
  std::array<uint64_t, 6> dims{};
  std::array<uint32_t, kMaxWords> launched{};

  static bool memoizable(std::span<const uint32_t> q, const Dims& grid, const Dims& block) {
    for (size_t i = 0; i < 3; ++i)
      if (!grid[i].is_const() || !block[i].is_const()) return false;
    return q.size() <= kMaxWords;
  }
  // Only a memoizable launch was remembered, so equal constant dims are all that is left to compare.
  bool matches(const NvProgram& p, const qmd::QmdLayout& l, const Dims& g, const Dims& b) const {
    if (program != p.serial() || layout != &l) return false;
    // Without a branch per dim: a constant's var is negative, so the AND of all six is negative only when every
    // dim is constant.
    const int32_t vars = g[0].var & g[1].var & g[2].var & b[0].var & b[1].var & b[2].var;
    const uint64_t differ = (g[0].add ^ dims[0]) | (g[1].add ^ dims[1]) | (g[2].add ^ dims[2]) | (b[0].add ^ dims[3]) |
                            (b[1].add ^ dims[4]) | (b[2].add ^ dims[5]);
    return vars < 0 && differ == 0;
  }
  void remember(const NvProgram& p, const qmd::QmdLayout& l, const Dims& g, const Dims& b,
                std::span<const uint32_t> q) {
    program = p.serial();
    layout = &l;
    dims = {g[0].add, g[1].add, g[2].add, b[0].add, b[1].add, b[2].add};
    std::memcpy(launched.data(), q.data(), l.size_bytes());
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Channel setup

std::vector<uint32_t> channel_init_words(const NvArchInfo& arch, NvEngine engine) {
  std::vector<uint32_t> w;
  PushbufferEncoder e(arch, w);
  if (engine == NvEngine::compute) {
    e.set_object(pb::kComputeSubchannel, arch.classes.compute);
    e.compute_setup(kLocalWindow, kSharedWindow);
  } else {
    e.set_object(pb::kCopySubchannel, arch.classes.copy);
  }
  return w;
}

// ---------------------------------------------------------------------------------------------------------------
// NvRing

NvRing::NvRing(NvGpu& gpu, const NvChannelView& channel, uint64_t pushbuffer_bytes, std::string device_name)
    : gpu_(gpu),
      ch_(channel),
      arch_(*gpu.facts().arch),
      plan_(PushbufferEncoder::plan_of(arch_)),
      qmd_(arch_),
      device_name_(std::move(device_name)) {
  if (pushbuffer_bytes == 0 || pushbuffer_bytes % 4 != 0)
    throw InvalidArgument(
        cat(device_name_, ": a pushbuffer of ", pushbuffer_bytes, " bytes (a positive multiple of 4)"));
  NvAllocOptions o;
  o.where = NvAllocOptions::Where::host;  // the CPU writes every submission; the GPU reads it once
  pushbuffer_ = gpu_.alloc(pushbuffer_bytes, o);
  pb_bytes_ = pushbuffer_bytes;
  pb_host_ = static_cast<std::byte*>(pushbuffer_->host());
  pb_va_ = pushbuffer_->va();
  pb_start_.assign(ch_.entries, 0);
}

uint32_t NvRing::read_gp_get() const {
  return __atomic_load_n(const_cast<uint32_t*>(ch_.gp_get()), __ATOMIC_ACQUIRE) % ch_.entries;
}

uint64_t NvRing::consumed_locked() const {
  // GPGet is an index into the ring; what lies between it and our put index is still pending (less than a whole
  // ring, since one slot always stays empty).
  const uint64_t put_index = published_ % ch_.entries;
  const uint64_t pending = (put_index + ch_.entries - read_gp_get()) % ch_.entries;
  return published_ - pending;
}

uint64_t NvRing::consumed() const {
  std::lock_guard lock(mu_);
  return consumed_locked();
}

void NvRing::publish() {
  if (published_ == gp_put_) return;
  // The entries and their pushbuffer bytes are visible before GPPut; GPPut before the doorbell.
  __atomic_store_n(const_cast<uint32_t*>(ch_.gp_put()), static_cast<uint32_t>(gp_put_ % ch_.entries), __ATOMIC_RELEASE);
  published_ = gp_put_;
  gpu_.os().write_doorbell32(ch_.doorbell, ch_.token);
}

template <typename Ready>
void NvRing::wait_for(Ready ready, const char* what, uint64_t need) {
  if (ready()) [[likely]]
    return;
  publish();  // what is already written must reach the GPU, or it never frees room
  const auto limit = knobs::wait_timeout();
  uint32_t seen = read_gp_get();
  auto moved_at = Clock::now();
  Backoff backoff;
  while (!ready()) {
    if (check_) check_();
    if (faulted())  // no device check installed: still never wait out the timeout on a stopped channel
      throw DeviceFault(cat(device_name_, ": ", engine_name(), " channel ", hex(ch_.channel), " faulted (RM error ",
                            error_notification().info32, ") while waiting for room for ", need, " ", what));
    const uint32_t get = read_gp_get();
    const auto now = Clock::now();
    if (get != seen) {
      seen = get;
      moved_at = now;
      backoff = Backoff{};
    } else if (now - moved_at >= limit) {
      throw TimeoutError(cat(device_name_, ": ", engine_name(), " channel ", hex(ch_.channel), ": no room for ", need,
                             " ", what, " after ", limit.count(), " ms: the GPU's GPGet stays at ", get, ", GPPut ",
                             gp_put_ % ch_.entries, " (ring of ", ch_.entries, " entries, pushbuffer of ", pb_bytes_,
                             " bytes)"));
    }
    backoff.pause();
  }
}

void NvRing::push_entry(uint64_t entry, uint64_t pb_start) {
  // At most entries - 1 pending, so a full ring never looks empty. Entries not yet published count as pending.
  wait_for([&] { return gp_put_ - consumed_locked() < ch_.entries - 1; }, "GPFIFO entries", 1);
  const uint64_t slot = gp_put_ % ch_.entries;
  __atomic_store_n(&ch_.ring[slot], entry, __ATOMIC_RELAXED);
  pb_start_[slot] = pb_start;
  ++gp_put_;
}

uint64_t NvRing::reserve_pushbuffer(uint64_t bytes, uint64_t& entry_pb_start) {
  if (bytes > pb_bytes_)
    throw InvalidArgument(cat(device_name_, ": a submission of ", bytes / 4, " dwords does not fit the ", engine_name(),
                              " channel's pushbuffer of ", pb_bytes_ / 4, " dwords; bind() the queue instead"));
  entry_pb_start = pb_put_;
  const uint64_t off = pb_put_ % pb_bytes_;
  const uint64_t skip = off + bytes > pb_bytes_ ? pb_bytes_ - off : 0;  // segments never straddle the end
  const uint64_t end = pb_put_ + skip + bytes;
  // The oldest pushbuffer byte the GPU may still read: where the first unconsumed entry's segment starts.
  wait_for(
      [&] {
        const uint64_t done = consumed_locked();
        const uint64_t oldest = done == gp_put_ ? pb_put_ : pb_start_[done % ch_.entries];
        return end - oldest <= pb_bytes_;
      },
      "pushbuffer bytes", bytes);
  pb_put_ = end;
  return end - bytes;
}

uint64_t NvRing::submit(std::span<const uint32_t> words, std::span<const uint32_t> tail, const Segment* bound) {
  std::lock_guard lock(mu_);
  try {
    if (bound != nullptr) push_entry(gpfifo_entry(bound->va, bound->dwords), pb_put_);
    const uint64_t n = words.size() + tail.size();
    if (n != 0) {
      uint64_t entry_start = 0;
      const uint64_t pos = reserve_pushbuffer(n * 4, entry_start);
      std::byte* dst = pb_host_ + pos % pb_bytes_;
      if (!words.empty()) std::memcpy(dst, words.data(), words.size_bytes());
      if (!tail.empty()) std::memcpy(dst + words.size_bytes(), tail.data(), tail.size_bytes());
      push_entry(gpfifo_entry(pb_va_ + pos % pb_bytes_, static_cast<uint32_t>(n)), entry_start);
    }
  } catch (...) {
    // Entries already written stay (the GPU may be reading them): the rings stay consistent.
    publish();
    throw;
  }
  publish();
  return gp_put_;
}

bool NvRing::wait_consumed(uint64_t end, std::chrono::milliseconds timeout) const {
  const auto until = Clock::now() + timeout;
  Backoff backoff;
  while (consumed() < end) {
    if (Clock::now() >= until || faulted()) return false;
    backoff.pause();
  }
  return true;
}

std::string NvRing::describe() const {
  // No lock: a submitter waiting for room must not block a hang report; the counters are read as they are.
  const uint32_t get = read_gp_get();
  const uint32_t put = __atomic_load_n(const_cast<uint32_t*>(ch_.gp_put()), __ATOMIC_ACQUIRE) % ch_.entries;
  std::string s = cat(engine_name(), " channel ", hex(ch_.channel), " (class ", hex(ch_.engine_class), "): GPGet ", get,
                      " GPPut ", put, " of ", ch_.entries, " entries", get == put ? ", idle" : ", busy");
  if (get != put) s += cat("; entry at GPGet: ", describe_entry(__atomic_load_n(&ch_.ring[get], __ATOMIC_RELAXED)));
  if (const uint64_t addr = last_signal_.load(std::memory_order_acquire); addr != 0) {
    const uint64_t now = __atomic_load_n(reinterpret_cast<const uint64_t*>(addr), __ATOMIC_ACQUIRE);
    s += cat("; last completion signal ", hex(addr), " = ", now, " (awaits ", last_value_.load(), ")");
  }
  return s;
}

void NvRing::pending(std::vector<capture::RingDump>& out) const {
  const uint32_t get = read_gp_get();
  const uint32_t put = __atomic_load_n(const_cast<uint32_t*>(ch_.gp_put()), __ATOMIC_ACQUIRE) % ch_.entries;
  const uint32_t n = (put + ch_.entries - get) % ch_.entries;
  capture::RingDump ring;
  ring.queue = cat(engine_name(), " channel ", hex(ch_.channel));
  ring.format = "nv-gpfifo";
  ring.read = get;
  ring.write = put;
  std::vector<uint64_t> entries(n);
  for (uint32_t i = 0; i < n; ++i) {
    entries[i] = __atomic_load_n(&ch_.ring[(get + i) % ch_.entries], __ATOMIC_RELAXED);
    ring.words.push_back(static_cast<uint32_t>(entries[i]));
    ring.words.push_back(static_cast<uint32_t>(entries[i] >> 32));
  }
  const std::string queue = ring.queue;
  out.push_back(std::move(ring));
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t dwords = static_cast<uint32_t>(gpfifo::kLength.get(entries[i]));
    if (dwords == 0) continue;  // a control entry points at nothing
    capture::RingDump seg;
    seg.queue = queue;
    seg.format = "nv-push";
    seg.read = (get + i) % ch_.entries;  // the entry this segment belongs to
    seg.write = seg.read + 1;
    seg.va = (gpfifo::kGet.get(entries[i]) << gpfifo::kGet.lo) | (gpfifo::kGetHi.get(entries[i]) << 32);
    // Only our own pushbuffer is read back: an entry that went wrong may point anywhere.
    if (seg.va >= pb_va_ && seg.va - pb_va_ < pb_bytes_ && uint64_t{dwords} * 4 <= pb_bytes_ - (seg.va - pb_va_)) {
      const auto* words = reinterpret_cast<const uint32_t*>(pb_host_ + (seg.va - pb_va_));
      const uint32_t keep = std::min<uint32_t>(dwords, capture::kMaxWords);
      seg.words.resize(keep);
      for (uint32_t k = 0; k < keep; ++k) seg.words[k] = __atomic_load_n(words + k, __ATOMIC_RELAXED);
      seg.dropped = dwords - keep;
    } else {
      seg.dropped = dwords;
    }
    out.push_back(std::move(seg));
  }
}

std::string NvRing::describe_entry(uint64_t entry) const {
  const uint32_t dwords = static_cast<uint32_t>(gpfifo::kLength.get(entry));
  if (dwords == 0) return cat(hex(entry), " (control entry)");
  const uint64_t va = (gpfifo::kGet.get(entry) << gpfifo::kGet.lo) | (gpfifo::kGetHi.get(entry) << 32);
  std::string s = cat(hex(entry), " = ", dwords, " dwords at ", hex(va));
  // Only a segment in our own pushbuffer is read back: an entry that went wrong may point anywhere.
  if (va < pb_va_ || va - pb_va_ >= pb_bytes_ || uint64_t{dwords} * 4 > pb_bytes_ - (va - pb_va_))
    return s + " (outside the pushbuffer: a bound queue's words)";
  const auto* words = reinterpret_cast<const uint32_t*>(pb_host_ + (va - pb_va_));
  const std::vector<DecodedEntry> methods = decode_pushbuffer(std::span<const uint32_t>(words, dwords), arch_);
  // The first few methods, and every one that did not decode (a malformed method is what faulted the channel).
  constexpr size_t kShown = 8;
  size_t shown = 0, skipped = 0;
  s += ":";
  for (size_t i = 0; i < methods.size(); ++i) {
    const DecodedEntry& e = methods[i];
    if (i >= kShown && e.ok()) {
      ++skipped;
      continue;
    }
    s += cat(shown++ == 0 ? " " : ", ", e.op, "=", hex(e.data));
    if (!e.ok()) s += cat(" [", e.error, "]");
  }
  if (skipped) s += cat(" (+", skipped, " more)");
  return s;
}

bool NvRing::faulted() const {
  return ch_.error_notifier != nullptr && ch_.error_notifier->status == abi::kNotificationStatusError;
}

abi::ErrorNotification NvRing::error_notification() const {
  abi::ErrorNotification n{};
  if (ch_.error_notifier == nullptr) return n;
  n.status = ch_.error_notifier->status;  // the status first: RM writes it last
  std::atomic_thread_fence(std::memory_order_acquire);
  n.nanoseconds[0] = ch_.error_notifier->nanoseconds[0];
  n.nanoseconds[1] = ch_.error_notifier->nanoseconds[1];
  n.info32 = ch_.error_notifier->info32;
  n.info16 = ch_.error_notifier->info16;
  return n;
}

void NvRing::note_completion(uint64_t signal_addr, uint64_t value) {
  last_value_.store(value, std::memory_order_relaxed);
  last_signal_.store(signal_addr, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------------------------
// NvQueue

NvQueue::NvQueue(Device& dev, QueueKind kind, NvRing& ring)
    : HWQueue(dev, kind), ring_(ring), enc_(ring.arch(), ring.encoder_plan(), words_, &sink_) {}

NvQueue::~NvQueue() {
  // wait_timeout_or_default: a destructor must not throw, and a bad HCQ_WAIT_TIMEOUT_MS is reported by the waits.
  release_side([&] { return last_end_ == 0 || ring_.wait_consumed(last_end_, knobs::wait_timeout_or_default()); });
}

void NvQueue::record_patches() {
  for (const RecordingSink::Entry& e : sink_.entries) patch_word(e.word, e.value, e.kind, e.shift, e.lo_bit, e.nbits);
  sink_.entries.clear();
}

void NvQueue::encode_wait(Sym signal_addr, Sym value) {
  enc_.wait(signal_addr, value);
  flush_patches();
}

void NvQueue::encode_timestamp(Sym signal_addr) {
  enc_.timestamp(signal_addr);
  flush_patches();
}

void NvQueue::encode_write(Sym addr, Sym value, Width width) {
  enc_.write(addr, value, width == Width::b64);
  flush_patches();
}

void NvQueue::encode_poll_bit(Sym addr, uint32_t mask, bool set) {
  // A host semaphore acquire tests one bit exactly (ACQ_AND: any bit of the payload set; ACQ_NOR: the bit clear), so
  // a wider mask becomes one acquire per bit, in order. That equals "every bit at once" when the bits only move
  // toward the awaited state (flags being raised or cleared), which is what poll_bit is for.
  for (uint32_t bits = mask; bits != 0; bits &= bits - 1) enc_.poll_bit(addr, bits & (~bits + 1), set);
  flush_patches();
}

std::byte* NvQueue::bind_words(std::span<const uint32_t> words) {
  if (words.empty() || words.size() > gpfifo::kMaxSegmentDwords)
    throw InvalidArgument(cat(device().name(), ": bind of an NV ", to_string(kind()), " queue of ", words.size(),
                              " dwords: a GPFIFO entry holds 1..", gpfifo::kMaxSegmentDwords));
  const SideBlock block = device().alloc_side(words.size_bytes(), 256);
  side_.push_back(block);
  std::memcpy(block.host, words.data(), words.size_bytes());
  bound_ = block;
  return block.host;
}

void NvQueue::submit_words(uint64_t completion_addr, uint64_t seq) {
  // The completion write goes in the pushbuffer, never in the bound copy: a host release after everything before.
  tail_.clear();
  if (completion_addr != 0) {
    PushbufferEncoder(arch(), tail_).write(Sym(completion_addr), Sym(seq), true);
    ring_.note_completion(completion_addr, seq);
  }
  if (bound()) {
    const NvRing::Segment seg{bound_.va, static_cast<uint32_t>(words_.size())};
    last_end_ = ring_.submit({}, tail_, &seg);
  } else {
    last_end_ = ring_.submit(words_, tail_);
  }
  // Captured: the methods as the GPU reads them (bound: the patched copy), then the completion tail.
  capture::on_submit(*this, "nv-push", last_end_,
                     bound() ? std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(bound_.host), words_.size())
                             : std::span<const uint32_t>(words_),
                     tail_);
}

// ---------------------------------------------------------------------------------------------------------------
// Compute queue

NvComputeQueue::NvComputeQueue(Device& dev, NvRing& ring)
    : NvQueue(dev, QueueKind::compute, ring), qmd_(ring.qmd_builder()) {}

void NvComputeQueue::QmdSink::on_symbol(size_t word, const Sym& value, PatchList::Kind kind, uint8_t shift,
                                        uint8_t lo_bit, uint8_t nbits) {
  patches_.add(value, {PatchList::kAbsolute, reinterpret_cast<uint64_t>(qmd_ + word), kind, shift, lo_bit, nbits});
}

SideBlock NvComputeQueue::carve_side(uint64_t size) {
  // QMDs and their constant banks come from an arena of side memory owned by the queue: one alloc_side serves
  // several execs. Space is taken (arena_used_) by the caller once the exec is encoded.
  const uint64_t take = (size + qmd::kAlignment - 1) / qmd::kAlignment * qmd::kAlignment;
  if (arena_.host == nullptr || arena_used_ + take > arena_.size) {
    arena_ =
        device().alloc_side(std::max(take, arena_.host == nullptr ? kFirstArenaBytes : kArenaBytes), qmd::kAlignment);
    side_.push_back(arena_);
    arena_used_ = 0;
  }
  return SideBlock{arena_.host + arena_used_, arena_.va + arena_used_, take};
}

void NvComputeQueue::encode_signal(Sym signal_addr, Sym value) {
  // Right after an exec: the QMD releases the signal when its grid completes (value, then the clock at +8).
  if (std::span<uint32_t> q = last_qmd(); !q.empty()) {
    QmdSink sink(patches_, q.data());
    for (uint32_t slot = 0; slot < qmd::kReleases; ++slot)  // release() refuses a slot already taken
      if (qmd_.release(q, slot, signal_addr, value, &sink)) return;
  }
  // Anywhere else the host releases it; kernels before it may have written through the L2, which the release alone
  // does not publish.
  enc_.sys_membar();
  enc_.signal(signal_addr, value, /*timestamp=*/true);
  flush_patches();
}

void NvComputeQueue::encode_exec(const Program& program, const LaunchArgs& args, const Dims& global,
                                 const Dims& local) {
  // NvProgram is final, so an exact type compare is enough, and cheaper than a dynamic_cast on every exec.
  const auto* p = typeid(program) == typeid(NvProgram) ? static_cast<const NvProgram*>(&program) : nullptr;
  if (p == nullptr)
    throw InvalidArgument(cat(device().name(), ": exec of ", program.name(), ", which is not an NV program"));
  const CubinKernel& k = p->kernel();
  // Registers x threads and __launch_bounds__ are in program.limits() (checked by HWQueue::exec, and at submit for
  // symbolic dims); a required block size (REQNTID) is checked here for a constant block.
  if (k.reqntid && local[0].is_const() && local[1].is_const() && local[2].is_const()) {
    try {
      Cubin::check_launch(k,
                          {static_cast<uint32_t>(local[0].add), static_cast<uint32_t>(local[1].add),
                           static_cast<uint32_t>(local[2].add)},
                          0, p->arch_limits());
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(cat(device().name(), ": exec of ", program.name(), ": ", e.what()));
    }
  }

  // Side memory: the QMD (256-byte aligned), then constant bank 0 (prefix + parameters).
  const uint32_t qmd_bytes = qmd_.layout().size_bytes();
  const uint64_t cbank0_off = (qmd_bytes + qmd::kAlignment - 1) / qmd::kAlignment * qmd::kAlignment;
  const std::span<const uint8_t> cb = p->cbank0_template();
  const SideBlock side = carve_side(cbank0_off + cb.size());
  auto* qmd = reinterpret_cast<uint32_t*>(side.host);
  std::byte* cbank0 = side.host + cbank0_off;
  std::memcpy(cbank0, cb.data(), cb.size());
  const std::span<uint32_t> q(qmd, qmd_.layout().size_words);
  const Sym cbank0_addr(side.va + cbank0_off);

  // The launch fields first: they may refuse the dims, and then nothing of this exec must have been recorded.
  RecordingSink launch_syms;
  thread_local LaunchMemo memo;
  if (memo.matches(*p, qmd_.layout(), global, local)) {
    std::memcpy(qmd, memo.launched.data(), qmd_bytes);
    qmd_.set_bank0_address(q, cbank0_addr);
  } else {
    std::memcpy(qmd, p->qmd_template().data(), qmd_bytes);
    qmd_.launch(q, cbank0_addr, static_cast<uint32_t>(cb.size()), global, local, &launch_syms);
    if (LaunchMemo::memoizable(q, global, local)) memo.remember(*p, qmd_.layout(), global, local, q);
  }
  arena_used_ += side.size;  // only now: a refused launch leaves its space to the next exec
  QmdSink sink(patches_, qmd);
  for (const RecordingSink::Entry& e : launch_syms.entries)
    sink.on_symbol(e.word, e.value, e.kind, e.shift, e.lo_bit, e.nbits);
  // Parameters: buffer addresses (8 bytes each), then 32-bit values. A constant is written now, a variable is
  // patched at submit.
  std::byte* params = cbank0 + p->param_offset();
  for (size_t i = 0; i < args.bufs.size(); ++i)
    patches_.add_absolute(args.bufs[i], params + 8 * i, PatchList::Kind::u64);
  for (size_t i = 0; i < args.vals.size(); ++i)
    patches_.add_absolute(args.vals[i], params + 8 * args.bufs.size() + 4 * i, PatchList::Kind::u32);

  // Back to back with the previous exec: the previous QMD schedules this one when it completes.
  if (std::span<uint32_t> prev = last_qmd(); !prev.empty()) {
    QmdSink prev_sink(patches_, prev.data());
    qmd_.chain(prev, Sym(side.va), &prev_sink);
  } else {
    enc_.launch(Sym(side.va));
    flush_patches();
  }
  last_qmd_ = qmd;
  words_after_exec_ = words_.size();
}

void NvComputeQueue::encode_copy(Sym, Sym, uint64_t size) {
  throw InvalidArgument(cat(device().name(), ": copy of ", size,
                            " bytes on the NV compute queue: copies run on the "
                            "copy queue (copy_queue())"));
}

void NvComputeQueue::encode_memory_barrier() {
  enc_.memory_barrier();
  flush_patches();
}

// ---------------------------------------------------------------------------------------------------------------
// Copy queue

void NvCopyQueue::encode_signal(Sym signal_addr, Sym value) {
  // The copy engine's own semaphore: released after its copies are flushed, value then clock at +8; then the
  // non-stall interrupt that wakes sleeping waiters.
  enc_.copy_signal(signal_addr, value);
  enc_.non_stall_interrupt();
  flush_patches();
}

void NvCopyQueue::encode_exec(const Program& program, const LaunchArgs&, const Dims&, const Dims&) {
  throw InvalidArgument(cat(device().name(), ": exec of ", program.name(), " on the NV copy queue"));
}

void NvCopyQueue::encode_copy(Sym dst, Sym src, uint64_t size) {
  enc_.copy(dst, src, size);  // one LAUNCH_DMA per kMaxCopyBytes
  flush_patches();
}

void NvCopyQueue::encode_memory_barrier() {
  throw InvalidArgument(cat(device().name(),
                            ": memory_barrier on the NV copy queue: the shader cache invalidates "
                            "are compute-class methods; put the barrier on the compute queue"));
}

}  // namespace hcq::nv
