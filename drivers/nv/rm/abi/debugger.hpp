// Fault details RM keeps for a process's own compute context, read through an SM debugger object (GT200_DEBUGGER).
//
// A channel's error notifier carries only the RM error code and engine (notifier.hpp). For an MMU fault an SM made
// (an engine fault of GR from a GPC client), RM also records, per graphics context, the faulting VA, the fault type
// and the access type (kgrctxRecordMmuFault: a ring of 4 slots, so at most 3 entries, the oldest dropped first), and
// latches the SMs' error registers. A user-space driver reads both without the kernel's help: allocate
// GT200_DEBUGGER under the device naming the compute object (hAppClient = our client, hClass3dObject = the compute
// object on the compute channel), then READ_ALL_SM_ERROR_STATES (is there an MMU fault? else the SMs' error
// registers) and READ_MMU_FAULT_INFO (the recorded faults). tinygrad's ops_nv.py does the same on a device hang.
// Faults of the copy engines and of host (PBDMA) are not recorded there: RM prints them to the kernel log only.
//
// Facts from open-gpu-kernel-modules: class/cl83de.h, ctrl/ctrl83de/ctrl83dedebug.h, gpu/gr/kernel_graphics_context.c,
// kernel_sm_debugger_session.c; hardware values from swref/published/*/dev_fault.h and volta/gv100/dev_fb.h
// (NV_PFB_PRI_MMU_FAULT_INFO). The blocks are identical in the 570 and 580 branches (ctrl83dedebug.h is unchanged
// from 570.133.20 to 580.95.05), so there is no per-branch table for them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nv/rm/abi/ioctl.hpp"

namespace hcq::nv::abi {

// NV83DE_ALLOC_PARAMETERS, for cls::gt200_debugger (classes.hpp)
struct DebuggerAllocParams {
  Handle debugger_client_obsolete;  // must be 0 (RM refuses the old interface with NV_ERR_INVALID_ARGUMENT)
  Handle app_client;                // the client owning the compute object; 0: the caller's client
  Handle class3d_object;            // the compute (or 3D) object whose context is debugged
};
static_assert(sizeof(DebuggerAllocParams) == 12);

namespace ctrl {
// On a GT200_DEBUGGER object
constexpr uint32_t debug_read_all_sm_error_states = 0x83de030c;
constexpr uint32_t debug_read_mmu_fault_info = 0x83de0328;
}  // namespace ctrl

// NV83DE_SM_ERROR_STATE_REGISTERS
struct SmErrorState {
  uint32_t hww_global_esr;
  uint32_t hww_warp_esr;
  uint32_t hww_warp_esr_pc;  // low 32 bits of the PC (deprecated; see hww_warp_esr_pc64)
  uint32_t hww_global_esr_report_mask;
  uint32_t hww_warp_esr_report_mask;
  uint32_t pad0;
  uint64_t hww_esr_addr;
  uint64_t hww_warp_esr_pc64;
  uint32_t hww_cga_esr;
  uint32_t hww_cga_esr_report_mask;
};
static_assert(sizeof(SmErrorState) == 48 && offsetof(SmErrorState, hww_esr_addr) == 24);

constexpr uint32_t kDebugMaxSmsPerCall = 100;  // NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL

// NV83DE_MMU_FAULT_INFO
struct DebugMmuFault {
  uint8_t valid;  // NvBool: an MMU fault of the target channel's context since the last clear
  uint8_t pad0[3];
  uint32_t fault_info;  // the first fault's NV_PFB_PRI_MMU_FAULT_INFO word (mmu_fault_info::*)
};
static_assert(sizeof(DebugMmuFault) == 8);

// NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS
struct ReadAllSmErrorStatesParams {
  Handle target_channel;     // in: the channel (the compute object's parent)
  uint32_t num_sms_to_read;  // in: at most kDebugMaxSmsPerCall
  SmErrorState sm_error_state[kDebugMaxSmsPerCall];
  uint32_t mmu_fault_info;  // deprecated copy of mmu_fault.fault_info
  DebugMmuFault mmu_fault;
  uint32_t starting_sm;  // in
};
static_assert(sizeof(ReadAllSmErrorStatesParams) == 4824 &&
              offsetof(ReadAllSmErrorStatesParams, mmu_fault_info) == 4808 &&
              offsetof(ReadAllSmErrorStatesParams, mmu_fault) == 4812 &&
              offsetof(ReadAllSmErrorStatesParams, starting_sm) == 4820);

// NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY / _PARAMS
struct MmuFaultInfoEntry {
  uint64_t fault_address;
  uint32_t fault_type;   // fault_type::*
  uint32_t access_type;  // access_type::*
};
static_assert(sizeof(MmuFaultInfoEntry) == 16);
constexpr uint32_t kMmuFaultInfoMaxEntries = 4;
struct ReadMmuFaultInfoParams {
  MmuFaultInfoEntry list[kMmuFaultInfoMaxEntries];  // out: oldest first
  uint32_t count;                                   // out
  uint32_t pad0;
};
static_assert(sizeof(ReadMmuFaultInfoParams) == 72 && offsetof(ReadMmuFaultInfoParams, count) == 64);

// NV_PFAULT_FAULT_TYPE_* (dev_fault.h, Volta on). 0xb is COMPRESSION_FAILURE before Blackwell, CC_VIOLATION on it.
namespace fault_type {
constexpr uint32_t pde = 0x0, pde_size = 0x1, pte = 0x2, va_limit_violation = 0x3, unbound_inst_block = 0x4,
                   priv_violation = 0x5, ro_violation = 0x6, wo_violation = 0x7, pitch_mask_violation = 0x8,
                   work_creation = 0x9, unsupported_aperture = 0xa, compression_failure = 0xb, unsupported_kind = 0xc,
                   region_violation = 0xd, poisoned = 0xe, atomic_violation = 0xf;
// "PTE fault" ... ; nullptr for a value without a name here.
constexpr const char* name(uint32_t t, bool blackwell) {
  switch (t) {
    case pde: return "PDE fault (no page directory entry)";
    case pde_size: return "PDE size fault";
    case pte: return "PTE fault (no valid page table entry)";
    case va_limit_violation: return "VA limit violation";
    case unbound_inst_block: return "unbound instance block";
    case priv_violation: return "privilege violation";
    case ro_violation: return "read-only violation";
    case wo_violation: return "write-only violation";
    case pitch_mask_violation: return "pitch mask violation";
    case work_creation: return "work creation fault";
    case unsupported_aperture: return "unsupported aperture";
    case compression_failure: return blackwell ? "confidential-computing violation" : "compression failure";
    case unsupported_kind: return "unsupported kind";
    case region_violation: return "region violation";
    case poisoned: return "poisoned memory";
    case atomic_violation: return "atomic violation";
    default: return nullptr;
  }
}
}  // namespace fault_type

// NV_PFAULT_ACCESS_TYPE_* (dev_fault.h, Volta on): virtual accesses 0..4, physical ones 8..11.
namespace access_type {
constexpr uint32_t virt_read = 0x0, virt_write = 0x1, virt_atomic = 0x2, virt_prefetch = 0x3, virt_atomic_weak = 0x4,
                   phys_read = 0x8, phys_write = 0x9, phys_atomic = 0xa, phys_prefetch = 0xb;
constexpr const char* name(uint32_t a) {
  switch (a) {
    case virt_read: return "read";
    case virt_write: return "write";
    case virt_atomic: return "atomic";
    case virt_prefetch: return "prefetch";
    case virt_atomic_weak: return "weak atomic";
    case phys_read: return "physical read";
    case phys_write: return "physical write";
    case phys_atomic: return "physical atomic";
    case phys_prefetch: return "physical prefetch";
    default: return nullptr;
  }
}
}  // namespace access_type

// The NV_PFB_PRI_MMU_FAULT_INFO word RM latches with the first fault (READ_ALL_SM_ERROR_STATES mmu_fault.fault_info).
namespace mmu_fault_info {
constexpr uint32_t fault_type(uint32_t w) { return w & 0x1f; }          // 4:0
constexpr uint32_t client(uint32_t w) { return (w >> 8) & 0x7f; }       // 14:8
constexpr uint32_t access_type(uint32_t w) { return (w >> 16) & 0xf; }  // 19:16
constexpr uint32_t client_type(uint32_t w) { return (w >> 20) & 1; }    // 20:20: 0 GPC, 1 HUB
constexpr uint32_t gpc_id(uint32_t w) { return (w >> 24) & 0x1f; }      // 28:24
constexpr bool valid(uint32_t w) { return (w >> 31) != 0; }             // 31:31
constexpr uint32_t make(uint32_t type, uint32_t client_id, uint32_t access, uint32_t client_type_bit, uint32_t gpc) {
  return (type & 0x1f) | ((client_id & 0x7f) << 8) | ((access & 0xf) << 16) | ((client_type_bit & 1) << 20) |
         ((gpc & 0x1f) << 24) | (1u << 31);
}
constexpr uint32_t kClientTypeGpc = 0, kClientTypeHub = 1;
}  // namespace mmu_fault_info

// NV_PFAULT_CLIENT_GPC_* of Ampere and Hopper (ga100, gh100 dev_fault.h; Blackwell renumbers them).
namespace gpc_client {
constexpr uint32_t t1_0 = 0x00;  // T1_0..T1_7 = 0..7: the SMs' L1/texture units (loads, stores, atomics)
constexpr uint32_t gcc = 0x11;   // the GPC constant cache (constant banks, instruction fetch)
constexpr uint32_t gpccs = 0x12;
}  // namespace gpc_client

}  // namespace hcq::nv::abi
