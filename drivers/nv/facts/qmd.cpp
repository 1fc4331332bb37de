// The QMD field tables. Each row is NVIDIA's MW(hi:lo) for the field; an indexed row NAME(i) carries the stride and
// count and expands to NAME_0 .. NAME_{count-1}. Reserved fields are left out. V03_00 from open-gpu-doc
// classes/compute/clcbc0qmd.h (the same bits as clc6c0qmd.h and clc9c0qmd.h for every field listed here but the
// Ada/Hopper-only occupancy and SM-mask fields, which Ampere leaves reserved); V05_00 from clcdc0qmd.h (= clcec0qmd.h).
#include "nv/facts/qmd.hpp"

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "hcq/error.hpp"

namespace hcq::nv::qmd {
namespace {

struct Row {
  std::string_view name;
  uint16_t hi, lo;
  uint16_t stride = 0;  // indexed rows only
  uint8_t count = 0;
};

constexpr Row kV3Rows[] = {
    {"OUTER_PUT", 30, 0},
    {"OUTER_OVERFLOW", 31, 31},
    {"OUTER_GET", 62, 32},
    {"OUTER_STICKY_OVERFLOW", 63, 63},
    {"INNER_GET", 94, 64},
    {"INNER_OVERFLOW", 95, 95},
    {"INNER_PUT", 126, 96},
    {"INNER_STICKY_OVERFLOW", 127, 127},
    {"QMD_GROUP_ID", 133, 128},
    {"SM_GLOBAL_CACHING_ENABLE", 134, 134},
    {"RUN_CTA_IN_ONE_SM_PARTITION", 135, 135},
    {"IS_QUEUE", 136, 136},
    {"ADD_TO_HEAD_OF_QMD_GROUP_LINKED_LIST", 137, 137},
    {"REQUIRE_SCHEDULING_PCAS", 140, 140},
    {"DEPENDENCE_COUNTER", 157, 142},
    {"SELF_COPY_ON_COMPLETION", 158, 158},
    {"CIRCULAR_QUEUE_SIZE", 184, 160},
    {"DEMOTE_L2_EVICT_LAST", 185, 185},
    {"INVALIDATE_TEXTURE_HEADER_CACHE", 186, 186},
    {"INVALIDATE_TEXTURE_SAMPLER_CACHE", 187, 187},
    {"INVALIDATE_TEXTURE_DATA_CACHE", 188, 188},
    {"INVALIDATE_SHADER_DATA_CACHE", 189, 189},
    {"INVALIDATE_INSTRUCTION_CACHE", 190, 190},
    {"INVALIDATE_SHADER_CONSTANT_CACHE", 191, 191},
    {"CTA_RASTER_WIDTH_RESUME", 223, 192},
    {"CTA_RASTER_HEIGHT_RESUME", 239, 224},
    {"CTA_RASTER_DEPTH_RESUME", 255, 240},
    {"PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED", 287, 256},
    {"CIRCULAR_QUEUE_ADDR_LOWER", 319, 288},
    {"CIRCULAR_QUEUE_ADDR_UPPER", 327, 320},
    {"CIRCULAR_QUEUE_ENTRY_SIZE", 351, 336},
    {"CWD_REFERENCE_COUNT_ID", 357, 352},
    {"CWD_REFERENCE_COUNT_DELTA_MINUS_ONE", 365, 358},
    {"CWD_REFERENCE_COUNT_INCR_ENABLE", 367, 367},
    {"CWD_MEMBAR_TYPE", 369, 368},
    {"SEQUENTIALLY_RUN_CTAS", 370, 370},
    {"CWD_REFERENCE_COUNT_DECR_ENABLE", 371, 371},
    {"API_VISIBLE_CALL_LIMIT", 378, 378},
    {"SAMPLER_INDEX", 382, 382},
    {"DISABLE_AUTO_INVALIDATE", 383, 383},
    {"CTA_RASTER_WIDTH", 415, 384},
    {"CTA_RASTER_HEIGHT", 431, 416},
    {"CTA_RASTER_DEPTH", 463, 448},
    {"DEPENDENT_QMD0_POINTER", 511, 480},
    {"DEPENDENT_QMD0_ENABLE", 512, 512},
    {"DEPENDENT_QMD0_ACTION", 515, 513},
    {"DEPENDENT_QMD0_PREFETCH", 516, 516},
    {"DEPENDENT_QMD1_ENABLE", 517, 517},
    {"DEPENDENT_QMD1_ACTION", 520, 518},
    {"DEPENDENT_QMD1_PREFETCH", 521, 521},
    {"COALESCE_WAITING_PERIOD", 529, 522},
    {"QUEUE_ENTRIES_PER_CTA_LOG2", 534, 530},
    {"OCCUPANCY_THRESHOLD_SHARED_MEM", 542, 535},
    {"CTA_LAUNCH_QUEUE", 543, 543},
    {"SHARED_MEMORY_SIZE", 561, 544},
    {"MIN_SM_CONFIG_SHARED_MEM_SIZE", 567, 562},
    {"MAX_SM_CONFIG_SHARED_MEM_SIZE", 574, 569},
    {"QMD_VERSION", 579, 576},
    {"QMD_MAJOR_VERSION", 583, 580},
    {"OCCUPANCY_MAX_SHARED_MEM", 591, 584},
    {"CTA_THREAD_DIMENSION0", 607, 592},
    {"CTA_THREAD_DIMENSION1", 623, 608},
    {"CTA_THREAD_DIMENSION2", 639, 624},
    {"CONSTANT_BUFFER_VALID", 640, 640, 1, 8},
    {"REGISTER_COUNT_V", 656, 648},
    {"TARGET_SM_CONFIG_SHARED_MEM_SIZE", 662, 657},
    {"SHARED_ALLOCATION_ENABLE", 663, 663},
    {"FREE_CTA_SLOTS_EMPTY_SM", 671, 664},
    {"SM_DISABLE_MASK_LOWER", 703, 672},
    {"SM_DISABLE_MASK_UPPER", 735, 704},
    {"SHADER_LOCAL_MEMORY_LOW_SIZE", 759, 736},
    {"BARRIER_COUNT", 767, 763},
    {"RELEASE0_ADDRESS_LOWER", 799, 768},
    {"RELEASE0_ADDRESS_UPPER", 807, 800},
    {"RELEASE0_MEMBAR_TYPE", 819, 819},
    {"RELEASE0_REDUCTION_OP", 822, 820},
    {"RELEASE0_ENABLE", 823, 823},
    {"RELEASE0_REDUCTION_FORMAT", 825, 824},
    {"RELEASE0_REDUCTION_ENABLE", 826, 826},
    {"RELEASE0_TRAP_TYPE", 828, 827},
    {"RELEASE0_PAYLOAD64B", 829, 829},
    {"RELEASE0_STRUCTURE_SIZE", 831, 830},
    {"RELEASE0_PAYLOAD_LOWER", 863, 832},
    {"RELEASE0_PAYLOAD_UPPER", 895, 864},
    {"RELEASE1_ADDRESS_LOWER", 927, 896},
    {"RELEASE1_ADDRESS_UPPER", 935, 928},
    {"RELEASE1_MEMBAR_TYPE", 947, 947},
    {"RELEASE1_REDUCTION_OP", 950, 948},
    {"RELEASE1_ENABLE", 951, 951},
    {"RELEASE1_REDUCTION_FORMAT", 953, 952},
    {"RELEASE1_REDUCTION_ENABLE", 954, 954},
    {"RELEASE1_TRAP_TYPE", 956, 955},
    {"RELEASE1_PAYLOAD64B", 957, 957},
    {"RELEASE1_STRUCTURE_SIZE", 959, 958},
    {"RELEASE1_PAYLOAD_LOWER", 991, 960},
    {"RELEASE1_PAYLOAD_UPPER", 1023, 992},
    {"CONSTANT_BUFFER_ADDR_LOWER", 1055, 1024, 64, 8},
    {"CONSTANT_BUFFER_ADDR_UPPER", 1072, 1056, 64, 8},
    {"CONSTANT_BUFFER_PREFETCH_POST", 1073, 1073, 64, 8},
    {"CONSTANT_BUFFER_INVALIDATE", 1074, 1074, 64, 8},
    {"CONSTANT_BUFFER_SIZE_SHIFTED4", 1087, 1075, 64, 8},
    {"PROGRAM_ADDRESS_LOWER", 1567, 1536},
    {"PROGRAM_ADDRESS_UPPER", 1584, 1568},
    {"SHADER_LOCAL_MEMORY_HIGH_SIZE", 1623, 1600},
    {"PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED", 1640, 1632},
    {"PROGRAM_PREFETCH_SIZE", 1649, 1641},
    {"PROGRAM_PREFETCH_TYPE", 1651, 1650},
    {"SASS_VERSION", 1663, 1656},
    {"RELEASE2_ADDRESS_LOWER", 1695, 1664},
    {"RELEASE2_ADDRESS_UPPER", 1703, 1696},
    {"RELEASE2_MEMBAR_TYPE", 1715, 1715},
    {"RELEASE2_REDUCTION_OP", 1718, 1716},
    {"RELEASE2_ENABLE", 1719, 1719},
    {"RELEASE2_REDUCTION_FORMAT", 1721, 1720},
    {"RELEASE2_REDUCTION_ENABLE", 1722, 1722},
    {"RELEASE2_TRAP_TYPE", 1724, 1723},
    {"RELEASE2_PAYLOAD64B", 1725, 1725},
    {"RELEASE2_STRUCTURE_SIZE", 1727, 1726},
    {"RELEASE2_PAYLOAD_LOWER", 1759, 1728},
    {"RELEASE2_PAYLOAD_UPPER", 1791, 1760},
    {"OCCUPANCY_THRESHOLD_WARP", 1799, 1792},
    {"OCCUPANCY_MAX_WARP", 1807, 1800},
    {"OCCUPANCY_THRESHOLD_REGISTER", 1815, 1808},
    {"OCCUPANCY_MAX_REGISTER", 1823, 1816},
    {"HW_ONLY_INNER_GET", 1854, 1824},
    {"HW_ONLY_REQUIRE_SCHEDULING_PCAS", 1855, 1855},
    {"HW_ONLY_INNER_PUT", 1886, 1856},
    {"HW_ONLY_SPAN_LIST_HEAD_INDEX", 1917, 1888},
    {"HW_ONLY_SPAN_LIST_HEAD_INDEX_VALID", 1919, 1919},
    {"HW_ONLY_SKED_NEXT_QMD_POINTER", 1951, 1920},
    {"HW_ONLY_DEPENDENCE_COUNTER", 1967, 1952},
    {"DEBUG_ID_UPPER", 2015, 1984},
    {"DEBUG_ID_LOWER", 2047, 2016},
};

constexpr Row kV5Rows[] = {
    {"HW_ONLY_SPAN_LIST_HEAD_INDEX", 29, 0},
    {"HW_ONLY_SPAN_LIST_HEAD_INDEX_VALID", 30, 30},
    {"HW_ONLY_REQUIRE_SCHEDULING_PCAS", 31, 31},
    {"HW_ONLY_SKED_NEXT_QMD_POINTER", 63, 32},
    {"INNER_GET", 94, 64},
    {"INNER_OVERFLOW", 95, 95},
    {"INNER_PUT", 126, 96},
    {"INNER_STICKY_OVERFLOW", 127, 127},
    {"DEPENDENCE_COUNTER", 143, 128},
    {"QMD_GROUP_ID", 149, 144},
    {"ADD_TO_HEAD_OF_QMD_GROUP_LINKED_LIST", 150, 150},
    {"QMD_TYPE", 153, 151},
    {"NUM_SUB_TASKS_PER_TASK", 157, 154},
    {"REQUIRE_SCHEDULING_PCAS", 158, 158},
    {"TPC_DISABLE_MASK_VALID", 159, 159},
    {"CIRCULAR_QUEUE_SIZE", 184, 160},
    {"HW_ONLY_DEPENDENCE_COUNTER", 207, 192},
    {"RESUME_SUB_TASK_ID", 210, 208},
    {"COMPLETED_SUB_TASK_MASK", 218, 211},
    {"GRID_WIDTH_RESUME", 255, 224},
    {"GRID_HEIGHT_RESUME", 271, 256},
    {"GRID_DEPTH_RESUME", 287, 272},
    {"RELEASE_ENABLE", 288, 288, 16, 3},
    {"RELEASE_STRUCTURE_SIZE", 290, 289, 16, 3},
    {"RELEASE_MEMBAR_TYPE", 291, 291, 16, 3},
    {"RELEASE_REDUCTION_ENABLE", 292, 292, 16, 3},
    {"RELEASE_REDUCTION_OP", 295, 293, 16, 3},
    {"RELEASE_REDUCTION_FORMAT", 297, 296, 16, 3},
    {"RELEASE_TRAP_TYPE", 299, 298, 16, 3},
    {"RELEASE_PAYLOAD64B", 300, 300, 16, 3},
    {"DEPENDENT_QMD0_ENABLE", 336, 336},
    {"DEPENDENT_QMD0_ACTION", 339, 337},
    {"DEPENDENT_QMD0_PREFETCH", 340, 340},
    {"SELF_COPY_ON_COMPLETION", 341, 341},
    {"DEMOTE_L2_EVICT_LAST", 342, 342},
    {"DISABLE_AUTO_INVALIDATE", 343, 343},
    {"DEPENDENT_QMD1_ENABLE", 344, 344},
    {"DEPENDENT_QMD1_ACTION", 347, 345},
    {"DEPENDENT_QMD1_PREFETCH", 348, 348},
    {"CORRELATION_ID_INTERNAL", 349, 349},
    {"CWD_MEMBAR_TASK_CHASING_ENABLE", 350, 350},
    {"SHARED_ALLOCATION_ENABLE", 351, 351},
    {"CORRELATION_ID", 383, 352},
    {"DEPENDENT_QMD0_POINTER", 415, 384},
    {"DEPENDENT_QMD1_POINTER", 447, 416},
    {"SASS_VERSION", 455, 448},
    {"API_VISIBLE_CALL_LIMIT", 456, 456},
    {"SAMPLER_INDEX", 457, 457},
    {"CONSTANT_BANK_PREFETCH_PRE_MAX_SIZE_SHIFTED8", 463, 458},
    {"QMD_MINOR_VERSION", 467, 464},
    {"QMD_MAJOR_VERSION", 471, 468},
    {"INVALIDATE_TEXTURE_HEADER_CACHE", 472, 472},
    {"INVALIDATE_TEXTURE_SAMPLER_CACHE", 473, 473},
    {"INVALIDATE_TEXTURE_DATA_CACHE", 474, 474},
    {"INVALIDATE_SHADER_DATA_CACHE", 475, 475},
    {"INVALIDATE_INSTRUCTION_CACHE", 476, 476},
    {"INVALIDATE_SHADER_CONSTANT_CACHE", 477, 477},
    {"LATCH_ACQUIRE_INVALIDATE_SHADER_DATA_CACHE", 478, 478},
    {"LATCH_ACQUIRE_INVALIDATE_TEXTURE_DATA_CACHE", 479, 479},
    {"RELEASE_SEMAPHORE0_ADDR_LOWER", 511, 480},
    {"RELEASE_SEMAPHORE0_ADDR_UPPER", 536, 512},
    {"RELEASE_SEMAPHORE0_PAYLOAD_LOWER", 575, 544},
    {"RELEASE_SEMAPHORE0_PAYLOAD_UPPER", 607, 576},
    {"CWD_REFERENCE_COUNT_DELTA_MINUS_ONE", 615, 608},
    {"CWD_REFERENCE_COUNT_ID", 621, 616},
    {"CWD_REFERENCE_COUNT_INCR_ENABLE", 622, 622},
    {"CWD_REFERENCE_COUNT_DECR_ENABLE", 623, 623},
    {"CWD_MEMBAR_TYPE", 625, 624},
    {"LATCH_ACQUIRE_INVALIDATE_CONSTANT_CACHE", 626, 626},
    {"CTA_LAUNCH_QUEUE", 627, 627},
    {"FREE_CTA_SLOTS_EMPTY_SM", 635, 628},
    {"SYNC_DOMAIN_ID", 637, 636},
    {"PRE_EXIT_AT_LAST_CTA_LAUNCH", 638, 638},
    {"ENABLE_PROGRAM_PRE_EXIT", 639, 639},
    {"ARRIVE_AT_LATCH_ID", 671, 640},
    {"WAIT_ON_LATCH_ID", 703, 672},
    {"OCCUPANCY_THRESHOLD_SHARED_MEM", 721, 714},
    {"OCCUPANCY_MAX_SHARED_MEM", 729, 722},
    {"ARRIVE_AT_LATCH_VALID", 730, 730},
    {"WAIT_ON_LATCH_VALID", 731, 731},
    {"LATCH_RELEASE_INVALIDATE_ENABLE", 732, 732},
    {"HOLD_CTA_LAUNCH_UNTIL_PARENT_LATCH_ACQUIRE_AND_CTA_COMPLETE", 733, 733},
    {"HOLD_MEMBAR_UNTIL_LATCH_ACQUIRE", 734, 734},
    {"PRIORITY_DEMOTE_UNTIL_LATCH_ACQUIRE", 735, 735},
    {"OCCUPANCY_THRESHOLD_WARP", 743, 736},
    {"OCCUPANCY_MAX_WARP", 751, 744},
    {"OCCUPANCY_THRESHOLD_REGISTER", 759, 752},
    {"OCCUPANCY_MAX_REGISTER", 767, 760},
    {"RELEASE_SEMAPHORE1_ADDR_LOWER", 799, 768},
    {"RELEASE_SEMAPHORE1_ADDR_UPPER", 824, 800},
    {"RELEASE_SEMAPHORE1_PAYLOAD_LOWER", 863, 832},
    {"RELEASE_SEMAPHORE1_PAYLOAD_UPPER", 895, 864},
    {"RELEASE_SEMAPHORE2_ADDR_LOWER", 927, 896},
    {"RELEASE_SEMAPHORE2_ADDR_UPPER", 952, 928},
    {"RELEASE_SEMAPHORE2_PAYLOAD_LOWER", 991, 960},
    {"RELEASE_SEMAPHORE2_PAYLOAD_UPPER", 1023, 992},
    {"PROGRAM_ADDRESS_LOWER_SHIFTED4", 1055, 1024},
    {"PROGRAM_ADDRESS_UPPER_SHIFTED4", 1076, 1056},
    {"PROGRAM_PREFETCH_SIZE", 1085, 1077},
    {"PROGRAM_PREFETCH_TYPE", 1087, 1086},
    {"CTA_THREAD_DIMENSION0", 1103, 1088},
    {"CTA_THREAD_DIMENSION1", 1119, 1104},
    {"CTA_THREAD_DIMENSION2", 1127, 1120},
    {"REGISTER_COUNT", 1136, 1128},
    {"BARRIER_COUNT", 1141, 1137},
    {"ICC_PREFETCH_SIZE", 1147, 1142},
    {"SHARED_MEMORY_SIZE_SHIFTED7", 1162, 1152},
    {"MIN_SM_CONFIG_SHARED_MEM_SIZE", 1168, 1163},
    {"MAX_SM_CONFIG_SHARED_MEM_SIZE", 1174, 1169},
    {"TARGET_SM_CONFIG_SHARED_MEM_SIZE", 1180, 1175},
    {"SHARED_MEM_BARRIER_INIT_ENABLE", 1181, 1181},
    {"SHADER_LOCAL_MEMORY_LOW_SIZE_SHIFTED4", 1199, 1184},
    {"SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4", 1215, 1200},
    {"VIRTUAL_RESOURCE_COUNT", 1223, 1216},
    {"GRID_WIDTH", 1279, 1248},
    {"GRID_HEIGHT", 1295, 1280},
    {"GRID_DEPTH", 1327, 1312},
    {"CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", 1375, 1344, 64, 8},
    {"CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6", 1394, 1376, 64, 8},
    {"CONSTANT_BUFFER_SIZE_SHIFTED4", 1407, 1395, 64, 8},
    {"CONSTANT_BUFFER_VALID", 1856, 1856, 4, 8},
    {"CONSTANT_BUFFER_PREFETCH", 1858, 1857, 4, 8},
    {"CONSTANT_BUFFER_INVALIDATE", 1859, 1859, 4, 8},
    {"PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED", 1919, 1888},
    {"PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED", 1936, 1920},
    {"GPC_CGA_WIDTH", 2053, 2048},
    {"GPC_CGA_HEIGHT", 2061, 2056},
    {"GPC_CGA_DEPTH", 2069, 2064},
    {"LARGE_GPC_CGA_WIDTH_MINUS_ONE", 2075, 2072},
    {"LARGE_GPC_CGA_HEIGHT_MINUS_ONE", 2079, 2076},
    {"CGA_CTA_DISTRIBUTION_MODE", 2111, 2111},
    {"GPU_CGA_WIDTH", 2127, 2112},
    {"GPU_CGA_HEIGHT", 2143, 2128},
    {"GPU_CGA_DEPTH", 2159, 2144},
    {"DEBUG_ID_LOWER", 2207, 2176},
    {"DEBUG_ID_UPPER", 2239, 2208},
    {"TPC_DISABLE_MASK", 2271, 2240, 32, 8},
    {"INCOMPLETE_BOX_BASE_WIDTH_RESUME", 2527, 2496},
    {"INCOMPLETE_BOX_BASE_HEIGHT_RESUME", 2543, 2528},
    {"INCOMPLETE_BOX_BASE_DEPTH_RESUME", 2559, 2544},
    {"INCOMPLETE_BOX_OFFSET_WIDTH_RESUME", 2563, 2560},
    {"INCOMPLETE_BOX_OFFSET_HEIGHT_RESUME", 2567, 2564},
    {"QUEUE_ENTRIES_PER_CTA_LOG2", 2596, 2592},
    {"HW_ONLY_INNER_GET", 2654, 2624},
    {"HW_ONLY_INNER_PUT", 2686, 2656},
    {"OUTER_PUT", 3038, 3008},
    {"OUTER_OVERFLOW", 3039, 3039},
    {"OUTER_GET", 3070, 3040},
    {"OUTER_STICKY_OVERFLOW", 3071, 3071},
};

// Enum names of the fields hcq sets or a reader wants spelled out.
constexpr EnumName kFalseTrue[] = {{0, "FALSE"}, {1, "TRUE"}};
constexpr EnumName kCwdMembar[] = {{0, "L1_NONE"}, {1, "L1_SYSMEMBAR"}, {3, "L1_MEMBAR"}};
constexpr EnumName kSamplerIndex[] = {{0, "INDEPENDENTLY"}, {1, "VIA_HEADER_INDEX"}};
constexpr EnumName kCallLimit[] = {{0, "_32"}, {1, "NO_CHECK"}};
constexpr EnumName kDependentAction[] = {
    {0, "QMD_INCREMENT_PUT"}, {1, "QMD_SCHEDULE"}, {3, "QMD_INVALIDATE_COPY_SCHEDULE"}, {4, "QMD_DECREMENT_DEPENDENCE"}};
constexpr EnumName kStructureSize[] = {
    {0, "SEMAPHORE_FOUR_WORDS"}, {1, "SEMAPHORE_ONE_WORD"}, {2, "SEMAPHORE_TWO_WORDS"}};
constexpr EnumName kReleaseMembar[] = {{0, "FE_NONE"}, {1, "FE_SYSMEMBAR"}};
constexpr EnumName kRedOp[] = {{0, "RED_ADD"}, {1, "RED_MIN"}, {2, "RED_MAX"}, {3, "RED_INC"},
                               {4, "RED_DEC"}, {5, "RED_AND"}, {6, "RED_OR"},  {7, "RED_XOR"}};
constexpr EnumName kRedFormat[] = {{0, "UNSIGNED"}, {1, "SIGNED"}};
constexpr EnumName kPrefetchType[] = {{0, "PREFETCH_LAUNCH"}, {1, "PREFTECH_POST"}};
constexpr EnumName kQmdType[] = {{0, "QUEUE"},         {1, "GRID_NULL"},    {2, "GRID_CTA"},
                                 {3, "GRID_GPC_CGA"},  {4, "GRID_GPU_CGA"}, {5, "GRID_GPU_GPC_CGA"}};

// Which enum list a field takes, by the field's name with any release index (RELEASE0_, RELEASE_..._0) removed.
std::span<const EnumName> enums_for(std::string_view base) {
  auto ends = [&](std::string_view s) { return base.ends_with(s); };
  if (ends("_ENABLE") || ends("_VALID") || ends("_INVALIDATE") || ends("_PAYLOAD64B") || ends("_PREFETCH") ||
      base.starts_with("INVALIDATE_") || base == "SM_GLOBAL_CACHING_ENABLE")
    return kFalseTrue;
  if (base == "SAMPLER_INDEX") return kSamplerIndex;
  if (base == "CWD_MEMBAR_TYPE") return kCwdMembar;
  if (base == "API_VISIBLE_CALL_LIMIT") return kCallLimit;
  if (ends("_ACTION")) return kDependentAction;
  if (ends("STRUCTURE_SIZE")) return kStructureSize;
  if (base.starts_with("RELEASE") && ends("MEMBAR_TYPE")) return kReleaseMembar;
  if (ends("REDUCTION_OP")) return kRedOp;
  if (ends("REDUCTION_FORMAT")) return kRedFormat;
  if (base == "PROGRAM_PREFETCH_TYPE") return kPrefetchType;
  if (base == "QMD_TYPE") return kQmdType;
  return {};
}

// A layout built once from its rows: names of indexed fields are owned by `names`.
struct Built {
  std::deque<std::string> names;
  std::vector<BitField> fields;
  QmdLayout layout{};
};

void add(Built& b, std::string_view name, uint16_t hi, uint16_t lo, std::span<const EnumName> enums) {
  b.fields.push_back(BitField{name, lo, static_cast<uint8_t>(hi - lo + 1), enums});
}

const BitField* need(const QmdLayout& l, std::string_view name) {
  if (const BitField* f = l.find(name)) return f;
  throw InvalidArgument(cat("QMD V", int(l.major_version), " table has no field ", name));  // a table bug
}

std::string indexed(std::string_view base, uint32_t i) { return cat(base, "_", i); }

void build_roles_v3(Built& b) {
  QmdLayout& l = b.layout;
  QmdRoles& r = l.roles;
  auto f = [&](std::string_view n) { return need(l, n); };
  r.major_version = f("QMD_MAJOR_VERSION");
  r.minor_version = f("QMD_VERSION");
  r.qmd_type = nullptr;
  r.qmd_group_id = f("QMD_GROUP_ID");
  r.sm_global_caching_enable = f("SM_GLOBAL_CACHING_ENABLE");
  r.program_address_lower = f("PROGRAM_ADDRESS_LOWER");
  r.program_address_upper = f("PROGRAM_ADDRESS_UPPER");
  r.program_address_shift = 0;
  r.grid = {f("CTA_RASTER_WIDTH"), f("CTA_RASTER_HEIGHT"), f("CTA_RASTER_DEPTH")};
  r.shared_memory_size = f("SHARED_MEMORY_SIZE");
  r.shared_memory_shift = 0;
  r.register_count = f("REGISTER_COUNT_V");
  r.shader_local_memory_low_size = f("SHADER_LOCAL_MEMORY_LOW_SIZE");
  r.shader_local_memory_high_size = f("SHADER_LOCAL_MEMORY_HIGH_SIZE");
  r.local_memory_shift = 0;
  for (uint32_t i = 0; i < kConstantBuffers; ++i)
    r.cbuf[i] = {f(indexed("CONSTANT_BUFFER_ADDR_LOWER", i)), f(indexed("CONSTANT_BUFFER_ADDR_UPPER", i)),
                 f(indexed("CONSTANT_BUFFER_SIZE_SHIFTED4", i)), f(indexed("CONSTANT_BUFFER_VALID", i)),
                 f(indexed("CONSTANT_BUFFER_INVALIDATE", i))};
  r.cbuf_address_shift = 0;
  for (uint32_t i = 0; i < kReleases; ++i) {
    auto rf = [&](std::string_view suffix) { return f(cat("RELEASE", i, "_", suffix)); };
    r.release[i] = {rf("ADDRESS_LOWER"),    rf("ADDRESS_UPPER"), rf("PAYLOAD_LOWER"),    rf("PAYLOAD_UPPER"),
                    rf("ENABLE"),           rf("STRUCTURE_SIZE"), rf("PAYLOAD64B"),       rf("MEMBAR_TYPE"),
                    rf("REDUCTION_ENABLE"), rf("REDUCTION_OP"),  rf("REDUCTION_FORMAT")};
  }
}

void build_roles_v5(Built& b) {
  QmdLayout& l = b.layout;
  QmdRoles& r = l.roles;
  auto f = [&](std::string_view n) { return need(l, n); };
  r.major_version = f("QMD_MAJOR_VERSION");
  r.minor_version = f("QMD_MINOR_VERSION");
  r.qmd_type = f("QMD_TYPE");
  r.qmd_group_id = f("QMD_GROUP_ID");
  r.sm_global_caching_enable = nullptr;
  r.program_address_lower = f("PROGRAM_ADDRESS_LOWER_SHIFTED4");
  r.program_address_upper = f("PROGRAM_ADDRESS_UPPER_SHIFTED4");
  r.program_address_shift = 4;
  r.grid = {f("GRID_WIDTH"), f("GRID_HEIGHT"), f("GRID_DEPTH")};
  r.shared_memory_size = f("SHARED_MEMORY_SIZE_SHIFTED7");
  r.shared_memory_shift = 7;
  r.register_count = f("REGISTER_COUNT");
  r.shader_local_memory_low_size = f("SHADER_LOCAL_MEMORY_LOW_SIZE_SHIFTED4");
  r.shader_local_memory_high_size = f("SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4");
  r.local_memory_shift = 4;
  for (uint32_t i = 0; i < kConstantBuffers; ++i)
    r.cbuf[i] = {f(indexed("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", i)),
                 f(indexed("CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6", i)), f(indexed("CONSTANT_BUFFER_SIZE_SHIFTED4", i)),
                 f(indexed("CONSTANT_BUFFER_VALID", i)), f(indexed("CONSTANT_BUFFER_INVALIDATE", i))};
  r.cbuf_address_shift = 6;
  for (uint32_t i = 0; i < kReleases; ++i) {
    auto sem = [&](std::string_view suffix) { return f(cat("RELEASE_SEMAPHORE", i, "_", suffix)); };
    auto rel = [&](std::string_view base) { return f(indexed(base, i)); };
    r.release[i] = {sem("ADDR_LOWER"),
                    sem("ADDR_UPPER"),
                    sem("PAYLOAD_LOWER"),
                    sem("PAYLOAD_UPPER"),
                    rel("RELEASE_ENABLE"),
                    rel("RELEASE_STRUCTURE_SIZE"),
                    rel("RELEASE_PAYLOAD64B"),
                    rel("RELEASE_MEMBAR_TYPE"),
                    rel("RELEASE_REDUCTION_ENABLE"),
                    rel("RELEASE_REDUCTION_OP"),
                    rel("RELEASE_REDUCTION_FORMAT")};
  }
}

// Roles named alike in both versions.
void build_common_roles(Built& b) {
  QmdLayout& l = b.layout;
  QmdRoles& r = l.roles;
  auto f = [&](std::string_view n) { return need(l, n); };
  r.program_prefetch_addr_lower_shifted = f("PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED");
  r.program_prefetch_addr_upper_shifted = f("PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED");
  r.program_prefetch_size = f("PROGRAM_PREFETCH_SIZE");
  r.program_prefetch_type = f("PROGRAM_PREFETCH_TYPE");
  r.block = {f("CTA_THREAD_DIMENSION0"), f("CTA_THREAD_DIMENSION1"), f("CTA_THREAD_DIMENSION2")};
  r.min_sm_config_shared_mem_size = f("MIN_SM_CONFIG_SHARED_MEM_SIZE");
  r.max_sm_config_shared_mem_size = f("MAX_SM_CONFIG_SHARED_MEM_SIZE");
  r.target_sm_config_shared_mem_size = f("TARGET_SM_CONFIG_SHARED_MEM_SIZE");
  r.barrier_count = f("BARRIER_COUNT");
  r.dependent_qmd0_pointer = f("DEPENDENT_QMD0_POINTER");
  r.dependent_qmd0_enable = f("DEPENDENT_QMD0_ENABLE");
  r.dependent_qmd0_action = f("DEPENDENT_QMD0_ACTION");
  r.dependent_qmd0_prefetch = f("DEPENDENT_QMD0_PREFETCH");
  r.invalidate_texture_header_cache = f("INVALIDATE_TEXTURE_HEADER_CACHE");
  r.invalidate_texture_sampler_cache = f("INVALIDATE_TEXTURE_SAMPLER_CACHE");
  r.invalidate_texture_data_cache = f("INVALIDATE_TEXTURE_DATA_CACHE");
  r.invalidate_shader_data_cache = f("INVALIDATE_SHADER_DATA_CACHE");
  r.invalidate_instruction_cache = f("INVALIDATE_INSTRUCTION_CACHE");
  r.invalidate_shader_constant_cache = f("INVALIDATE_SHADER_CONSTANT_CACHE");
  r.cwd_membar_type = f("CWD_MEMBAR_TYPE");
  r.sass_version = f("SASS_VERSION");
  r.api_visible_call_limit = f("API_VISIBLE_CALL_LIMIT");
  r.sampler_index = f("SAMPLER_INDEX");
}

// The base name an indexed V5 release field is matched against enums by ("RELEASE_ENABLE"), and a V3 one
// ("RELEASE0_ENABLE" -> "RELEASE_ENABLE") so both versions get the same names.
std::string enum_key(std::string_view name) {
  std::string s(name);
  if (s.starts_with("RELEASE") && s.size() > 7 && s[7] >= '0' && s[7] <= '9') s.erase(7, 1);
  return s;
}

Built build(uint8_t major, uint32_t size_words, std::string_view prefix, std::span<const Row> rows) {
  Built b;
  for (const Row& row : rows) {
    if (row.count == 0) {
      add(b, row.name, row.hi, row.lo, enums_for(enum_key(row.name)));
      continue;
    }
    for (uint32_t i = 0; i < row.count; ++i) {
      b.names.push_back(indexed(row.name, i));
      add(b, b.names.back(), static_cast<uint16_t>(row.hi + i * row.stride),
          static_cast<uint16_t>(row.lo + i * row.stride), enums_for(row.name));
    }
  }
  std::stable_sort(b.fields.begin(), b.fields.end(), [](const BitField& x, const BitField& y) { return x.lo < y.lo; });
  b.layout.major_version = major;
  b.layout.minor_version = 0;
  b.layout.size_words = size_words;
  b.layout.prefix = prefix;
  b.layout.fields = b.fields;
  return b;
}

// The built layouts are allocated once and never destroyed (still reachable through their static
// pointers at exit, so not a leak to LeakSanitizer). Devices encode and decode QMDs until the process's very end: the
// device registry's exit-time destructor synchronizes every device, and a wait that times out describes the channels.
// The registry is made before these (at the first device open), so it is destroyed after them; a static Built would
// be freed under its feet.
const Built& v3() {
  static const Built* const b = [] {
    auto* x = new Built(build(3, 64, "NVC6C0_QMDV03_00", kV3Rows));  // never destroyed (see above)
    build_roles_v3(*x);
    build_common_roles(*x);
    return x;
  }();
  return *b;
}

const Built& v5() {
  static const Built* const b = [] {
    auto* x = new Built(build(5, 96, "NVCDC0_QMDV05_00", kV5Rows));  // never destroyed (see above)
    build_roles_v5(*x);
    build_common_roles(*x);
    return x;
  }();
  return *b;
}

}  // namespace

const BitField* QmdLayout::find(std::string_view name) const {
  for (const BitField& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

const QmdLayout& layout(uint32_t major_version) {
  if (major_version == 3) return v3().layout;
  if (major_version == 5) return v5().layout;
  throw InvalidArgument(cat("QMD major version ", major_version, " is not supported (3: Ampere/Ada/Hopper, 5: Blackwell)"));
}

void throw_beyond(size_t words, const BitField& f) {
  throw InvalidArgument(cat("QMD field ", f.name, " (bits ", f.hi(), ":", f.lo, ") lies beyond the ", words,
                            "-dword QMD given"));
}

void throw_too_wide(const BitField& f, uint64_t value) {
  throw InvalidArgument(cat("QMD field ", f.name, " is ", int(f.width), " bits wide; ", hex(value), " does not fit"));
}

uint32_t detect_version(std::span<const uint32_t> words) {
  if (words.size() < 64) return 0;
  // V3 leaves bits 479:464 reserved, so a 5 in V5's QMD_MAJOR_VERSION (471:468) means V5.
  if (words.size() >= 96 && get(words, *v5().layout.roles.major_version) == 5) return 5;
  if (get(words, *v3().layout.roles.major_version) == 3) return 3;
  return 0;
}

}  // namespace hcq::nv::qmd
