// A channel's error notifier: the NvNotification RM writes into the memory named by the channel's errorNotifierMem
// when it stops the channel after a fault (krcErrorWriteNotifier), and the robust-channel error codes it puts in
// info32. The backend polls `status`; the simulated RM writes the same bytes.
// Facts from open-gpu-kernel-modules src/common/sdk/nvidia/inc/nvos.h (NvNotification, NV_NOTIFICATION_STATUS_*),
// nverror.h (ROBUST_CHANNEL_*) and cl2080.h (NV2080_ENGINE_TYPE_*). Identical in the 570 and 580 branches.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hcq::nv::abi {

// NvNotification: 16 bytes, 4-byte aligned. RM fills the time, info32 and info16 first and the status last.
struct ErrorNotification {
  // GPU time (ns) when RM wrote it, high word first: RM stores the upper half in nanoseconds[0] and the lower in
  // nanoseconds[1] (method_notification.c), so it is not one little-endian 64-bit value. See time_ns().
  uint32_t nanoseconds[2];
  uint32_t info32;  // the robust-channel error code (rc::*)
  uint16_t info16;  // the engine (NV2080_ENGINE_TYPE_*) that faulted
  uint16_t status;  // kNotificationStatusError once written; 0 until then (the memory starts zeroed)

  uint64_t time_ns() const { return (uint64_t{nanoseconds[0]} << 32) | nanoseconds[1]; }
  void set_time_ns(uint64_t ns) {
    nanoseconds[0] = static_cast<uint32_t>(ns >> 32);
    nanoseconds[1] = static_cast<uint32_t>(ns);
  }
};
static_assert(sizeof(ErrorNotification) == 16 && alignof(ErrorNotification) == 4 &&
              offsetof(ErrorNotification, info32) == 8 && offsetof(ErrorNotification, info16) == 12 &&
              offsetof(ErrorNotification, status) == 14);
// What RM writes into the status of a channel it stopped (kernel_rc_notification.c); the class headers' named
// NOTIFICATION_STATUS values are others (0x4000 ...), so this one has no header name.
constexpr uint16_t kNotificationStatusError = 0xffff;

// nverror.h: the codes RM writes for a channel it stopped (also the Xid the kernel log shows).
namespace rc {
constexpr uint32_t gr_exception = 13;  // ROBUST_CHANNEL_GR_EXCEPTION: an SM or compute-class error
constexpr uint32_t mmu_fault = 31;     // ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT: an unmapped or protected address
constexpr uint32_t pbdma_error = 32;   // ROBUST_CHANNEL_PBDMA_ERROR: a bad GPFIFO entry or method
// ROBUST_CHANNEL_CE<n>_ERROR: copy engines 0..2, 3..5 and 6..8 are in three runs of codes; CE9 has its own.
constexpr uint32_t ce_error(uint32_t instance) {
  if (instance < 3) return 39 + instance;
  if (instance < 6) return 70 + (instance - 3);
  if (instance < 9) return 75 + (instance - 6);
  return 85;
}
constexpr bool is_ce_error(uint32_t code) {
  return (code >= 39 && code <= 41) || (code >= 70 && code <= 72) || (code >= 75 && code <= 77) || code == 85;
}
// "MMU fault", "PBDMA error", "GR exception", "CE error", or nullptr for a code without a name here.
constexpr const char* name(uint32_t code) {
  if (code == mmu_fault) return "MMU fault";
  if (code == pbdma_error) return "PBDMA error";
  if (code == gr_exception) return "GR exception";
  if (is_ce_error(code)) return "CE error";
  return nullptr;
}
}  // namespace rc

}  // namespace hcq::nv::abi
