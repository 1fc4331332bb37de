#include "nv/facts/arch.hpp"

#include <array>
#include <string>

#include "hcq/error.hpp"

namespace hcq::nv {
namespace {

// Doorbell classes in order of preference (clc461.h TURING_USERMODE_A, clc561.h AMPERE_USERMODE_A,
// clc661.h HOPPER_USERMODE_A, clc761.h BLACKWELL_USERMODE_A). All of them put NOTIFY_CHANNEL_PENDING at 0x90.
constexpr std::array<uint32_t, 2> kUsermodeAmpere{0xc561, 0xc461};
constexpr std::array<uint32_t, 2> kUsermodeHopper{0xc661, 0xc461};
constexpr std::array<uint32_t, 2> kUsermodeBlackwell{0xc761, 0xc661};

constexpr uint32_t kChannelGroup = 0xa06c;  // KEPLER_CHANNEL_GROUP_A
constexpr uint32_t kContextShare = 0x9067;  // FERMI_CONTEXT_SHARE_A
constexpr uint32_t kVaSpace = 0x90f1;       // FERMI_VASPACE_A

// L1/shared carveouts (KiB) per SM: sm_80 up to 164, sm_86/89/120 up to 100, sm_90/100 up to 228.
constexpr std::array<uint16_t, 8> kCarveout164{0, 8, 16, 32, 64, 100, 132, 164};
constexpr std::array<uint16_t, 6> kCarveout100{0, 8, 16, 32, 64, 100};
constexpr std::array<uint16_t, 10> kCarveout228{0, 8, 16, 32, 64, 100, 132, 164, 196, 228};

// GA100 (sm_80): AMPERE_COMPUTE_A and AMPERE_DMA_COPY_A; GA10x (sm_86): the _B classes; AD10x (sm_89) ADA_COMPUTE_A
// with AMPERE_DMA_COPY_B (RM's per-chip class lists, g_gpu_class_list.c).
constexpr NvClasses ampere_a_classes{0xc56f, 0xc6c0, 0xc6b5, kUsermodeAmpere, kChannelGroup, kContextShare,
                                     kVaSpace};
constexpr NvClasses ampere_b_classes{0xc56f, 0xc7c0, 0xc7b5, kUsermodeAmpere, kChannelGroup, kContextShare,
                                     kVaSpace};
constexpr NvClasses ada_classes{0xc56f, 0xc9c0, 0xc7b5, kUsermodeAmpere, kChannelGroup, kContextShare, kVaSpace};
constexpr NvClasses hopper_classes{0xc86f, 0xcbc0, 0xc8b5, kUsermodeHopper, kChannelGroup, kContextShare, kVaSpace};
// GB100/GB200 (sm_100): BLACKWELL_CHANNEL_GPFIFO_A, BLACKWELL_COMPUTE_A, BLACKWELL_DMA_COPY_A.
constexpr NvClasses blackwell_a_classes{0xc96f, 0xcdc0, 0xc9b5, kUsermodeBlackwell, kChannelGroup, kContextShare,
                                        kVaSpace};
// GB20x (sm_120): the _B classes.
constexpr NvClasses blackwell_b_classes{0xca6f, 0xcec0, 0xcab5, kUsermodeBlackwell, kChannelGroup, kContextShare,
                                        kVaSpace};

constexpr uint32_t KiB = 1024;

const std::array<NvArchInfo, 6> kTable{{
    {NvArch::ampere, "ampere", 80, ampere_a_classes, 3, 0x160, 1024, 163 * KiB, KiB, 65536, 255, kCarveout164},
    {NvArch::ampere, "ampere", 86, ampere_b_classes, 3, 0x160, 1024, 99 * KiB, KiB, 65536, 255, kCarveout100},
    {NvArch::ada, "ada", 89, ada_classes, 3, 0x160, 1024, 99 * KiB, KiB, 65536, 255, kCarveout100},
    {NvArch::hopper, "hopper", 90, hopper_classes, 3, 0x210, 1024, 227 * KiB, KiB, 65536, 255, kCarveout228},
    {NvArch::blackwell, "blackwell", 100, blackwell_a_classes, 5, 0x380, 1024, 227 * KiB, KiB, 65536, 255,
     kCarveout228, 188, 223},
    {NvArch::blackwell, "blackwell", 120, blackwell_b_classes, 5, 0x380, 1024, 99 * KiB, KiB, 65536, 255,
     kCarveout100, 188, 223},
}};

}  // namespace

std::span<const NvArchInfo> nv_arch_table() { return kTable; }

const NvArchInfo& arch_info(NvArch arch) {
  switch (arch) {
    case NvArch::ampere: return kTable[1];
    case NvArch::ada: return kTable[2];
    case NvArch::hopper: return kTable[3];
    case NvArch::blackwell: return kTable[4];
  }
  throw InvalidArgument(cat("unknown NvArch ", static_cast<int>(arch)));
}

std::string_view to_string(NvArch arch) { return arch_info(arch).arch_name; }

const NvArchInfo* find_arch_by_sm(uint32_t sm) {
  for (const NvArchInfo& a : kTable)
    if (a.sm == sm) return &a;
  return nullptr;
}

const NvArchInfo* find_arch_by_compute_class(uint32_t compute_class) {
  for (const NvArchInfo& a : kTable)
    if (a.classes.compute == compute_class) return &a;
  return nullptr;
}

const NvArchInfo& arch_from_name(std::string_view name) {
  for (NvArch a : {NvArch::ampere, NvArch::ada, NvArch::hopper, NvArch::blackwell})
    if (name == to_string(a)) return arch_info(a);
  std::string_view digits = name;
  if (digits.starts_with("sm_")) digits.remove_prefix(3);
  else if (digits.starts_with("sm")) digits.remove_prefix(2);
  else digits = {};
  uint32_t sm = 0;
  bool ok = !digits.empty() && digits.size() <= 4;
  for (char c : digits) {
    if (c < '0' || c > '9') ok = false;
    else sm = sm * 10 + static_cast<uint32_t>(c - '0');
  }
  if (ok)
    if (const NvArchInfo* a = find_arch_by_sm(sm)) return *a;
  std::string known;
  for (const NvArchInfo& a : kTable) known += cat(known.empty() ? "" : ", ", "sm_", a.sm);
  throw InvalidArgument(cat("unknown NVIDIA architecture '", name, "': expected ampere, ada, hopper, blackwell or one of ",
                            known));
}

}  // namespace hcq::nv
