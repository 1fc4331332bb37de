// The method tables. Every number here is from the class header named above each block; where a later generation
// widened a field or added methods or enum values, its table is the earlier one with those differences put in
// (derive), or its own array when a field list changed in the middle.
#include "nv/facts/methods.hpp"

#include <algorithm>
#include <array>
#include <iterator>

namespace hcq::nv {

std::string_view pb::sec_op_name(uint32_t sec_op) {
  static constexpr std::array<std::string_view, 8> names{"GRP0_USE_TERT",    "INC_METHOD", "GRP2_USE_TERT",
                                                         "NON_INC_METHOD",   "IMMD_DATA_METHOD", "ONE_INC",
                                                         "RESERVED6",        "END_PB_SEGMENT"};
  return sec_op < names.size() ? names[sec_op] : std::string_view{};
}

const Method* ClassMethods::find(uint32_t offset) const {
  auto it = std::lower_bound(methods.begin(), methods.end(), offset,
                             [](const Method& m, uint32_t off) { return m.offset < off; });
  return it != methods.end() && it->offset == offset ? &*it : nullptr;
}

const Method* ClassMethods::find(std::string_view name) const {
  for (const Method& m : methods)
    if (m.name == name) return &m;
  return nullptr;
}

namespace {

// A later generation's table from an earlier one: `base` with `changes` put in, both in key order (a method's offset,
// an enum's value, a field's low bit), and so is the result (ClassMethods::find searches by offset). A change whose
// key the base has replaces that entry; any other is inserted. The caller states N, the size of the result: a table
// that does not come out at N entries, or changes out of order, do not compile.
constexpr uint32_t key(const Method& m) { return m.offset; }
constexpr uint32_t key(const EnumName& e) { return e.value; }
constexpr uint32_t key(const BitField& f) { return f.lo; }
template <size_t N, class T, size_t B, size_t C>
constexpr std::array<T, N> derive(const std::array<T, B>& base, const T (&changes)[C]) {
  for (size_t c = 1; c < C; ++c)
    if (key(changes[c - 1]) >= key(changes[c])) throw "derive: changes out of key order";
  std::array<T, N> out{};
  size_t b = 0, c = 0, n = 0;
  for (; b < B || c < C; ++n) {
    if (n == N) throw "derive: more entries than stated";
    if (c == C || (b < B && key(base[b]) < key(changes[c]))) {
      out[n] = base[b++];
      continue;
    }
    if (b < B && key(base[b]) == key(changes[c])) ++b;  // replaced
    out[n] = changes[c++];
  }
  if (n != N) throw "derive: fewer entries than stated";
  return out;
}
// `base` without the entries of the given keys (what a later generation dropped); N as for derive.
template <size_t N, class T, size_t B, size_t C>
constexpr std::array<T, N> without(const std::array<T, B>& base, const uint32_t (&keys)[C]) {
  std::array<T, N> out{};
  size_t n = 0;
  for (const T& e : base) {
    if (std::find(std::begin(keys), std::end(keys), key(e)) != std::end(keys)) continue;
    if (n == N) throw "without: more entries than stated";
    out[n++] = e;
  }
  if (n != N) throw "without: fewer entries than stated";
  return out;
}

constexpr std::array<EnumName, 2> kFalseTrue{{{0, "FALSE"}, {1, "TRUE"}}};
constexpr std::array<EnumName, 2> kDisEn{{{0, "DIS"}, {1, "EN"}}};

// ================= Host / GPFIFO (clc56f.h; clc86f.h, clc96f.h, clca6f.h) =================
constexpr std::array<EnumName, 1> kEngineSw{{{0x1f, "SW"}}};
constexpr std::array<BitField, 2> kHostSetObject{{{"NVCLASS", 0, 16}, {"ENGINE", 16, 5, kEngineSw}}};
constexpr std::array<BitField, 1> kHandle{{{"HANDLE", 0, 32}}};
constexpr std::array<EnumName, 3> kTlbInvalScope{{{0, "ALL_TLBS"}, {1, "LINK_TLBS"}, {2, "NON_LINK_TLBS"}}};
// MEM_OP_A..C carry a TLB invalidate's parameters (the TLB_INVALIDATE_* fields) or, for MEMBAR, MEMBAR_TYPE; the
// fields of the two uses overlap in MEM_OP_C, and MEM_OP_D's OPERATION says which apply: the method table keeps the
// MEMBAR reading, mem_op_c_tlb_invalidate() the other. Values the header marks reserved (INVAL_SCOPE_RSVRVD 3,
// ACCESS_TYPE_VIRT_RSVRVD 3) are left out of the enums, so they read as undefined.
constexpr std::array<BitField, 2> kMemOpA{
    {{"TLB_INVALIDATE_INVAL_SCOPE", 6, 2, kTlbInvalScope}, {"TLB_INVALIDATE_SYSMEMBAR", 11, 1, kDisEn}}};
constexpr std::array<EnumName, 2> kMembarType{{{0, "SYS_MEMBAR"}, {1, "MEMBAR"}}};
constexpr std::array<EnumName, 6> kTlbReplay{{{0, "NONE"},
                                              {1, "START"},
                                              {2, "START_ACK_ALL"},
                                              {3, "CANCEL_TARGETED"},
                                              {4, "CANCEL_GLOBAL"},
                                              {5, "CANCEL_VA_GLOBAL"}}};
constexpr std::array<EnumName, 3> kTlbAckType{{{0, "NONE"}, {1, "GLOBALLY"}, {2, "INTRANODE"}}};
constexpr std::array<EnumName, 7> kTlbAccessType{{{0, "VIRT_READ"},
                                                  {1, "VIRT_WRITE"},
                                                  {2, "VIRT_ATOMIC_STRONG"},
                                                  {4, "VIRT_ATOMIC_WEAK"},
                                                  {5, "VIRT_ATOMIC_ALL"},
                                                  {6, "VIRT_WRITE_AND_ATOMIC"},
                                                  {7, "VIRT_ALL"}}};
constexpr std::array<EnumName, 3> kTlbAperture{
    {{0, "VID_MEM"}, {2, "SYS_MEM_COHERENT"}, {3, "SYS_MEM_NONCOHERENT"}}};
constexpr std::array<BitField, 1> kMemOpC{{{"MEMBAR_TYPE", 0, 3, kMembarType}}};
constexpr std::array<BitField, 4> kMemOpCTlb{{{"TLB_INVALIDATE_REPLAY", 2, 3, kTlbReplay},
                                              {"TLB_INVALIDATE_ACK_TYPE", 5, 2, kTlbAckType},
                                              {"TLB_INVALIDATE_ACCESS_TYPE", 7, 3, kTlbAccessType},
                                              {"TLB_INVALIDATE_PDB_APERTURE", 10, 2, kTlbAperture}}};
constexpr std::array<EnumName, 9> kMemOpDOperation{{{0x05, "MEMBAR"},
                                                    {0x09, "MMU_TLB_INVALIDATE"},
                                                    {0x0a, "MMU_TLB_INVALIDATE_TARGETED"},
                                                    {0x0d, "L2_PEERMEM_INVALIDATE"},
                                                    {0x0e, "L2_SYSMEM_INVALIDATE"},
                                                    {0x0f, "L2_CLEAN_COMPTAGS"},
                                                    {0x10, "L2_FLUSH_DIRTY"},
                                                    {0x15, "L2_WAIT_FOR_SYS_PENDING_READS"},
                                                    {0x16, "ACCESS_COUNTER_CLR"}}};
// NVC96F adds the invalidate of non-coherent system memory lines (clc96f.h).
constexpr auto kMemOpDOperationBlackwell = derive<10>(kMemOpDOperation, {{0x11, "L2_SYSMEM_NCOH_INVALIDATE"}});
constexpr std::array<BitField, 1> kMemOpD{{{"OPERATION", 27, 5, kMemOpDOperation}}};
constexpr std::array<BitField, 1> kMemOpDBlackwell{{{"OPERATION", 27, 5, kMemOpDOperationBlackwell}}};
constexpr std::array<BitField, 1> kSemAddrLo{{{"OFFSET", 2, 30}}};
constexpr std::array<BitField, 1> kSemAddrHi8{{{"OFFSET", 0, 8}}};     // Ampere: 40-bit semaphore addresses
constexpr std::array<BitField, 1> kSemAddrHi25{{{"OFFSET", 0, 25}}};   // Hopper on: 57-bit
constexpr std::array<BitField, 1> kPayload{{{"PAYLOAD", 0, 32}}};
constexpr std::array<EnumName, 7> kSemOperation{{{0, "ACQUIRE"},
                                                 {1, "RELEASE"},
                                                 {2, "ACQ_STRICT_GEQ"},
                                                 {3, "ACQ_CIRC_GEQ"},
                                                 {4, "ACQ_AND"},
                                                 {5, "ACQ_NOR"},
                                                 {6, "REDUCTION"}}};
constexpr std::array<EnumName, 2> kPayloadSize{{{0, "32BIT"}, {1, "64BIT"}}};
constexpr std::array<EnumName, 8> kSemReduction{{{0, "IMIN"},
                                                 {1, "IMAX"},
                                                 {2, "IXOR"},
                                                 {3, "IAND"},
                                                 {4, "IOR"},
                                                 {5, "IADD"},
                                                 {6, "INC"},
                                                 {7, "DEC"}}};
constexpr std::array<EnumName, 2> kSignedness{{{0, "SIGNED"}, {1, "UNSIGNED"}}};
constexpr std::array<BitField, 7> kSemExecute{{{"OPERATION", 0, 3, kSemOperation},
                                               {"ACQUIRE_SWITCH_TSG", 12, 1, kDisEn},
                                               {"RELEASE_WFI", 20, 1, kDisEn},
                                               {"PAYLOAD_SIZE", 24, 1, kPayloadSize},
                                               {"RELEASE_TIMESTAMP", 25, 1, kDisEn},
                                               {"REDUCTION", 27, 4, kSemReduction},
                                               {"REDUCTION_FORMAT", 31, 1, kSignedness}}};
constexpr std::array<EnumName, 2> kWfiScope{{{0, "CURRENT_SCG_TYPE"}, {1, "ALL"}}};
constexpr std::array<BitField, 1> kWfi{{{"SCOPE", 0, 1, kWfiScope}}};

// The host methods are the same list in every generation but for SEM_ADDR_HI's width. Hopper's and Blackwell's
// published headers (clc86f.h, clc96f.h, clca6f.h) list only what UVM uses; NOP, NON_STALL_INTERRUPT and WFI are
// taken from clc56f.h for them: host methods keep their offsets across generations (tinygrad emits the NVC56F names
// on every NVIDIA GPU it drives) and a stream that uses them must stay decodable.
template <size_t N>
constexpr std::array<Method, 13> host_table(const std::array<BitField, N>& sem_addr_hi,
                                            std::span<const BitField> mem_op_d = kMemOpD) {
  return {{{"SET_OBJECT", 0x00, kHostSetObject},
           {"NOP", 0x08, kHandle},
           {"NON_STALL_INTERRUPT", 0x20, kHandle},
           {"MEM_OP_A", 0x28, kMemOpA},
           {"MEM_OP_B", 0x2c},
           {"MEM_OP_C", 0x30, kMemOpC},
           {"MEM_OP_D", 0x34, mem_op_d},
           {"SEM_ADDR_LO", 0x5c, kSemAddrLo},
           {"SEM_ADDR_HI", 0x60, sem_addr_hi},
           {"SEM_PAYLOAD_LO", 0x64, kPayload},
           {"SEM_PAYLOAD_HI", 0x68, kPayload},
           {"SEM_EXECUTE", 0x6c, kSemExecute},
           {"WFI", 0x78, kWfi}}};
}
constexpr auto kHostAmpere = host_table(kSemAddrHi8);
constexpr auto kHostHopper = host_table(kSemAddrHi25);
constexpr auto kHostBlackwell = host_table(kSemAddrHi25, kMemOpDBlackwell);

// ================= Compute (open-gpu-doc classes/compute/clc6c0.h, clc7c0.h, clc9c0.h, clcbc0.h, clcdc0.h, clcec0.h)
constexpr std::array<BitField, 1> kV{{{"V", 0, 32}}};
constexpr std::array<BitField, 5> kInvalidateShaderCaches{{{"INSTRUCTION", 0, 1, kFalseTrue},
                                                           {"LOCKS", 1, 1, kFalseTrue},
                                                           {"FLUSH_DATA", 2, 1, kFalseTrue},
                                                           {"DATA", 4, 1, kFalseTrue},
                                                           {"CONSTANT", 12, 1, kFalseTrue}}};
constexpr std::array<BitField, 3> kInvalidateShaderCachesNoWfi{{{"INSTRUCTION", 0, 1, kFalseTrue},
                                                                {"GLOBAL_DATA", 4, 1, kFalseTrue},
                                                                {"CONSTANT", 12, 1, kFalseTrue}}};
constexpr std::array<BitField, 1> kBaseAddressUpper17{{{"BASE_ADDRESS_UPPER", 0, 17}}};
constexpr std::array<BitField, 1> kBaseAddress{{{"BASE_ADDRESS", 0, 32}}};
constexpr std::array<BitField, 1> kQmdAddressShifted8{{{"QMD_ADDRESS_SHIFTED8", 0, 32}}};
constexpr std::array<EnumName, 10> kPcasActionAmpere{{{0x0, "NOP"},
                                                      {0x1, "INVALIDATE"},
                                                      {0x2, "SCHEDULE"},
                                                      {0x3, "INVALIDATE_COPY_SCHEDULE"},
                                                      {0x6, "INCREMENT_PUT"},
                                                      {0x7, "DECREMENT_DEPENDENCE"},
                                                      {0x8, "PREFETCH"},
                                                      {0x9, "PREFETCH_SCHEDULE"},
                                                      {0xa, "INVALIDATE_PREFETCH_COPY_SCHEDULE"},
                                                      {0xb, "INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING"}}};
constexpr auto kPcasActionAda = derive<12>(kPcasActionAmpere, {{0xc, "INCREMENT_DEPENDENCE"},
                                                                {0xd, "INCREMENT_CWD_REF_COUNTER"}});
constexpr std::array<BitField, 1> kPcas2BAmpere{{{"PCAS_ACTION", 0, 4, kPcasActionAmpere}}};
constexpr std::array<BitField, 3> kPcas2BAda{
    {{"PCAS_ACTION", 0, 4, kPcasActionAda}, {"SELECT", 8, 6}, {"OFFSET_MINUS_ONE", 14, 10}}};
constexpr std::array<BitField, 1> kSizeUpper8{{{"SIZE_UPPER", 0, 8}}};
constexpr std::array<BitField, 1> kSizeLower{{{"SIZE_LOWER", 0, 32}}};
constexpr std::array<BitField, 1> kMaxSmCount{{{"MAX_SM_COUNT", 0, 9}}};
constexpr std::array<BitField, 3> kNonThrottledCHopper{
    {{"MAX_SM_COUNT", 0, 9}, {"MAX_PLURAL_TPC_GPC_COUNT", 16, 8}, {"MAX_SINGLETON_TPC_GPC_COUNT", 24, 8}}};
constexpr std::array<BitField, 1> kAddressUpper17{{{"ADDRESS_UPPER", 0, 17}}};
constexpr std::array<BitField, 1> kAddressUpper25{{{"ADDRESS_UPPER", 0, 25}}};
constexpr std::array<BitField, 1> kAddressLower{{{"ADDRESS_LOWER", 0, 32}}};
constexpr std::array<BitField, 1> kOffsetUpper8{{{"OFFSET_UPPER", 0, 8}}};
constexpr std::array<BitField, 1> kOffsetUpper25{{{"OFFSET_UPPER", 0, 25}}};
constexpr std::array<BitField, 1> kOffsetLower{{{"OFFSET_LOWER", 0, 32}}};
constexpr std::array<BitField, 1> kReportPayload{{{"PAYLOAD", 0, 32}}};
constexpr std::array<BitField, 1> kPayloadLower{{{"PAYLOAD_LOWER", 0, 32}}};
constexpr std::array<BitField, 1> kPayloadUpper{{{"PAYLOAD_UPPER", 0, 32}}};
constexpr std::array<BitField, 1> kLower{{{"LOWER", 0, 32}}};
constexpr std::array<BitField, 1> kUpper8{{{"UPPER", 0, 8}}};
constexpr std::array<BitField, 1> kUpper25{{{"UPPER", 0, 25}}};
constexpr std::array<EnumName, 2> kReportOperation{{{0, "RELEASE"}, {3, "TRAP"}}};
constexpr std::array<EnumName, 8> kRedOp{{{0, "RED_ADD"},
                                          {1, "RED_MIN"},
                                          {2, "RED_MAX"},
                                          {3, "RED_INC"},
                                          {4, "RED_DEC"},
                                          {5, "RED_AND"},
                                          {6, "RED_OR"},
                                          {7, "RED_XOR"}}};
constexpr std::array<EnumName, 2> kRedFormat32{{{0, "UNSIGNED_32"}, {1, "SIGNED_32"}}};
constexpr std::array<EnumName, 2> kStructureSize{{{0, "FOUR_WORDS"}, {1, "ONE_WORD"}}};
constexpr std::array<BitField, 8> kReportSemaphoreD{{{"OPERATION", 0, 2, kReportOperation},
                                                     {"FLUSH_DISABLE", 2, 1, kFalseTrue},
                                                     {"REDUCTION_ENABLE", 3, 1, kFalseTrue},
                                                     {"REDUCTION_OP", 9, 3, kRedOp},
                                                     {"REDUCTION_FORMAT", 17, 2, kRedFormat32},
                                                     {"CONDITIONAL_TRAP", 19, 1, kFalseTrue},
                                                     {"AWAKEN_ENABLE", 20, 1, kFalseTrue},
                                                     {"STRUCTURE_SIZE", 28, 1, kStructureSize}}};

// Offsets below pb::kHostMethodLimit (SET_OBJECT included) are the host's, decoded with the host class.
// NVC6C0 (Ampere).
constexpr std::array<Method, 19> kComputeAmpere{{
    {"NO_OPERATION", 0x0100, kV},
    {"WAIT_FOR_IDLE", 0x0110, kV},
    {"INVALIDATE_SHADER_CACHES", 0x021c, kInvalidateShaderCaches},
    {"SET_SHADER_SHARED_MEMORY_WINDOW_A", 0x02a0, kBaseAddressUpper17},
    {"SET_SHADER_SHARED_MEMORY_WINDOW_B", 0x02a4, kBaseAddress},
    {"SEND_PCAS_A", 0x02b4, kQmdAddressShifted8},
    {"SEND_SIGNALING_PCAS2_B", 0x02c0, kPcas2BAmpere},
    {"SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A", 0x02e4, kSizeUpper8},
    {"SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B", 0x02e8, kSizeLower},
    {"SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C", 0x02ec, kMaxSmCount},
    {"SET_SHADER_LOCAL_MEMORY_A", 0x0790, kAddressUpper17},
    {"SET_SHADER_LOCAL_MEMORY_B", 0x0794, kAddressLower},
    {"SET_SHADER_LOCAL_MEMORY_WINDOW_A", 0x07b0, kBaseAddressUpper17},
    {"SET_SHADER_LOCAL_MEMORY_WINDOW_B", 0x07b4, kBaseAddress},
    {"INVALIDATE_SHADER_CACHES_NO_WFI", 0x1698, kInvalidateShaderCachesNoWfi},
    {"SET_REPORT_SEMAPHORE_A", 0x1b00, kOffsetUpper8},
    {"SET_REPORT_SEMAPHORE_B", 0x1b04, kOffsetLower},
    {"SET_REPORT_SEMAPHORE_C", 0x1b08, kReportPayload},
    {"SET_REPORT_SEMAPHORE_D", 0x1b0c, kReportSemaphoreD},
}};

// NVC9C0 (Ada) adds the 64-bit report payload/address methods and PCAS2_B's SELECT/OFFSET_MINUS_ONE; it keeps the
// 17-bit local memory upper and the 8-bit report upper (clc9c0.h).
constexpr auto kComputeAda = derive<23>(kComputeAmpere, {
    {"SET_REPORT_SEMAPHORE_PAYLOAD_LOWER", 0x0158, kPayloadLower},
    {"SET_REPORT_SEMAPHORE_PAYLOAD_UPPER", 0x015c, kPayloadUpper},
    {"SET_REPORT_SEMAPHORE_ADDRESS_LOWER", 0x0160, kLower},
    {"SET_REPORT_SEMAPHORE_ADDRESS_UPPER", 0x0164, kUpper8},
    {"SEND_SIGNALING_PCAS2_B", 0x02c0, kPcas2BAda},
});
// Hopper and Blackwell (NVCBC0, NVCDC0, NVCEC0) widen the address uppers to 25 bits and extend NON_THROTTLED_C.
constexpr auto kComputeHopper = derive<23>(kComputeAda, {
    {"SET_REPORT_SEMAPHORE_ADDRESS_UPPER", 0x0164, kUpper25},
    {"SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C", 0x02ec, kNonThrottledCHopper},
    {"SET_SHADER_LOCAL_MEMORY_A", 0x0790, kAddressUpper25},
    {"SET_REPORT_SEMAPHORE_A", 0x1b00, kOffsetUpper25},
});

// ================= Copy (open-gpu-doc classes/dma-copy/clc6b5.h, clc7b5.h, clc8b5.h, clc9b5.h, clcab5.h) ========
constexpr std::array<EnumName, 4> kTransferType{
    {{0, "NONE"}, {1, "PIPELINED"}, {2, "NON_PIPELINED"}, {3, "PREFETCH"}}};  // PREFETCH: NVCAB5 only
constexpr std::array<EnumName, 3> kTransferType3{{{0, "NONE"}, {1, "PIPELINED"}, {2, "NON_PIPELINED"}}};
constexpr std::array<EnumName, 4> kDmaSemaphoreType{{{0, "NONE"},
                                                     {1, "RELEASE_ONE_WORD_SEMAPHORE"},
                                                     {2, "RELEASE_FOUR_WORD_SEMAPHORE"},
                                                     {3, "RELEASE_CONDITIONAL_INTR_SEMAPHORE"}}};
constexpr std::array<EnumName, 3> kInterruptType{{{0, "NONE"}, {1, "BLOCKING"}, {2, "NON_BLOCKING"}}};
constexpr std::array<EnumName, 2> kLayout{{{0, "BLOCKLINEAR"}, {1, "PITCH"}}};
constexpr std::array<EnumName, 2> kAddrType{{{0, "VIRTUAL"}, {1, "PHYSICAL"}}};
constexpr std::array<EnumName, 16> kDmaReduction{{{0x0, "IMIN"},
                                                  {0x1, "IMAX"},
                                                  {0x2, "IXOR"},
                                                  {0x3, "IAND"},
                                                  {0x4, "IOR"},
                                                  {0x5, "IADD"},
                                                  {0x6, "INC"},
                                                  {0x7, "DEC"},
                                                  {0x8, "INVALIDA"},
                                                  {0x9, "INVALIDB"},
                                                  {0xa, "FADD"},
                                                  {0xb, "FMIN"},
                                                  {0xc, "FMAX"},
                                                  {0xd, "INVALIDC"},
                                                  {0xe, "INVALIDD"},
                                                  {0xf, "INVALIDE"}}};
constexpr std::array<EnumName, 2> kVprMode{{{0, "VPR_NONE"}, {1, "VPR_VID2VID"}}};
constexpr std::array<EnumName, 2> kFlushType{{{0, "SYS"}, {1, "GL"}}};
constexpr std::array<EnumName, 2> kSemPayloadSize{{{0, "ONE_WORD"}, {1, "TWO_WORD"}}};
constexpr std::array<EnumName, 4> kCopyType{
    {{0, "PROT2PROT"}, {1, "SECURE"}, {2, "NONPROT2NONPROT"}, {3, "RESERVED"}}};

// NVC7B5: VPRMODE is 23:22.
constexpr std::array<BitField, 20> kLaunchDmaAmpere{{{"DATA_TRANSFER_TYPE", 0, 2, kTransferType3},
                                                     {"FLUSH_ENABLE", 2, 1, kFalseTrue},
                                                     {"SEMAPHORE_TYPE", 3, 2, kDmaSemaphoreType},
                                                     {"INTERRUPT_TYPE", 5, 2, kInterruptType},
                                                     {"SRC_MEMORY_LAYOUT", 7, 1, kLayout},
                                                     {"DST_MEMORY_LAYOUT", 8, 1, kLayout},
                                                     {"MULTI_LINE_ENABLE", 9, 1, kFalseTrue},
                                                     {"REMAP_ENABLE", 10, 1, kFalseTrue},
                                                     {"FORCE_RMWDISABLE", 11, 1, kFalseTrue},
                                                     {"SRC_TYPE", 12, 1, kAddrType},
                                                     {"DST_TYPE", 13, 1, kAddrType},
                                                     {"SEMAPHORE_REDUCTION", 14, 4, kDmaReduction},
                                                     {"SEMAPHORE_REDUCTION_SIGN", 18, 1, kSignedness},
                                                     {"SEMAPHORE_REDUCTION_ENABLE", 19, 1, kFalseTrue},
                                                     {"VPRMODE", 22, 2, kVprMode},
                                                     {"RESERVED_START_OF_COPY", 24, 1},
                                                     {"FLUSH_TYPE", 25, 1, kFlushType},
                                                     {"DISABLE_PLC", 26, 1, kFalseTrue},
                                                     {"SEMAPHORE_PAYLOAD_SIZE", 27, 1, kSemPayloadSize},
                                                     {"RESERVED_ERR_CODE", 28, 4}}};
// NVC6B5 (AMPERE_DMA_COPY_A, GA100) is NVC7B5 without the two-word semaphore payload (SEMAPHORE_PAYLOAD_SIZE).
constexpr auto kLaunchDmaAmpereA = without<19>(kLaunchDmaAmpere, {27});
// NVC8B5: COPY_TYPE 21:20, VPRMODE 22:22, MEMORY_SCRUB_ENABLE 23:23.
constexpr auto kLaunchDmaHopper = derive<22>(kLaunchDmaAmpere, {
    {"COPY_TYPE", 20, 2, kCopyType},
    {"VPRMODE", 22, 1, kVprMode},
    {"MEMORY_SCRUB_ENABLE", 23, 1, kFalseTrue},
});
// NVC9B5 on: FORCE_RMWDISABLE (bit 11) is gone; NVCAB5 adds the PREFETCH transfer type.
constexpr auto kLaunchDmaBlackwellA = without<21>(kLaunchDmaHopper, {11});
constexpr auto kLaunchDmaBlackwellB = derive<21>(kLaunchDmaBlackwellA, {{"DATA_TRANSFER_TYPE", 0, 2, kTransferType}});

constexpr std::array<BitField, 1> kNopParameter{{{"PARAMETER", 0, 32}}};
constexpr std::array<BitField, 1> kUpper17{{{"UPPER", 0, 17}}};
constexpr std::array<BitField, 1> kValue{{{"VALUE", 0, 32}}};
constexpr std::array<BitField, 1> kCopyPayload{{{"PAYLOAD", 0, 32}}};

template <typename UpperArr, typename LaunchArr>
constexpr std::array<Method, 14> copy_methods(const UpperArr& upper, const LaunchArr& launch) {
  return {{{"NOP", 0x0100, kNopParameter},
           {"SET_SEMAPHORE_A", 0x0240, upper},
           {"SET_SEMAPHORE_B", 0x0244, kLower},
           {"SET_SEMAPHORE_PAYLOAD", 0x0248, kCopyPayload},
           {"SET_SEMAPHORE_PAYLOAD_UPPER", 0x024c, kCopyPayload},
           {"LAUNCH_DMA", 0x0300, launch},
           {"OFFSET_IN_UPPER", 0x0400, upper},
           {"OFFSET_IN_LOWER", 0x0404, kValue},
           {"OFFSET_OUT_UPPER", 0x0408, upper},
           {"OFFSET_OUT_LOWER", 0x040c, kValue},
           {"PITCH_IN", 0x0410, kValue},
           {"PITCH_OUT", 0x0414, kValue},
           {"LINE_LENGTH_IN", 0x0418, kValue},
           {"LINE_COUNT", 0x041c, kValue}}};
}
constexpr auto kCopyAmpere = copy_methods(kUpper17, kLaunchDmaAmpere);
// NVC6B5 has no SET_SEMAPHORE_PAYLOAD_UPPER (0x024c): its semaphores are 32-bit (clc6b5.h).
constexpr auto kCopyAmpereA = without<13>(copy_methods(kUpper17, kLaunchDmaAmpereA), {0x024c});
constexpr auto kCopyHopper = copy_methods(kUpper25, kLaunchDmaHopper);
constexpr auto kCopyBlackwellA = copy_methods(kUpper25, kLaunchDmaBlackwellA);
constexpr auto kCopyBlackwellB = copy_methods(kUpper25, kLaunchDmaBlackwellB);

constexpr ClassMethods kClasses[] = {
    {0xc56f, "NVC56F", "AMPERE_CHANNEL_GPFIFO_A", ClassKind::host, kHostAmpere},
    {0xc86f, "NVC86F", "HOPPER_CHANNEL_GPFIFO_A", ClassKind::host, kHostHopper},
    {0xc96f, "NVC96F", "BLACKWELL_CHANNEL_GPFIFO_A", ClassKind::host, kHostBlackwell},
    {0xca6f, "NVCA6F", "BLACKWELL_CHANNEL_GPFIFO_B", ClassKind::host, kHostBlackwell},
    {0xc6c0, "NVC6C0", "AMPERE_COMPUTE_A", ClassKind::compute, kComputeAmpere},
    // NVC7C0 (GA10x) has NVC9C0's methods for every method listed here (clc7c0.h; it also has MME methods hcq
    // does not use).
    {0xc7c0, "NVC7C0", "AMPERE_COMPUTE_B", ClassKind::compute, kComputeAda},
    {0xc9c0, "NVC9C0", "ADA_COMPUTE_A", ClassKind::compute, kComputeAda},
    {0xcbc0, "NVCBC0", "HOPPER_COMPUTE_A", ClassKind::compute, kComputeHopper},
    {0xcdc0, "NVCDC0", "BLACKWELL_COMPUTE_A", ClassKind::compute, kComputeHopper},
    {0xcec0, "NVCEC0", "BLACKWELL_COMPUTE_B", ClassKind::compute, kComputeHopper},
    {0xc6b5, "NVC6B5", "AMPERE_DMA_COPY_A", ClassKind::copy, kCopyAmpereA},
    {0xc7b5, "NVC7B5", "AMPERE_DMA_COPY_B", ClassKind::copy, kCopyAmpere},
    {0xc8b5, "NVC8B5", "HOPPER_DMA_COPY_A", ClassKind::copy, kCopyHopper},
    {0xc9b5, "NVC9B5", "BLACKWELL_DMA_COPY_A", ClassKind::copy, kCopyBlackwellA},
    {0xcab5, "NVCAB5", "BLACKWELL_DMA_COPY_B", ClassKind::copy, kCopyBlackwellB},
};
constexpr auto kClassPtrs = [] {
  std::array<const ClassMethods*, std::size(kClasses)> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = &kClasses[i];
  return out;
}();

}  // namespace

const ClassMethods* find_class(uint32_t class_id) {
  for (const ClassMethods& c : kClasses)
    if (c.class_id == class_id) return &c;
  return nullptr;
}

std::span<const ClassMethods* const> all_classes() { return kClassPtrs; }

std::span<const BitField> mem_op_c_tlb_invalidate() { return kMemOpCTlb; }

bool copy_releases_semaphore64(const ClassMethods& copy) {
  return copy.find("SET_SEMAPHORE_PAYLOAD_UPPER") != nullptr;
}

}  // namespace hcq::nv
