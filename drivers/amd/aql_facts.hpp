// AQL facts: the 64-byte HSA packets an AQL queue consumes (HSA runtime spec; hsa.h), plus AMD's vendor-specific
// packet that runs a PM4 indirect buffer from an AQL queue (ROCr's AMD_AQL_FORMAT_PM4_IB). Fields are in dwords.
#pragma once

#include <cstdint>

#include "amd/fields.hpp"

namespace hcq::amd::aql {

inline constexpr uint32_t kPacketBytes = 64;
inline constexpr uint32_t kPacketWords = 16;

enum PacketType : uint8_t {
  VENDOR_SPECIFIC = 0,
  INVALID = 1,
  KERNEL_DISPATCH = 2,
  BARRIER_AND = 3,
  AGENT_DISPATCH = 4,
  BARRIER_OR = 5,
};
enum FenceScope : uint8_t { SCOPE_NONE = 0, SCOPE_AGENT = 1, SCOPE_SYSTEM = 2 };
inline constexpr uint32_t kVendorFormatPm4Ib = 1;  // AMD_AQL_FORMAT_PM4_IB in the vendor packet's second half-word

// Header half-word: [7:0] type, [8] barrier, [10:9] acquire fence scope, [12:11] release fence scope.
inline constexpr Field kType{"type", 0, 0, 8};
inline constexpr Field kBarrier{"barrier", 0, 8, 1};
inline constexpr Field kAcquireScope{"acquire_fence_scope", 0, 9, 2};
inline constexpr Field kReleaseScope{"release_fence_scope", 0, 11, 2};

constexpr uint16_t header(PacketType type, bool barrier, FenceScope acquire, FenceScope release) {
  return static_cast<uint16_t>(kType.place(type) | kBarrier.place(barrier) | kAcquireScope.place(acquire) |
                               kReleaseScope.place(release));
}

std::string_view type_name(uint32_t type);

extern const Layout kKernelDispatch;
extern const Layout kBarrierAnd;
extern const Layout kBarrierOr;
extern const Layout kVendorPm4Ib;

// ROCr's amd_queue_t (hsa/amd_hsa_queue.h), 256 bytes, 256-byte aligned: the queue object of an AQL queue. The CP
// finds it from the read pointer KFD was given (read_dispatch_id), less the offset stored right after that pointer
// (read_dispatch_id_field_base_byte_offset), and reads the scratch setup of each dispatch from it: the backing
// memory, its size, COMPUTE_TMPRING_SIZE and the per-lane size (for wave64).
inline constexpr uint32_t kAmdQueueBytes = 256;
extern const Layout kAmdQueue;

}  // namespace hcq::amd::aql
