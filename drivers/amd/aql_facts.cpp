// AQL packet layouts as data (hsa_kernel_dispatch_packet_t, hsa_barrier_and_packet_t from the HSA runtime header;
// the PM4-IB vendor packet from ROCr's amd_aql_pm4_ib_packet_t, as tinygrad builds it).
#include "amd/aql_facts.hpp"

namespace hcq::amd::aql {
namespace {

constexpr EnumName kTypes[] = {{0, "VENDOR_SPECIFIC"}, {1, "INVALID"},        {2, "KERNEL_DISPATCH"},
                               {3, "BARRIER_AND"},     {4, "AGENT_DISPATCH"}, {5, "BARRIER_OR"}};
constexpr EnumName kScopes[] = {{0, "NONE"}, {1, "AGENT"}, {2, "SYSTEM"}};

#define HCQ_AQL_HEADER                                                                          \
  Field{"type", 0, 0, 8, kTypes}, Field{"barrier", 0, 8, 1}, Field{"acquire_fence_scope", 0, 9, 2, kScopes}, \
      Field {                                                                                   \
    "release_fence_scope", 0, 11, 2, kScopes                                                    \
  }

constexpr Field kDispatch[] = {HCQ_AQL_HEADER,
                               {"dimensions", 0, 16, 2},
                               {"workgroup_size_x", 1, 0, 16},
                               {"workgroup_size_y", 1, 16, 16},
                               {"workgroup_size_z", 2, 0, 16},
                               {"grid_size_x", 3, 0, 32},
                               {"grid_size_y", 4, 0, 32},
                               {"grid_size_z", 5, 0, 32},
                               {"private_segment_size", 6, 0, 32},
                               {"group_segment_size", 7, 0, 32},
                               {"kernel_object", 8, 0, 64},
                               {"kernarg_address", 10, 0, 64},
                               {"completion_signal", 14, 0, 64}};
constexpr Field kBarrierFields[] = {HCQ_AQL_HEADER,         {"dep_signal0", 2, 0, 64}, {"dep_signal1", 4, 0, 64},
                              {"dep_signal2", 6, 0, 64}, {"dep_signal3", 8, 0, 64}, {"dep_signal4", 10, 0, 64},
                              {"completion_signal", 14, 0, 64}};
constexpr Field kPm4Ib[] = {HCQ_AQL_HEADER,
                            {"vendor_format", 0, 16, 16},
                            {"ib_header", 1, 0, 32},
                            {"ib_base", 2, 0, 64},
                            {"ib_size", 4, 0, 20},
                            {"ib_valid", 4, 23, 1},
                            {"dw_count_remain", 5, 0, 32},
                            {"completion_signal", 14, 0, 64}};
#undef HCQ_AQL_HEADER

constexpr EnumName kQueueProperties[] = {{2, "IS_PTR64"}};
constexpr Field kAmdQueueFields[] = {{"write_dispatch_id", 14, 0, 64},
                                     {"max_cu_id", 18, 0, 32},
                                     {"max_wave_id", 19, 0, 32},
                                     {"read_dispatch_id", 32, 0, 64},
                                     {"read_dispatch_id_field_base_byte_offset", 34, 0, 32},
                                     {"compute_tmpring_size", 35, 0, 32},
                                     {"scratch_resource_descriptor0", 36, 0, 32},
                                     {"scratch_resource_descriptor1", 37, 0, 32},
                                     {"scratch_resource_descriptor2", 38, 0, 32},
                                     {"scratch_resource_descriptor3", 39, 0, 32},
                                     {"scratch_backing_memory_location", 40, 0, 64},
                                     {"scratch_backing_memory_byte_size", 42, 0, 64},
                                     {"scratch_wave64_lane_byte_size", 44, 0, 32},
                                     {"queue_properties", 45, 0, 32, kQueueProperties}};

}  // namespace

std::string_view type_name(uint32_t type) {
  for (const EnumName& e : kTypes)
    if (e.value == type) return e.name;
  return {};
}

const Layout kKernelDispatch{"KERNEL_DISPATCH", kPacketWords, kDispatch};
const Layout kBarrierAnd{"BARRIER_AND", kPacketWords, kBarrierFields};
const Layout kBarrierOr{"BARRIER_OR", kPacketWords, kBarrierFields};
const Layout kVendorPm4Ib{"PM4_IB", kPacketWords, kPm4Ib};
const Layout kAmdQueue{"amd_queue_t", kAmdQueueBytes / 4, kAmdQueueFields};

}  // namespace hcq::amd::aql
