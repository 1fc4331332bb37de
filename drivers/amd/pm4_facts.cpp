// PM4 facts as data. Opcodes and field positions are AMD's (Linux nvd.h for GC 10+, soc15d.h for GC 9, as also
// tabulated in tinygrad's autogen/am/pm4_nv.py and pm4_soc15.py); enum names are the PM4 header enums' own names.
#include "amd/pm4_facts.hpp"

#include <array>
#include <utility>

namespace hcq::amd::pm4 {
namespace {

constexpr std::pair<uint8_t, std::string_view> kOpcodeNames[] = {
    {0x10, "NOP"}, {0x11, "SET_BASE"}, {0x12, "CLEAR_STATE"}, {0x13, "INDEX_BUFFER_SIZE"}, {0x15, "DISPATCH_DIRECT"},
    {0x16, "DISPATCH_INDIRECT"}, {0x17, "INDIRECT_BUFFER_END"}, {0x19, "INDIRECT_BUFFER_CNST_END"},
    {0x1d, "ATOMIC_GDS"}, {0x1e, "ATOMIC_MEM"}, {0x1f, "OCCLUSION_QUERY"}, {0x20, "SET_PREDICATION"},
    {0x21, "REG_RMW"}, {0x22, "COND_EXEC"}, {0x23, "PRED_EXEC"}, {0x24, "DRAW_INDIRECT"},
    {0x25, "DRAW_INDEX_INDIRECT"}, {0x26, "INDEX_BASE"}, {0x27, "DRAW_INDEX_2"}, {0x28, "CONTEXT_CONTROL"},
    {0x2a, "INDEX_TYPE"}, {0x2c, "DRAW_INDIRECT_MULTI"}, {0x2d, "DRAW_INDEX_AUTO"}, {0x2f, "NUM_INSTANCES"},
    {0x30, "DRAW_INDEX_MULTI_AUTO"}, {0x32, "INDIRECT_BUFFER_PRIV"}, {0x33, "INDIRECT_BUFFER_CNST"},
    {0x34, "STRMOUT_BUFFER_UPDATE"}, {0x35, "DRAW_INDEX_OFFSET_2"}, {0x36, "DRAW_PREAMBLE"}, {0x37, "WRITE_DATA"},
    {0x38, "DRAW_INDEX_INDIRECT_MULTI"}, {0x39, "MEM_SEMAPHORE"}, {0x3a, "DRAW_INDEX_MULTI_INST"},
    {0x3b, "COPY_DW"}, {0x3c, "WAIT_REG_MEM"}, {0x3f, "INDIRECT_BUFFER"}, {0x40, "COPY_DATA"}, {0x41, "CP_DMA"},
    {0x42, "PFP_SYNC_ME"}, {0x43, "SURFACE_SYNC"}, {0x44, "ME_INITIALIZE"}, {0x45, "COND_WRITE"},
    {0x46, "EVENT_WRITE"}, {0x47, "EVENT_WRITE_EOP"}, {0x48, "EVENT_WRITE_EOS"}, {0x49, "RELEASE_MEM"},
    {0x4a, "PREAMBLE_CNTL"}, {0x50, "DMA_DATA"}, {0x51, "CONTEXT_REG_RMW"}, {0x52, "GFX_CNTX_UPDATE"},
    {0x53, "BLK_CNTX_UPDATE"}, {0x55, "INCR_UPDT_STATE"}, {0x58, "ACQUIRE_MEM"}, {0x59, "REWIND"},
    {0x5a, "INTERRUPT"}, {0x5b, "GEN_PDEPTE"}, {0x5c, "INDIRECT_BUFFER_PASID"}, {0x5d, "PRIME_UTCL2"},
    {0x5e, "LOAD_UCONFIG_REG"}, {0x5f, "LOAD_SH_REG"}, {0x60, "LOAD_CONFIG_REG"}, {0x61, "LOAD_CONTEXT_REG"},
    {0x62, "LOAD_COMPUTE_STATE"}, {0x63, "LOAD_SH_REG_INDEX"}, {0x68, "SET_CONFIG_REG"}, {0x69, "SET_CONTEXT_REG"},
    {0x6a, "SET_CONTEXT_REG_INDEX"}, {0x71, "SET_VGPR_REG_DI_MULTI"}, {0x72, "SET_SH_REG_DI"},
    {0x73, "SET_CONTEXT_REG_INDIRECT"}, {0x74, "SET_SH_REG_DI_MULTI"}, {0x75, "GFX_PIPE_LOCK"},
    {0x76, "SET_SH_REG"}, {0x77, "SET_SH_REG_OFFSET"}, {0x78, "SET_QUEUE_REG"}, {0x79, "SET_UCONFIG_REG"},
    {0x7a, "SET_UCONFIG_REG_INDEX"}, {0x7c, "FORWARD_HEADER"}, {0x7d, "SCRATCH_RAM_WRITE"},
    {0x7e, "SCRATCH_RAM_READ"}, {0x80, "LOAD_CONST_RAM"}, {0x81, "WRITE_CONST_RAM"}, {0x83, "DUMP_CONST_RAM"},
    {0x84, "INCREMENT_CE_COUNTER"}, {0x85, "INCREMENT_DE_COUNTER"}, {0x86, "WAIT_ON_CE_COUNTER"},
    {0x88, "WAIT_ON_DE_COUNTER_DIFF"}, {0x8b, "SWITCH_BUFFER"}, {0x8c, "DISPATCH_DRAW_PREAMBLE"},
    {0x8d, "DISPATCH_DRAW"}, {0x8e, "GET_LOD_STATS"}, {0x8f, "DRAW_MULTI_PREAMBLE"}, {0x90, "FRAME_CONTROL"},
    {0x91, "INDEX_ATTRIBUTES_INDIRECT"}, {0x93, "WAIT_REG_MEM64"}, {0x94, "COND_PREEMPT"}, {0x95, "HDP_FLUSH"},
    {0x96, "COPY_DATA_RB"}, {0x98, "INVALIDATE_TLBS"}, {0x99, "AQL_PACKET"}, {0x9a, "DMA_DATA_FILL_MULTI"},
    {0x9b, "SET_SH_REG_INDEX"}, {0x9c, "DRAW_INDIRECT_COUNT_MULTI"}, {0x9d, "DRAW_INDEX_INDIRECT_COUNT_MULTI"},
    {0x9e, "DUMP_CONST_RAM_OFFSET"}, {0x9f, "LOAD_CONTEXT_REG_INDEX"}, {0xa0, "SET_RESOURCES"},
    {0xa1, "MAP_PROCESS"}, {0xa2, "MAP_QUEUES"}, {0xa3, "UNMAP_QUEUES"}, {0xa4, "QUERY_STATUS"},
    {0xa5, "RUN_LIST"}, {0xa6, "MAP_PROCESS_VM"}, {0xd2, "RUN_CLEANER_SHADER"}, {0xf0, "SET_Q_PREEMPTION_MODE"},
};

constexpr std::array<std::string_view, 256> make_opcode_index() {
  std::array<std::string_view, 256> a{};
  for (const auto& [op, name] : kOpcodeNames) a[op] = name;
  return a;
}
constexpr std::array<std::string_view, 256> kOpcodeIndex = make_opcode_index();

// ---- enums ----
// VGT_EVENT_TYPE (gc_9_0_enum.h; the values below keep their names on GC 10-12), with each event's event_index class
// (see VgtEvent) and whether the compute pipe executes it. Only events hcq meets or a compute queue may send.
constexpr VgtEvent kVgtEvents[] = {
    {4, "CACHE_FLUSH_TS", 5, true},
    {6, "CACHE_FLUSH", 0, false},  // the render backends' colour and depth caches
    {7, "CS_PARTIAL_FLUSH", 4, true},
    {15, "VS_PARTIAL_FLUSH", 4, false},
    {16, "PS_PARTIAL_FLUSH", 4, false},
    {20, "CACHE_FLUSH_AND_INV_TS_EVENT", 5, true},
    {22, "CACHE_FLUSH_AND_INV_EVENT", 0, false},
    {23, "PERFCOUNTER_START", 0, true},
    {24, "PERFCOUNTER_STOP", 0, true},
    {25, "PIPELINESTAT_START", 0, true},
    {26, "PIPELINESTAT_STOP", 0, true},
    {27, "PERFCOUNTER_SAMPLE", 0, true},
    {30, "SAMPLE_PIPELINESTAT", 2, true},
    {40, "BOTTOM_OF_PIPE_TS", 5, true},
    {47, "CS_DONE", 6, true},
    {48, "PS_DONE", 6, false},
    {51, "THREAD_TRACE_START", 0, true},
    {52, "THREAD_TRACE_STOP", 0, true},
    {53, "THREAD_TRACE_MARKER", 0, true},
    {54, "THREAD_TRACE_FLUSH", 0, true},
    {55, "THREAD_TRACE_FINISH", 0, true},
};
constexpr auto kEventTypes = [] {
  std::array<EnumName, std::size(kVgtEvents)> a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = {kVgtEvents[i].type, kVgtEvents[i].name};
  return a;
}();
constexpr EnumName kReleaseEventIndex[] = {{5, "event_index__mec_release_mem__end_of_pipe"},
                                           {6, "event_index__mec_release_mem__shader_done"}};
constexpr EnumName kDstSel[] = {{0, "dst_sel__mec_release_mem__memory_controller"},
                                {1, "dst_sel__mec_release_mem__tc_l2"},
                                {2, "dst_sel__mec_release_mem__queue_write_pointer_register"},
                                {3, "dst_sel__mec_release_mem__queue_write_pointer_poll_mask_bit"}};
constexpr EnumName kIntSel[] = {
    {0, "int_sel__mec_release_mem__none"},
    {1, "int_sel__mec_release_mem__send_interrupt_only"},
    {2, "int_sel__mec_release_mem__send_interrupt_after_write_confirm"},
    {3, "int_sel__mec_release_mem__send_data_after_write_confirm"},
    {4, "int_sel__mec_release_mem__unconditionally_send_int_ctxid"},
    {5, "int_sel__mec_release_mem__conditionally_send_int_ctxid_based_on_32_bit_compare"},
    {6, "int_sel__mec_release_mem__conditionally_send_int_ctxid_based_on_64_bit_compare"}};
constexpr EnumName kDataSel[] = {{0, "data_sel__mec_release_mem__none"},
                                 {1, "data_sel__mec_release_mem__send_32_bit_low"},
                                 {2, "data_sel__mec_release_mem__send_64_bit_data"},
                                 {3, "data_sel__mec_release_mem__send_gpu_clock_counter"},
                                 {4, "data_sel__mec_release_mem__send_cp_perfcounter_hi_lo"},
                                 {5, "data_sel__mec_release_mem__store_gds_data_to_memory"}};
constexpr EnumName kWaitFunction[] = {{0, "ALWAYS_PASS"},
                                      {1, "LESS_THAN_REF_VALUE"},
                                      {2, "LESS_THAN_EQUAL_TO_THE_REF_VALUE"},
                                      {3, "EQUAL_TO_THE_REFERENCE_VALUE"},
                                      {4, "NOT_EQUAL_REFERENCE_VALUE"},
                                      {5, "GREATER_THAN_OR_EQUAL_REFERENCE_VALUE"},
                                      {6, "GREATER_THAN_REFERENCE_VALUE"}};
constexpr EnumName kMemSpace[] = {{0, "REGISTER_SPACE"}, {1, "MEMORY_SPACE"}};
constexpr EnumName kWaitOperation[] = {{0, "WAIT_REG_MEM"}, {1, "WR_WAIT_WR_REG"}, {3, "WAIT_MEM_PREEMPTABLE"}};
constexpr EnumName kWriteDataDstSel[] = {{0, "MEM_MAPPED_REGISTER"}, {3, "GDS"}, {5, "MEMORY"},
                                         {6, "MEMORY_MAPPED_ADC_PERSISTENT_STATE"}};
constexpr EnumName kCopyDataSel[] = {{0, "MEM_MAPPED_REGISTER"}, {2, "TC_L2"}, {3, "GDS"}, {4, "PERFCOUNTERS"},
                                     {5, "IMMEDIATE_DATA"}, {6, "ATOMIC_RETURN_DATA"}, {9, "GPU_CLOCK_COUNT"},
                                     {10, "SYSTEM_CLOCK_COUNT"}};

// ---- shared layouts ----
constexpr Field kWaitCommon[] = {
    {"function", 1, 0, 3, kWaitFunction},  {"mem_space", 1, 4, 2, kMemSpace},
    {"operation", 1, 6, 2, kWaitOperation}, {"engine_sel", 1, 8, 2},
    {"cache_policy", 1, 25, 2},
};
constexpr Field kWaitMemFields[] = {
    kWaitCommon[0], kWaitCommon[1], kWaitCommon[2], kWaitCommon[3], kWaitCommon[4],
    {"poll_address", 2, 0, 64},    {"reference", 4, 0, 32}, {"mask", 5, 0, 32},
    {"poll_interval", 6, 0, 16},   {"optimize_ace_offload_mode", 6, 31, 1},
};
constexpr Field kWaitRegFields[] = {
    kWaitCommon[0], kWaitCommon[1], kWaitCommon[2], kWaitCommon[3], kWaitCommon[4],
    {"poll_reg", 2, 0, 18},        {"write_reg2", 3, 0, 18}, {"reference", 4, 0, 32}, {"mask", 5, 0, 32},
    {"poll_interval", 6, 0, 16},   {"optimize_ace_offload_mode", 6, 31, 1},
};
constexpr Field kIbFields[] = {
    {"ib_base", 1, 0, 64}, {"ib_size", 3, 0, 20}, {"chain", 3, 20, 1},       {"offload_polling", 3, 21, 1},
    {"valid", 3, 23, 1},   {"vmid", 3, 24, 4},    {"cache_policy", 3, 28, 2}, {"priv", 3, 31, 1},
};
constexpr Field kEventWriteFields[] = {{"event_type", 1, 0, 6, kEventTypes}, {"event_index", 1, 8, 4}};
constexpr Field kDispatchDirectFields[] = {
    {"dim_x", 1, 0, 32}, {"dim_y", 2, 0, 32}, {"dim_z", 3, 0, 32}, {"dispatch_initiator", 4, 0, 32}};
constexpr Field kSetShRegFields[] = {{"reg_offset", 1, 0, 16}, {"vmid_shift", 1, 23, 5}, {"index", 1, 28, 4}};
constexpr Field kWriteDataFields[] = {{"dst_sel", 1, 8, 4, kWriteDataDstSel},
                                      {"addr_incr", 1, 16, 1},
                                      {"wr_confirm", 1, 20, 1},
                                      {"cache_policy", 1, 25, 2},
                                      {"dst_addr", 2, 0, 64}};
constexpr Field kCopyDataFields[] = {{"src_sel", 1, 0, 4, kCopyDataSel}, {"dst_sel", 1, 8, 4, kCopyDataSel},
                                     {"count_sel", 1, 16, 1},            {"wr_confirm", 1, 20, 1},
                                     {"src_addr", 2, 0, 64},             {"dst_addr", 4, 0, 64}};
// PRED_EXEC: the next exec_count dwords run only on the XCCs selected by the mask (multi-XCC parts).
constexpr Field kPredExecFields[] = {{"exec_count", 1, 0, 14}, {"device_select", 1, 24, 8}};

// ---- RELEASE_MEM: 8 dwords in both dialects; dword 1 differs in its cache bits ----
#define HCQ_RELEASE_MEM_TAIL                                                                                   \
  {"dst_sel", 2, 16, 2, kDstSel}, {"int_sel", 2, 24, 3, kIntSel}, {"data_sel", 2, 29, 3, kDataSel},            \
      {"address", 3, 0, 64}, {"data", 5, 0, 64}, {"int_ctxid", 7, 0, 32}

constexpr Field kReleaseMem10[] = {
    {"event_type", 1, 0, 6, kEventTypes}, {"event_index", 1, 8, 4, kReleaseEventIndex},
    {"GCR_GLM_WB", 1, 12, 1},   {"GCR_GLM_INV", 1, 13, 1},  {"GCR_GLV_INV", 1, 14, 1},
    {"GCR_GL1_INV", 1, 15, 1},  {"GCR_GL2_US", 1, 16, 1},   {"GCR_GL2_RANGE", 1, 17, 2},
    {"GCR_GL2_DISCARD", 1, 19, 1}, {"GCR_GL2_INV", 1, 20, 1}, {"GCR_GL2_WB", 1, 21, 1},
    {"GCR_SEQ", 1, 22, 2},      {"cache_policy", 1, 25, 2}, {"execute", 1, 28, 1},
    {"PWS_ENABLE", 1, 31, 1},  // GC 11+ (the graphics ME's pixel-wait-sync); reserved on GC 10
    HCQ_RELEASE_MEM_TAIL};
constexpr Field kReleaseMem9[] = {
    {"event_type", 1, 0, 6, kEventTypes}, {"event_index", 1, 8, 4, kReleaseEventIndex},
    {"EOP_TCL1_VOL_ACTION_EN", 1, 12, 1}, {"EOP_TC_VOL_ACTION_EN", 1, 13, 1}, {"EOP_TC_WB_ACTION_EN", 1, 15, 1},
    {"EOP_TCL1_ACTION_EN", 1, 16, 1},     {"EOP_TC_ACTION_EN", 1, 17, 1},     {"EOP_TC_NC_ACTION_EN", 1, 19, 1},
    {"EOP_TC_WC_ACTION_EN", 1, 20, 1},    {"EOP_TC_MD_ACTION_EN", 1, 21, 1},  {"cache_policy", 1, 25, 2},
    {"execute", 1, 28, 1},
    HCQ_RELEASE_MEM_TAIL};
#undef HCQ_RELEASE_MEM_TAIL

// ---- ACQUIRE_MEM ----
// GC 10+: 8 dwords, cache control in GCR_CNTL (dword 7). COHER_SIZE_HI is 8 bits wide: the size is counted in
// 256-byte units, 40 bits in all.
constexpr Field kAcquireMem10[] = {
    {"coher_cntl", 1, 0, 32},   {"coher_size_lo", 2, 0, 32}, {"coher_size_hi", 3, 0, 8},
    {"coher_base", 4, 0, 64},   {"poll_interval", 6, 0, 16}, {"gcr_cntl", 7, 0, 19},
    {"GLI_INV", 7, 0, 2},       {"GL1_RANGE", 7, 2, 2},      {"GLM_WB", 7, 4, 1},
    {"GLM_INV", 7, 5, 1},       {"GLK_WB", 7, 6, 1},         {"GLK_INV", 7, 7, 1},
    {"GLV_INV", 7, 8, 1},       {"GL1_INV", 7, 9, 1},        {"GL2_US", 7, 10, 1},
    {"GL2_RANGE", 7, 11, 2},    {"GL2_DISCARD", 7, 13, 1},   {"GL2_INV", 7, 14, 1},
    {"GL2_WB", 7, 15, 1},       {"SEQ", 7, 16, 2},           {"RANGE_IS_PA", 7, 18, 1},
};
// GC 9: 7 dwords, cache control in CP_COHER_CNTL (dword 1).
constexpr Field kAcquireMem9[] = {
    {"coher_cntl", 1, 0, 32},
    {"TC_NC_ACTION_ENA", 1, 3, 1},      {"TC_WC_ACTION_ENA", 1, 4, 1},       {"TC_INV_METADATA_ACTION_ENA", 1, 5, 1},
    {"TCL1_VOL_ACTION_ENA", 1, 15, 1},  {"TC_WB_ACTION_ENA", 1, 18, 1},      {"TCL1_ACTION_ENA", 1, 22, 1},
    {"TC_ACTION_ENA", 1, 23, 1},        {"SH_KCACHE_ACTION_ENA", 1, 27, 1},  {"SH_KCACHE_VOL_ACTION_ENA", 1, 28, 1},
    {"SH_ICACHE_ACTION_ENA", 1, 29, 1}, {"SH_KCACHE_WB_ACTION_ENA", 1, 30, 1},
    {"coher_size_lo", 2, 0, 32},        {"coher_size_hi", 3, 0, 8},          {"coher_base", 4, 0, 64},
    {"poll_interval", 6, 0, 16},
};

constexpr Layout kReleaseMem10Layout{"RELEASE_MEM", 8, kReleaseMem10};
constexpr Layout kReleaseMem9Layout{"RELEASE_MEM", 8, kReleaseMem9};
constexpr Layout kAcquireMem10Layout{"ACQUIRE_MEM", 8, kAcquireMem10};
constexpr Layout kAcquireMem9Layout{"ACQUIRE_MEM", 7, kAcquireMem9};

constexpr uint32_t bit(const Layout& l, std::string_view name) { return l.find(name)->place(1); }

// The one-bit fields of dword `dword` of `l`, as a mask.
constexpr uint32_t single_bits(const Layout& l, uint8_t dword) {
  uint32_t m = 0;
  for (const Field& f : l.fields)
    if (f.dword == dword && f.width == 1) m |= static_cast<uint32_t>(f.place(1));
  return m;
}
// The bits of dword `dword` that no field of `l` covers.
constexpr uint32_t undefined_bits(const Layout& l, uint8_t dword) {
  uint32_t defined = 0;
  for (const Field& f : l.fields)
    if (f.dword == dword && !f.is64()) defined |= static_cast<uint32_t>(f.place(f.mask()));
  return ~defined;
}

}  // namespace

std::string_view opcode_name(uint32_t opcode) { return opcode < 256 ? kOpcodeIndex[opcode] : std::string_view{}; }

const VgtEvent* vgt_event(uint32_t type) {
  for (const VgtEvent& e : kVgtEvents)
    if (e.type == type) return &e;
  return nullptr;
}

const Layout kWaitRegMemMem{"WAIT_REG_MEM", 7, kWaitMemFields};
const Layout kWaitRegMemReg{"WAIT_REG_MEM", 7, kWaitRegFields};
const Layout kIndirectBuffer{"INDIRECT_BUFFER", 4, kIbFields};
const Layout kEventWrite{"EVENT_WRITE", 2, kEventWriteFields};
const Layout kDispatchDirect{"DISPATCH_DIRECT", 5, kDispatchDirectFields};
const Layout kSetShReg{"SET_SH_REG", 0, kSetShRegFields};
const Layout kWriteData{"WRITE_DATA", 0, kWriteDataFields};
const Layout kCopyData{"COPY_DATA", 6, kCopyDataFields};
const Layout kPredExec{"PRED_EXEC", 2, kPredExecFields};

// Signal flush on GC 10+: write back and invalidate GLM, invalidate GLV/GL1, write back + invalidate GL2, in sequence
// (what Linux's gfx_v11_0 fence and tinygrad both emit). On GC 9, Linux's gfx_v9 fence without "writeback only":
// TC (L2) action + TCL1 + metadata, plus TC write-back.
const Dialect kGfx10Plus{
    "gfx10+",
    &kReleaseMem10Layout,
    &kAcquireMem10Layout,
    true,
    bit(kReleaseMem10Layout, "GCR_GLM_WB") | bit(kReleaseMem10Layout, "GCR_GLM_INV") |
        bit(kReleaseMem10Layout, "GCR_GLV_INV") | bit(kReleaseMem10Layout, "GCR_GL1_INV") |
        bit(kReleaseMem10Layout, "GCR_GL2_INV") | bit(kReleaseMem10Layout, "GCR_GL2_WB") |
        kReleaseMem10Layout.find("GCR_SEQ")->place(1),
    // I$ (GLI_INV=1: invalidate all), GLM/GLK write-back + invalidate, GLV, GL1, GL2 write-back + invalidate.
    kAcquireMem10Layout.find("GLI_INV")->place(1) | bit(kAcquireMem10Layout, "GLM_WB") |
        bit(kAcquireMem10Layout, "GLM_INV") | bit(kAcquireMem10Layout, "GLK_WB") |
        bit(kAcquireMem10Layout, "GLK_INV") | bit(kAcquireMem10Layout, "GLV_INV") |
        bit(kAcquireMem10Layout, "GL1_INV") | bit(kAcquireMem10Layout, "GL2_INV") | bit(kAcquireMem10Layout, "GL2_WB"),
    bit(kAcquireMem10Layout, "GLM_WB") | bit(kAcquireMem10Layout, "GLM_INV") | bit(kAcquireMem10Layout, "GLK_WB") |
        bit(kAcquireMem10Layout, "GLK_INV") | bit(kAcquireMem10Layout, "GLV_INV") | bit(kAcquireMem10Layout, "GL1_INV"),
    0,
    bit(kReleaseMem10Layout, "GCR_GL2_WB"),
    bit(kReleaseMem10Layout, "GCR_GL2_INV"),
    bit(kAcquireMem10Layout, "GL2_WB"),
    bit(kAcquireMem10Layout, "GL2_INV"),
    undefined_bits(kReleaseMem10Layout, 1),
    ~static_cast<uint32_t>(kAcquireMem10Layout.find("gcr_cntl")->place(kAcquireMem10Layout.find("gcr_cntl")->mask())),
    // GC 9's CP_COHER_CNTL cache actions, which GC 10+ took into GCR_CNTL.
    single_bits(kAcquireMem9Layout, 1),
};
const Dialect kGfx9{
    "gfx9",
    &kReleaseMem9Layout,
    &kAcquireMem9Layout,
    false,
    bit(kReleaseMem9Layout, "EOP_TC_WB_ACTION_EN") | bit(kReleaseMem9Layout, "EOP_TCL1_ACTION_EN") |
        bit(kReleaseMem9Layout, "EOP_TC_ACTION_EN") | bit(kReleaseMem9Layout, "EOP_TC_MD_ACTION_EN"),
    bit(kAcquireMem9Layout, "SH_ICACHE_ACTION_ENA") | bit(kAcquireMem9Layout, "SH_KCACHE_ACTION_ENA") |
        bit(kAcquireMem9Layout, "TC_ACTION_ENA") | bit(kAcquireMem9Layout, "TCL1_ACTION_ENA") |
        bit(kAcquireMem9Layout, "TC_WB_ACTION_ENA"),
    bit(kAcquireMem9Layout, "SH_KCACHE_ACTION_ENA") | bit(kAcquireMem9Layout, "TCL1_ACTION_ENA"),
    0xa,
    // The TC (L2) actions (Mesa's GC 9 cache flush): TC_WB writes back; TC invalidates, and every L2 invalidate also
    // writes back first.
    bit(kReleaseMem9Layout, "EOP_TC_WB_ACTION_EN") | bit(kReleaseMem9Layout, "EOP_TC_ACTION_EN"),
    bit(kReleaseMem9Layout, "EOP_TC_ACTION_EN"),
    bit(kAcquireMem9Layout, "TC_WB_ACTION_ENA") | bit(kAcquireMem9Layout, "TC_ACTION_ENA"),
    bit(kAcquireMem9Layout, "TC_ACTION_ENA"),
    undefined_bits(kReleaseMem9Layout, 1),
    0,
    0,
};

}  // namespace hcq::amd::pm4
