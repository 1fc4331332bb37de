// Register facts. Offsets and field layouts are AMD's (Linux drivers/gpu/drm/amd/include/asic_reg/gc/gc_*_offset.h
// and _sh_mask.h, as tabulated in tinygrad's autogen/am/regs.py): COMPUTE_* registers sit in GC segment 0, whose
// base is 0x2000 on GC 9.4.3 and 0x1260 on GC 11/12, which puts them all at 0x2e00.. in PM4's dword space.
#include "amd/regs.hpp"

namespace hcq::amd {
namespace {

constexpr Field F(std::string_view n, uint8_t lo, uint8_t width) { return Field{n, 0, lo, width}; }

// ---- fields shared by every generation ----
constexpr Field kData32[] = {F("data", 0, 32)};
constexpr Field kData8[] = {F("data", 0, 8)};
constexpr Field kStart[] = {F("start", 0, 32)};
constexpr Field kRestart[] = {F("restart", 0, 32)};
constexpr Field kDimSize[] = {F("size", 0, 32)};
constexpr Field kPipelineStat[] = {F("pipelinestat_enable", 0, 1)};
constexpr Field kPerfCount[] = {F("perfcount_enable", 0, 1)};
constexpr Field kVmid[] = {F("data", 0, 4)};
constexpr Field kNumThread[] = {F("num_thread_full", 0, 16), F("num_thread_partial", 16, 16)};
// HDP flush request/done: one bit per requesting engine (NBIO BIF_BX_PF0_GPU_HDP_FLUSH_REQ/DONE).
constexpr Field kHdpFlush[] = {F("cp0", 0, 1),  F("cp1", 1, 1),   F("cp2", 2, 1),    F("cp3", 3, 1),
                               F("cp4", 4, 1),  F("cp5", 5, 1),   F("cp6", 6, 1),    F("cp7", 7, 1),
                               F("cp8", 8, 1),  F("cp9", 9, 1),   F("sdma0", 10, 1), F("sdma1", 11, 1)};

// ---- GC 9.4.3 (gfx942, gfx950) ----
constexpr Field kInitiator9[] = {F("compute_shader_en", 0, 1), F("partial_tg_en", 1, 1),
                                 F("force_start_at_000", 2, 1), F("ordered_append_enbl", 3, 1),
                                 F("ordered_append_mode", 4, 1), F("use_thread_dimensions", 5, 1),
                                 F("order_mode", 6, 1),          F("scalar_l1_inv_vol", 10, 1),
                                 F("vector_l1_inv_vol", 11, 1),  F("reserved", 12, 1),
                                 F("restore", 14, 1)};
constexpr Field kRsrc1_9[] = {F("vgprs", 0, 6),      F("sgprs", 6, 4),      F("priority", 10, 2),
                              F("float_mode", 12, 8), F("priv", 20, 1),      F("dx10_clamp", 21, 1),
                              F("debug_mode", 22, 1), F("ieee_mode", 23, 1), F("bulky", 24, 1),
                              F("cdbg_user", 25, 1),  F("fp16_ovfl", 26, 1)};
constexpr Field kRsrc2_9[] = {F("scratch_en", 0, 1),  F("user_sgpr", 1, 5),      F("trap_present", 6, 1),
                              F("tgid_x_en", 7, 1),   F("tgid_y_en", 8, 1),      F("tgid_z_en", 9, 1),
                              F("tg_size_en", 10, 1), F("tidig_comp_cnt", 11, 2), F("excp_en_msb", 13, 2),
                              F("lds_size", 15, 9),   F("excp_en", 24, 7),       F("skip_usgpr0", 31, 1)};
constexpr Field kRsrc3_9[] = {F("accum_offset", 0, 6), F("trap_on_start", 10, 1), F("trap_on_end", 11, 1),
                              F("tg_split", 16, 1)};
constexpr Field kLimits9[] = {F("waves_per_sh", 0, 10),   F("tg_per_cu", 12, 4),      F("lock_threshold", 16, 6),
                              F("simd_dest_cntl", 22, 1), F("force_simd_dist", 23, 1), F("cu_group_count", 24, 3),
                              F("simd_disable", 27, 4)};
constexpr Field kTmpring9[] = {F("waves", 0, 12), F("wavesize", 12, 13)};

// ---- GC 11.0 (gfx1100..gfx1103) ----
constexpr Field kInitiator11[] = {F("compute_shader_en", 0, 1),  F("partial_tg_en", 1, 1),
                                  F("force_start_at_000", 2, 1),  F("ordered_append_enbl", 3, 1),
                                  F("ordered_append_mode", 4, 1), F("use_thread_dimensions", 5, 1),
                                  F("order_mode", 6, 1),          F("scalar_l1_inv_vol", 10, 1),
                                  F("vector_l1_inv_vol", 11, 1),  F("reserved", 12, 1),
                                  F("tunnel_enable", 13, 1),      F("restore", 14, 1),
                                  F("cs_w32_en", 15, 1),          F("amp_shader_en", 16, 1),
                                  F("disable_disp_prempt_en", 17, 1)};
constexpr Field kRsrc1_11[] = {F("vgprs", 0, 6),      F("sgprs", 6, 4),     F("priority", 10, 2),
                               F("float_mode", 12, 8), F("priv", 20, 1),     F("dx10_clamp", 21, 1),
                               F("ieee_mode", 23, 1),  F("bulky", 24, 1),    F("fp16_ovfl", 26, 1),
                               F("wgp_mode", 29, 1),   F("mem_ordered", 30, 1), F("fwd_progress", 31, 1)};
constexpr Field kRsrc2_11[] = {F("scratch_en", 0, 1),  F("user_sgpr", 1, 5),       F("trap_present", 6, 1),
                               F("tgid_x_en", 7, 1),   F("tgid_y_en", 8, 1),       F("tgid_z_en", 9, 1),
                               F("tg_size_en", 10, 1), F("tidig_comp_cnt", 11, 2), F("excp_en_msb", 13, 2),
                               F("lds_size", 15, 9),   F("excp_en", 24, 7)};
constexpr Field kRsrc3_11[] = {F("shared_vgpr_cnt", 0, 4), F("inst_pref_size", 4, 6), F("trap_on_start", 10, 1),
                               F("trap_on_end", 11, 1),    F("image_op", 31, 1)};
constexpr Field kLimits11[] = {F("waves_per_sh", 0, 10),   F("tg_per_cu", 12, 4),       F("lock_threshold", 16, 6),
                               F("simd_dest_cntl", 22, 1), F("force_simd_dist", 23, 1), F("cu_group_count", 24, 3)};
constexpr Field kTmpring11[] = {F("waves", 0, 12), F("wavesize", 12, 15)};

// ---- GC 12.0 (gfx1200, gfx1201) ----
constexpr Field kInitiator12[] = {F("compute_shader_en", 0, 1),  F("partial_tg_en", 1, 1),
                                  F("force_start_at_000", 2, 1),  F("ordered_append_enbl", 3, 1),
                                  F("ordered_append_mode", 4, 1), F("use_thread_dimensions", 5, 1),
                                  F("order_mode", 6, 1),          F("scalar_l1_inv_vol", 10, 1),
                                  F("vector_l1_inv_vol", 11, 1),  F("ping_pong_en", 12, 1),
                                  F("tunnel_enable", 13, 1),      F("restore", 14, 1),
                                  F("cs_w32_en", 15, 1),          F("amp_shader_en", 16, 1),
                                  F("disable_disp_prempt_en", 17, 1), F("interleave_2d_en", 18, 1),
                                  F("ttrace_queue_id", 29, 3)};
constexpr Field kRsrc1_12[] = {F("vgprs", 0, 6),       F("sgprs", 6, 4),       F("priority", 10, 2),
                               F("float_mode", 12, 8),  F("priv", 20, 1),       F("wg_rr_en", 21, 1),
                               F("debug_mode", 22, 1),  F("disable_perf", 23, 1), F("bulky", 24, 1),
                               F("cdbg_user", 25, 1),   F("fp16_ovfl", 26, 1),  F("wgp_mode", 29, 1),
                               F("mem_ordered", 30, 1), F("fwd_progress", 31, 1)};
constexpr Field kRsrc2_12[] = {F("scratch_en", 0, 1),  F("user_sgpr", 1, 5),       F("dynamic_vgpr", 6, 1),
                               F("tgid_x_en", 7, 1),   F("tgid_y_en", 8, 1),       F("tgid_z_en", 9, 1),
                               F("tg_size_en", 10, 1), F("tidig_comp_cnt", 11, 2), F("excp_en_msb", 13, 2),
                               F("lds_size", 15, 9),   F("excp_en", 24, 7),        F("wgp_takeover", 31, 1)};
constexpr Field kRsrc3_12[] = {F("shared_vgpr_cnt", 0, 4), F("inst_pref_size", 4, 8), F("glg_en", 13, 1),
                               F("image_op", 31, 1)};
constexpr Field kNumThreadX12[] = {F("num_thread_full", 0, 13), F("interleave_bits_x", 13, 3),
                                   F("num_thread_partial", 16, 16)};
constexpr Field kNumThreadY12[] = {F("num_thread_full", 0, 13), F("interleave_bits_y", 13, 3),
                                   F("num_thread_partial", 16, 16)};
constexpr Field kTmpring12[] = {F("waves", 0, 12), F("wavesize", 12, 18)};

// The compute register block. Everything but RSRC3's address and the per-generation fields is common.
#define HCQ_AMD_COMPUTE_REGS(INITIATOR, NUMTHREAD_X, NUMTHREAD_Y, RSRC1, RSRC2, RSRC3, RSRC3_ADDR, LIMITS, TMPRING)           \
  Register{"COMPUTE_DISPATCH_INITIATOR", 0x2e00, INITIATOR}, Register{"COMPUTE_DIM_X", 0x2e01, kDimSize},           \
      Register{"COMPUTE_DIM_Y", 0x2e02, kDimSize}, Register{"COMPUTE_DIM_Z", 0x2e03, kDimSize},                     \
      Register{"COMPUTE_START_X", 0x2e04, kStart}, Register{"COMPUTE_START_Y", 0x2e05, kStart},                     \
      Register{"COMPUTE_START_Z", 0x2e06, kStart}, Register{"COMPUTE_NUM_THREAD_X", 0x2e07, NUMTHREAD_X},          \
      Register{"COMPUTE_NUM_THREAD_Y", 0x2e08, NUMTHREAD_Y}, Register{"COMPUTE_NUM_THREAD_Z", 0x2e09, kNumThread}, \
      Register{"COMPUTE_PIPELINESTAT_ENABLE", 0x2e0a, kPipelineStat},                                               \
      Register{"COMPUTE_PERFCOUNT_ENABLE", 0x2e0b, kPerfCount}, Register{"COMPUTE_PGM_LO", 0x2e0c, kData32},         \
      Register{"COMPUTE_PGM_HI", 0x2e0d, kData8}, Register{"COMPUTE_DISPATCH_PKT_ADDR_LO", 0x2e0e, kData32},        \
      Register{"COMPUTE_DISPATCH_PKT_ADDR_HI", 0x2e0f, kData8},                                                     \
      Register{"COMPUTE_DISPATCH_SCRATCH_BASE_LO", 0x2e10, kData32},                                                \
      Register{"COMPUTE_DISPATCH_SCRATCH_BASE_HI", 0x2e11, kData8}, Register{"COMPUTE_PGM_RSRC1", 0x2e12, RSRC1},  \
      Register{"COMPUTE_PGM_RSRC2", 0x2e13, RSRC2}, Register{"COMPUTE_VMID", 0x2e14, kVmid},                        \
      Register{"COMPUTE_RESOURCE_LIMITS", 0x2e15, LIMITS}, Register{"COMPUTE_TMPRING_SIZE", 0x2e18, TMPRING},       \
      Register{"COMPUTE_RESTART_X", 0x2e1b, kRestart}, Register{"COMPUTE_RESTART_Y", 0x2e1c, kRestart},             \
      Register{"COMPUTE_RESTART_Z", 0x2e1d, kRestart}, Register{"COMPUTE_PGM_RSRC3", RSRC3_ADDR, RSRC3},            \
      Register{"COMPUTE_USER_DATA_0", 0x2e40, kData32}, Register{"COMPUTE_USER_DATA_1", 0x2e41, kData32},           \
      Register{"COMPUTE_USER_DATA_2", 0x2e42, kData32}, Register{"COMPUTE_USER_DATA_3", 0x2e43, kData32},           \
      Register{"COMPUTE_USER_DATA_4", 0x2e44, kData32}, Register{"COMPUTE_USER_DATA_5", 0x2e45, kData32},           \
      Register{"COMPUTE_USER_DATA_6", 0x2e46, kData32}, Register{"COMPUTE_USER_DATA_7", 0x2e47, kData32},           \
      Register{"COMPUTE_USER_DATA_8", 0x2e48, kData32}, Register{"COMPUTE_USER_DATA_9", 0x2e49, kData32},           \
      Register{"COMPUTE_USER_DATA_10", 0x2e4a, kData32}, Register{"COMPUTE_USER_DATA_11", 0x2e4b, kData32},         \
      Register{"COMPUTE_USER_DATA_12", 0x2e4c, kData32}, Register{"COMPUTE_USER_DATA_13", 0x2e4d, kData32},         \
      Register{"COMPUTE_USER_DATA_14", 0x2e4e, kData32}, Register {                                                 \
    "COMPUTE_USER_DATA_15", 0x2e4f, kData32                                                                         \
  }

// The HDP flush pair is BIF_BX_PF0_GPU_HDP_FLUSH_REQ/DONE at NBIO segment 2 + 0x106/0x107; segment 2's base is 0xd20
// on NBIO 4.3 (gfx11), NBIF 6.3.1 (gfx12) and, as far as the published headers show, NBIO 7.9 (gfx942/gfx950).
#define HCQ_AMD_HDP_REGS                                                    \
  Register{"BIF_BX_PF0_GPU_HDP_FLUSH_REQ", 0xe26, kHdpFlush}, Register {    \
    "BIF_BX_PF0_GPU_HDP_FLUSH_DONE", 0xe27, kHdpFlush                       \
  }

constexpr Register kGc9_4[] = {
    HCQ_AMD_COMPUTE_REGS(kInitiator9, kNumThread, kNumThread, kRsrc1_9, kRsrc2_9, kRsrc3_9, 0x2e2d, kLimits9, kTmpring9),
    HCQ_AMD_HDP_REGS};
constexpr Register kGc11[] = {
    HCQ_AMD_COMPUTE_REGS(kInitiator11, kNumThread, kNumThread, kRsrc1_11, kRsrc2_11, kRsrc3_11, 0x2e28, kLimits11, kTmpring11),
    HCQ_AMD_HDP_REGS};
constexpr Register kGc12[] = {
    HCQ_AMD_COMPUTE_REGS(kInitiator12, kNumThreadX12, kNumThreadY12, kRsrc1_12, kRsrc2_12, kRsrc3_12, 0x2e28, kLimits11,
                         kTmpring12),
    HCQ_AMD_HDP_REGS};

#undef HCQ_AMD_COMPUTE_REGS
#undef HCQ_AMD_HDP_REGS

}  // namespace

const RegisterTable kRegsGc9_4{"gc_9_4_3 + nbio_7_9", kGc9_4, 10, false};
const RegisterTable kRegsGc11{"gc_11_0_0 + nbio_4_3_0", kGc11, 8, true};
const RegisterTable kRegsGc12{"gc_12_0_0 + nbif_6_3_1", kGc12, 8, true};

const Register* RegisterTable::find(uint32_t addr) const {
  for (const Register& r : regs)
    if (r.addr == addr) return &r;
  return nullptr;
}

const Register* RegisterTable::find(std::string_view n) const {
  for (const Register& r : regs)
    if (r.name == n) return &r;
  return nullptr;
}

}  // namespace hcq::amd
