#include "sim/nv_engine/semaphore.hpp"

#include <algorithm>
#include <atomic>

namespace hcq::sim::nv_engine {

std::optional<uint64_t> release_semaphore(ChannelContext& ctx, uint64_t va, uint64_t payload, bool is64,
                                          bool timestamp) {
  if (timestamp) {
    // The timestamp first, then the payload: a waiter that sees the payload also sees the time it was released.
    if (!ctx.store<uint64_t>(va + 8, ctx.host().gpu_time_ns())) return va + 8;
  }
  const bool ok = is64 ? ctx.store<uint64_t>(va, payload) : ctx.store<uint32_t>(va, static_cast<uint32_t>(payload));
  if (!ok) return va;
  return std::nullopt;
}

namespace {
template <class T>
T reduce(std::string_view op, T mem, T arg, bool is_signed) {
  using S = std::make_signed_t<T>;
  if (op == "IMIN")
    return is_signed ? static_cast<T>(std::min<S>(static_cast<S>(mem), static_cast<S>(arg))) : std::min(mem, arg);
  if (op == "IMAX")
    return is_signed ? static_cast<T>(std::max<S>(static_cast<S>(mem), static_cast<S>(arg))) : std::max(mem, arg);
  if (op == "IXOR") return mem ^ arg;
  if (op == "IAND") return mem & arg;
  if (op == "IOR") return mem | arg;
  if (op == "IADD") return mem + arg;
  if (op == "INC") return mem >= arg ? T{0} : static_cast<T>(mem + 1);  // wraps to 0 past the payload
  /* DEC */ return (mem == 0 || mem > arg) ? arg : static_cast<T>(mem - 1);
}

template <class T>
bool reduce_at(std::byte* p, std::string_view op, T arg, bool is_signed) {
  if (reinterpret_cast<uintptr_t>(p) % sizeof(T)) return false;
  std::atomic_ref<T> a(*reinterpret_cast<T*>(p));
  T cur = a.load(std::memory_order_acquire);
  while (!a.compare_exchange_weak(cur, reduce<T>(op, cur, arg, is_signed), std::memory_order_acq_rel)) {
  }
  return true;
}
}  // namespace

std::string reduce_semaphore(ChannelContext& ctx, uint64_t va, std::string_view op, bool is_signed, uint64_t payload,
                             bool is64) {
  static constexpr std::string_view kOps[] = {"IMIN", "IMAX", "IXOR", "IAND", "IOR", "IADD", "INC", "DEC"};
  if (std::find(std::begin(kOps), std::end(kOps), op) == std::end(kOps))
    return "semaphore reduction " + (op.empty() ? std::string("(undefined)") : std::string(op)) + " is not supported";
  std::byte* p = ctx.ptr(va, is64 ? 8 : 4);
  if (!p) return "semaphore address " + hex(va) + " is not mapped";
  const bool ok = is64 ? reduce_at<uint64_t>(p, op, payload, is_signed)
                       : reduce_at<uint32_t>(p, op, static_cast<uint32_t>(payload), is_signed);
  return ok ? std::string() : "semaphore address " + hex(va) + " is not naturally aligned for an atomic reduction";
}

}  // namespace hcq::sim::nv_engine
