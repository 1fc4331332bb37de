// The HWQueue builder: validation, command counting, patch bookkeeping and the submit path shared by backends.
#include "hcq/hw_queue.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string_view>

#include "hcq/backend/heap_cache.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/program.hpp"

namespace hcq {
namespace {

std::string queue_name(QueueKind kind, const Device& dev) { return cat(to_string(kind), " queue of ", dev.name()); }

// A 32-bit operand given as a 64-bit constant: fine if it fits, or is a sign-extended negative 32-bit value.
bool fits_32(uint64_t v) { return (v >> 32) == 0 || (v >> 31) == 0x1ffffffffULL; }

std::string exec_name(std::string_view program, QueueKind kind, const Device& dev) {
  return cat("exec of ", program, " on the ", queue_name(kind, dev));
}

// Launch dims against the program's limits. Without `vars` (at build time) only constant dims are checked; with
// them (at submit) every dim is evaluated. Messages are built only on failure: this runs on every submit.
void check_launch_dims(std::string_view program, QueueKind kind, const Device& dev, const LaunchLimits& lim,
                       const Dims& global, const Dims& local, std::optional<std::span<const uint64_t>> vars) {
  uint64_t threads = 1;
  bool threads_known = true;
  const char* when = vars ? " (from the submitted variables)" : "";
  for (int i = 0; i < 3; ++i) {
    if (global[i].is_const() || vars) {
      uint64_t g = global[i].eval(vars.value_or(std::span<const uint64_t>{}));
      if (g == 0 || g > lim.max_global[i])
        throw InvalidArgument(
            cat(exec_name(program, kind, dev), ": global dim ", i, " = ", g, " outside 1..", lim.max_global[i], when));
    }
    if (local[i].is_const() || vars) {
      uint64_t l = local[i].eval(vars.value_or(std::span<const uint64_t>{}));
      if (l == 0 || l > lim.max_local[i])
        throw InvalidArgument(
            cat(exec_name(program, kind, dev), ": local dim ", i, " = ", l, " outside 1..", lim.max_local[i], when));
      threads = std::min<uint64_t>(threads * l, uint64_t{1} << 32);  // l <= 2^32: saturate instead of overflowing
    } else {
      threads_known = false;
    }
  }
  if (threads_known && threads > lim.max_threads_per_group)
    throw InvalidArgument(cat(exec_name(program, kind, dev), ": ", threads, " threads per workgroup, the limit is ",
                              lim.max_threads_per_group, when));
}

// True when every dim is constant and within `lim`: the eager launch's case, decided without building messages
// (check_launch_dims says what is wrong otherwise). A local dim that passed is below 2^32, so saturating the
// product at 2^32 keeps it from overflowing.
bool constant_dims_fit(const LaunchLimits& lim, const Dims& global, const Dims& local) {
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (!global[i].is_const() || !local[i].is_const()) return false;
    if (global[i].add - 1 >= lim.max_global[i] || local[i].add - 1 >= lim.max_local[i]) return false;  // 0 wraps
    threads = std::min<uint64_t>(threads * local[i].add, uint64_t{1} << 32);
  }
  return threads <= lim.max_threads_per_group;
}

}  // namespace

const char* to_string(QueueKind k) {
  switch (k) {
    case QueueKind::compute: return "compute";
    case QueueKind::copy: return "copy";
  }
  return "unknown";
}

HWQueue::HWQueue(Device& dev, QueueKind kind)
    : words_(VectorCache<uint32_t>::take(kInitialWords)),
      side_(VectorCache<SideBlock>::take(4)),
      dev_(dev),
      kind_(kind) {
  static std::atomic<uint32_t> next_id{0};
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  words_region_ = patches_.add_region(reinterpret_cast<std::byte*>(words_.data()));
}

HWQueue::~HWQueue() {
  VectorCache<uint32_t>::give(words_);
  VectorCache<SideBlock>::give(side_);
  // A submission still in flight will write its completion value; the slot must not reach a new owner before
  // that, so the device keeps the signal until its timeline has passed. Destroying a queue never blocks.
  if (tracked_ && seq_ > 0 && completion_.get().valid() && completion_->value() < seq_)
    dev_.release_after_timeline(std::move(completion_));
}

void HWQueue::give_side_back(bool device_done_reading) {
  if (device_done_reading)
    for (const SideBlock& b : side_) dev_.free_side(b);
  side_.clear();
}

void HWQueue::throw_finalized() const {
  throw InvalidArgument(
      cat(queue_name(kind_, dev_), ": queue already finalized (bound or submitted); build a new one"));
}

namespace {

[[noreturn, gnu::noinline]] void throw_bad_address(uint64_t addr, uint64_t align, const char* what, QueueKind kind,
                                                   const Device& dev) {
  if (addr == 0) throw InvalidArgument(cat(what, " on the ", queue_name(kind, dev), ": null address"));
  throw InvalidArgument(
      cat(what, " on the ", queue_name(kind, dev), ": address ", hex(addr), " is not ", align, "-byte aligned"));
}

// A symbolic address is checked by the device when it runs. `align` is a power of two. Inline: every wait and
// signal checks its address; only the message is built out of line.
inline void check_address(Sym addr, uint64_t align, const char* what, QueueKind kind, const Device& dev) {
  if (!addr.is_const() || (addr.add != 0 && (addr.add & (align - 1)) == 0)) [[likely]]
    return;
  throw_bad_address(addr.add, align, what, kind, dev);
}

}  // namespace

HWQueue& HWQueue::wait(const Signal& s, Sym value) { return wait(Sym(s.addr()), value); }

HWQueue& HWQueue::wait(Sym signal_addr, Sym value) {
  check_open_for_build();
  check_address(signal_addr, 8, "wait", kind_, dev_);
  encode_wait(signal_addr, value);
  ++num_commands_;
  return *this;
}

HWQueue& HWQueue::signal(const Signal& s, Sym value) {
  signal(Sym(s.addr()), value);
  if (value.is_const() && s == dev_.timeline_signal()) timeline_signal_end_ = num_commands_;
  return *this;
}

HWQueue& HWQueue::signal(Sym signal_addr, Sym value) {
  check_open_for_build();
  check_address(signal_addr, 8, "signal", kind_, dev_);
  encode_signal(signal_addr, value);
  ++num_commands_;
  return *this;
}

HWQueue& HWQueue::timestamp(const Signal& s) {
  check_open_for_build();
  encode_timestamp(Sym(s.addr()));
  ++num_commands_;
  return *this;
}

// What exec() refuses, with the reason; out of line, so that an accepted exec (every eager launch) does not pay
// for building these messages.
void HWQueue::check_exec(const Program& program, const LaunchArgs& args) {
  check_open_for_build();
  auto where = [&] { return exec_name(program.name(), kind_, dev_); };
  if (kind_ != QueueKind::compute) throw InvalidArgument(cat(where(), ": kernels run on compute queues only"));
  if (&program.device() != &dev_)
    throw InvalidArgument(cat(where(), ": the program was loaded on ", program.device().name()));
  if (args.bufs.size() != program.num_bufs() || args.vals.size() != program.num_vals())
    throw InvalidArgument(cat(where(), ": ", args.bufs.size(), " buffers and ", args.vals.size(),
                              " values given, the kernel takes ", program.num_bufs(), " and ", program.num_vals()));
}

// Dims that are not all constant and within the limits: the constant ones are checked now (a bad one throws), the
// symbolic ones at every submit, before anything is patched.
void HWQueue::note_launch_dims(const Program& program, const Dims& global, const Dims& local) {
  check_launch_dims(program.name(), kind_, dev_, program.limits(), global, local, {});
  if (std::any_of(global.begin(), global.end(), [](const Sym& d) { return !d.is_const(); }) ||
      std::any_of(local.begin(), local.end(), [](const Sym& d) { return !d.is_const(); }))
    launch_checks_.push_back({program.name(), global, local, program.limits()});
}

HWQueue& HWQueue::exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) {
  if (finalized_ || kind_ != QueueKind::compute || &program.device() != &dev_ ||
      args.bufs.size() != program.num_bufs() || args.vals.size() != program.num_vals()) [[unlikely]]
    check_exec(program, args);  // throws
  if (!constant_dims_fit(program.limits(), global, local)) [[unlikely]]
    note_launch_dims(program, global, local);
  encode_exec(program, args, global, local);
  ++num_commands_;
  return *this;
}

HWQueue& HWQueue::copy(Sym dst, Sym src, uint64_t size) {
  check_open_for_build();
  if (size == 0) throw InvalidArgument(cat("copy on the ", queue_name(kind_, dev_), ": size 0"));
  check_address(dst, 1, "copy destination", kind_, dev_);
  check_address(src, 1, "copy source", kind_, dev_);
  encode_copy(dst, src, size);
  ++num_commands_;
  return *this;
}

HWQueue& HWQueue::memory_barrier() {
  check_open_for_build();
  encode_memory_barrier();
  ++num_commands_;
  return *this;
}

HWQueue& HWQueue::write(Sym addr, Sym value, Width width) {
  check_open_for_build();
  if (width != Width::b32 && width != Width::b64)
    throw InvalidArgument(cat("write on the ", queue_name(kind_, dev_), ": width ", static_cast<unsigned>(width),
                              " is neither 4 nor 8 bytes"));
  check_address(addr, 4, "write", kind_, dev_);
  if (width == Width::b32 && value.is_const() && !fits_32(value.add))
    throw InvalidArgument(
        cat("write on the ", queue_name(kind_, dev_), ": value ", hex(value.add), " does not fit the 32-bit write"));
  encode_write(addr, value, width);
  ++num_commands_;
  return *this;
}

HWQueue& HWQueue::poll_bit(Sym addr, uint32_t mask, bool set) {
  check_open_for_build();
  check_address(addr, 4, "poll_bit", kind_, dev_);
  if (mask == 0) throw InvalidArgument(cat("poll_bit on the ", queue_name(kind_, dev_), ": empty mask"));
  encode_poll_bit(addr, mask, set);
  ++num_commands_;
  return *this;
}

HWQueue& HWQueue::raw(std::span<const uint32_t> words) {
  check_open_for_build();
  if (words.empty()) throw InvalidArgument(cat("raw on the ", queue_name(kind_, dev_), ": no words"));
  encode_raw(words);
  ++num_commands_;
  return *this;
}

void HWQueue::finalize() {
  if (finalized_) return;
  finalized_ = true;
  // An unbound queue's words are copied into the ring at submit, so rewriting them is always safe; a bound copy
  // or side memory is read in place, so a changed resubmit must know when the previous one is done with it.
  tracked_ = bound_ || patches_.has_absolute();
  if (tracked_) {
    completion_ = OwnedSignal(0, dev_.name() + " " + to_string(kind_) + " queue completion");
    completion_addr_ = completion_->addr();
  }
}

HWQueue& HWQueue::bind() {
  check_open_for_build();
  bound_ = true;
  finalize();
  std::byte* bound_words = nullptr;
  try {
    bound_words = bind_words(words_);
  } catch (...) {
    bound_ = false;  // submits keep working from words_
    throw;
  }
  patches_.set_base(words_region_, bound_words);
  patches_.invalidate();  // the bound copy has never been patched
  return *this;
}

void HWQueue::submit(std::span<const uint64_t> vars) {
  if (!finalized_) [[unlikely]]
    finalize();
  for (const LaunchCheck& c : launch_checks_)
    check_launch_dims(c.program, kind_, dev_, c.limits, c.global, c.local, vars);
  if (tracked_ && seq_ > 0 && patches_.would_change(vars) && completion_->value() < seq_)
    dev_.wait_signal(completion_, seq_);
  if (!bound_) patches_.set_base(words_region_, reinterpret_cast<std::byte*>(words_.data()));
  patches_.apply(vars);
  submit_words(completion_addr_, seq_ + 1);
  ++seq_;  // only once the hardware has it: a failed submit must not leave a wait for a value that never comes
}

// A constant is emitted as its word(s) directly: what a patch of it would write right away, without the patch
// list's bookkeeping (this is on every encode).
void HWQueue::emit_sym32(Sym value, uint8_t shift) {
  if (value.is_const()) [[likely]] {
    if (shift >= 64) throw InvalidArgument(cat("patch list: shift ", unsigned{shift}, " >= 64"));
    return emit(static_cast<uint32_t>(value.add >> shift));
  }
  emit(0);
  patch_word(words_.size() - 1, value, PatchList::Kind::u32, shift);
}

void HWQueue::emit_sym64(Sym value) {
  if (value.is_const()) [[likely]]
    return emit64(value.add);
  emit64(0);
  patch_word(words_.size() - 2, value, PatchList::Kind::u64);
}

void HWQueue::patch_word(size_t index, Sym value, PatchList::Kind kind, uint8_t shift, uint8_t lo_bit, uint8_t nbits) {
  const size_t needed = index + (kind == PatchList::Kind::u64 ? 2 : 1);
  if (needed > words_.size())
    throw InvalidArgument(
        cat(queue_name(kind_, dev_), ": patch of word ", index, " beyond the ", words_.size(), " words built"));
  // words_ may have reallocated since the last emit; a constant is written through this base right away.
  patches_.set_base(words_region_, reinterpret_cast<std::byte*>(words_.data()));
  patches_.add(value, {words_region_, index * sizeof(uint32_t), kind, shift, lo_bit, nbits});
}

}  // namespace hcq
