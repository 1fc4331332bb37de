// SDMA facts as data. Field positions are AMD's (Linux vega10_sdma_pkt_open.h for SDMA 4, sdma_v6_0_0_pkt_open.h for
// SDMA 6, as tabulated in tinygrad's autogen/am/sdma_4_0_0.py and sdma_6_0_0.py). SDMA 7.0 is taken to share SDMA 6's
// layouts for the packets below; the fields we set are the same, and the decoder names the rest as reserved.
#include "amd/sdma_facts.hpp"

namespace hcq::amd::sdma {
namespace {

constexpr EnumName kOpNames[] = {{0, "NOP"},          {1, "COPY"},        {2, "WRITE"},      {4, "INDIRECT"},
                                 {5, "FENCE"},        {6, "TRAP"},        {7, "SEM"},        {8, "POLL_REGMEM"},
                                 {9, "COND_EXE"},     {10, "ATOMIC"},     {11, "CONST_FILL"}, {12, "PTEPDE"},
                                 {13, "TIMESTAMP"},   {14, "SRBM_WRITE"}, {15, "PRE_EXE"},   {17, "GCR_REQ"}};
constexpr EnumName kPollFunc[] = {{0, "ALWAYS"}, {1, "LT"}, {2, "LE"}, {3, "EQ"}, {4, "NE"}, {5, "GE"}, {6, "GT"}};
constexpr EnumName kTimestampSub[] = {{0, "SET"}, {1, "GET"}, {2, "GET_GLOBAL"}};

constexpr Field kSubOp{"sub_op", 0, 8, 8};
constexpr Field kSubOpTs{"sub_op", 0, 8, 8, kTimestampSub};

// ---- SDMA 4 (vega10 layouts) ----
constexpr Field kNop4[] = {kSubOp, {"count", 0, 16, 14}};
constexpr Field kCopy4[] = {kSubOp,
                            {"encrypt", 0, 16, 1},
                            {"tmz", 0, 18, 1},
                            {"broadcast", 0, 27, 1},
                            {"count", 1, 0, 22},
                            {"dst_sw", 2, 16, 2},
                            {"src_sw", 2, 24, 2},
                            {"src_addr", 3, 0, 64},
                            {"dst_addr", 5, 0, 64}};
constexpr Field kWrite4[] = {kSubOp, {"dst_addr", 1, 0, 64}, {"count", 3, 0, 20}};
constexpr Field kFence4[] = {kSubOp, {"addr", 1, 0, 64}, {"data", 3, 0, 32}};
constexpr Field kTrap[] = {kSubOp, {"int_context", 1, 0, 28}};
constexpr Field kPoll4[] = {kSubOp,
                            {"hdp_flush", 0, 26, 1},
                            {"func", 0, 28, 3, kPollFunc},
                            {"mem_poll", 0, 31, 1},
                            {"addr", 1, 0, 64},
                            {"value", 3, 0, 32},
                            {"mask", 4, 0, 32},
                            {"interval", 5, 0, 16},
                            {"retry_count", 5, 16, 12}};
// TIMESTAMP: the address's low 3 bits are not stored (write_addr_31_3); we read it back as a whole 64-bit address.
constexpr Field kTimestamp4[] = {kSubOpTs, {"write_addr", 1, 0, 64}};
constexpr Field kIndirect[] = {kSubOp,
                               {"vmid", 0, 16, 4},
                               {"priv", 0, 31, 1},
                               {"base", 1, 0, 64},
                               {"ib_size", 3, 0, 20},
                               {"csa_addr", 4, 0, 64}};

// ---- SDMA 6 / 7 ----
constexpr Field kCopy6[] = {kSubOp,
                            {"encrypt", 0, 16, 1},
                            {"tmz", 0, 18, 1},
                            {"cpv", 0, 19, 1},
                            {"backwards", 0, 25, 1},
                            {"broadcast", 0, 27, 1},
                            {"count", 1, 0, 30},
                            {"dst_sw", 2, 16, 2},
                            {"dst_cache_policy", 2, 18, 3},
                            {"src_sw", 2, 24, 2},
                            {"src_cache_policy", 2, 26, 3},
                            {"src_addr", 3, 0, 64},
                            {"dst_addr", 5, 0, 64}};
constexpr Field kFence6[] = {kSubOp,
                             {"mtype", 0, 16, 3},
                             {"gcc", 0, 19, 1},
                             {"sys", 0, 20, 1},
                             {"snp", 0, 22, 1},
                             {"gpa", 0, 23, 1},
                             {"l2_policy", 0, 24, 2},
                             {"llc_policy", 0, 26, 1},
                             {"cpv", 0, 28, 1},
                             {"addr", 1, 0, 64},
                             {"data", 3, 0, 32}};
constexpr Field kPoll6[] = {kSubOp,
                            {"cache_policy", 0, 20, 3},
                            {"cpv", 0, 24, 1},
                            {"hdp_flush", 0, 26, 1},
                            {"func", 0, 28, 3, kPollFunc},
                            {"mem_poll", 0, 31, 1},
                            {"addr", 1, 0, 64},
                            {"value", 3, 0, 32},
                            {"mask", 4, 0, 32},
                            {"interval", 5, 0, 16},
                            {"retry_count", 5, 16, 12}};
constexpr Field kTimestamp6[] = {kSubOpTs,
                                 {"l2_policy", 0, 24, 2},
                                 {"llc_policy", 0, 26, 1},
                                 {"cpv", 0, 28, 1},
                                 {"write_addr", 1, 0, 64}};

// GCR_REQ (sdma_v5_2_pkt_open.h, sdma_v6_0_0_pkt_open.h: SDMA_PKT_GCR_REQ): the addresses are 128-byte aligned
// (bits 47:7), the 19-bit GCR control is split as bits 15:0 in dword 2 and 18:16 in dword 3.
constexpr Field kGcrReq[] = {kSubOp,
                             {"base_va_31_7", 1, 7, 25},
                             {"base_va_47_32", 2, 0, 16},
                             {"gcr_control_15_0", 2, 16, 16},
                             {"gcr_control_18_16", 3, 0, 3},
                             {"limit_va_31_7", 3, 7, 25},
                             {"limit_va_47_32", 4, 0, 16},
                             {"vmid", 4, 24, 4}};

constexpr Layout kNop4L{"NOP", 0, kNop4};
constexpr Layout kCopy4L{"COPY_LINEAR", 7, kCopy4};
constexpr Layout kWrite4L{"WRITE_LINEAR", 0, kWrite4};
constexpr Layout kFence4L{"FENCE", 4, kFence4};
constexpr Layout kTrapL{"TRAP", 2, kTrap};
constexpr Layout kPoll4L{"POLL_REGMEM", 6, kPoll4};
constexpr Layout kTimestamp4L{"TIMESTAMP", 3, kTimestamp4};
constexpr Layout kIndirectL{"INDIRECT", 6, kIndirect};
constexpr Layout kCopy6L{"COPY_LINEAR", 7, kCopy6};
constexpr Layout kFence6L{"FENCE", 4, kFence6};
constexpr Layout kPoll6L{"POLL_REGMEM", 6, kPoll6};
constexpr Layout kTimestamp6L{"TIMESTAMP", 3, kTimestamp6};
constexpr Layout kGcrReqL{"GCR_REQ", 5, kGcrReq};

}  // namespace

std::string_view op_name(uint32_t op) {
  for (const EnumName& e : kOpNames)
    if (e.value == op) return e.name;
  return {};
}

const Dialect kSdma4{"sdma4",      &kNop4L,  &kCopy4L, &kWrite4L,          &kFence4L, &kTrapL, &kPoll4L,
                     &kTimestamp4L, &kIndirectL, nullptr, uint64_t{1} << 22, 0};
const Dialect kSdma6{"sdma6",      &kNop4L,  &kCopy6L,  &kWrite4L,          &kFence6L, &kTrapL, &kPoll6L,
                     &kTimestamp6L, &kIndirectL, &kGcrReqL, uint64_t{1} << 30, 3};
const Dialect kSdma7{"sdma7",      &kNop4L,  &kCopy6L,  &kWrite4L,          &kFence6L, &kTrapL, &kPoll6L,
                     &kTimestamp6L, &kIndirectL, &kGcrReqL, uint64_t{1} << 30, 3};

}  // namespace hcq::amd::sdma
