// Pushbuffer facts: the method header format (NVC56F_DMA_*) and the method tables of the host (GPFIFO), compute and
// copy classes of every supported generation. Offsets, bit ranges and enum names are those of NVIDIA's class
// headers (open-gpu-kernel-modules class/ and open-gpu-doc classes/); where a method changed between generations
// (a wider address field, extra enum values) each class has its own entry, so nothing branches on the architecture.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "nv/facts/bits.hpp"

namespace hcq::nv {

// ---- Method header (one dword in front of a method's data) ----
// SEC_OP 31:29, COUNT 28:16 (or IMMD_DATA 28:16), SUBCHANNEL 15:13, METHOD_ADDRESS 11:0 (the method offset >> 2).
enum class SecOp : uint8_t {
  grp0_use_tert = 0,     // TERT_OP 17:16 selects: 0 = legacy INC, 1..3 = sub-device masks
  inc_method = 1,        // COUNT data words to consecutive methods
  grp2_use_tert = 2,     // TERT_OP 0 = legacy NON_INC
  non_inc_method = 3,    // COUNT data words, all to the same method
  immd_data_method = 4,  // no data words: the 13-bit value rides in the header
  one_inc = 5,           // first data word to the method, the rest to the next one
  reserved6 = 6,
  end_pb_segment = 7,
};
namespace pb {
inline constexpr BitField kMethodAddress{"METHOD_ADDRESS", 0, 12};
inline constexpr BitField kSubchannel{"SUBCHANNEL", 13, 3};
inline constexpr BitField kTertOp{"TERT_OP", 16, 2};
inline constexpr BitField kCount{"COUNT", 16, 13};
inline constexpr BitField kImmdData{"IMMD_DATA", 16, 13};
inline constexpr BitField kSecOp{"SEC_OP", 29, 3};
inline constexpr uint32_t kMaxCount = 0x1fff;
inline constexpr uint32_t kMaxImmediate = 0x1fff;

// Subchannel bindings hcq uses (the ones tinygrad's NV runtime uses too): compute on 1, copy on 4. Methods below
// kHostMethodLimit are executed by the channel's host unit whatever the subchannel; SET_OBJECT (offset 0) binds a
// class to the subchannel.
inline constexpr uint32_t kHostSubchannel = 0;
inline constexpr uint32_t kComputeSubchannel = 1;
inline constexpr uint32_t kCopySubchannel = 4;
inline constexpr uint32_t kSubchannels = 8;
inline constexpr uint32_t kHostMethodLimit = 0x100;

constexpr uint32_t header(SecOp op, uint32_t subchannel, uint32_t method_offset, uint32_t count_or_immediate) {
  return static_cast<uint32_t>(kSecOp.place(static_cast<uint32_t>(op)) | kCount.place(count_or_immediate) |
                               kSubchannel.place(subchannel) | kMethodAddress.place(method_offset >> 2));
}
std::string_view sec_op_name(uint32_t sec_op);  // "INC_METHOD", "NON_INC_METHOD", ...
}  // namespace pb

// ---- Class method tables ----
// Host/GPFIFO: NVC56F (Ampere, Ada), NVC86F (Hopper), NVC96F, NVCA6F (Blackwell).
// Compute: NVC6C0, NVC9C0, NVCBC0, NVCDC0, NVCEC0. Copy: NVC7B5, NVC8B5, NVC9B5, NVCAB5.
// Each lists the methods hcq emits or may meet in a stream it decodes (not the whole class).
const ClassMethods* find_class(uint32_t class_id);
std::span<const ClassMethods* const> all_classes();
// Whether a copy class releases 64-bit semaphores of its own: it has SET_SEMAPHORE_PAYLOAD_UPPER (NVC6B5, the A100's,
// does not; there the host's release on the copy channel stands in).
bool copy_releases_semaphore64(const ClassMethods& copy);
// MEM_OP_C's fields when MEM_OP_D's OPERATION is a TLB invalidate (clc56f.h MEM_OP_C_TLB_INVALIDATE_*, the same in
// every host class hcq knows). They overlap MEMBAR_TYPE, which the method table holds.
std::span<const BitField> mem_op_c_tlb_invalidate();

}  // namespace hcq::nv
