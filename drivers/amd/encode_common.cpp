// The parts every AMD encoder shares: kernel-descriptor facts.
#include <cstring>
#include <stdexcept>

#include "amd/encode.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {

KernelDescriptor KernelDescriptor::parse(std::span<const std::byte> b) {
  if (b.size() < 64) throw InvalidArgument(cat("kernel descriptor needs 64 bytes, got ", b.size()));
  auto rd32 = [&](size_t off) {
    uint32_t v;
    std::memcpy(&v, b.data() + off, 4);
    return v;
  };
  KernelDescriptor kd;
  kd.group_segment_fixed_size = rd32(0);
  kd.private_segment_fixed_size = rd32(4);
  kd.kernarg_size = rd32(8);
  std::memcpy(&kd.kernel_code_entry_byte_offset, b.data() + 16, 8);
  kd.compute_pgm_rsrc3 = rd32(44);
  kd.compute_pgm_rsrc1 = rd32(48);
  kd.compute_pgm_rsrc2 = rd32(52);
  std::memcpy(&kd.kernel_code_properties, b.data() + 56, 2);
  std::memcpy(&kd.kernarg_preload, b.data() + 58, 2);
  return kd;
}

KernelInfo KernelInfo::from_descriptor(const KernelDescriptor& kd, const Target& t, uint32_t dynamic_lds_bytes) {
  constexpr uint16_t unsupported = KernelDescriptor::kPrivateSegmentBuffer | KernelDescriptor::kQueuePtr |
                                   KernelDescriptor::kDispatchId | KernelDescriptor::kFlatScratchInit |
                                   KernelDescriptor::kPrivateSegmentSize;
  if (kd.kernel_code_properties & unsupported)
    throw InvalidArgument(cat("kernel asks for user SGPRs we do not set up (kernel_code_properties ",
                              hex(kd.kernel_code_properties),
                              "): only the dispatch and kernarg pointers are supported"));
  const Register* rsrc1 = t.regs->find("COMPUTE_PGM_RSRC1");
  const Register* rsrc2 = t.regs->find("COMPUTE_PGM_RSRC2");
  auto field = [](const Register* r, std::string_view n) -> const Field& {
    for (const Field& f : r->fields)
      if (f.name == n) return f;
    throw std::logic_error(cat("register ", r->name, " lacks field ", n));
  };
  const Field& lds = field(rsrc2, "lds_size");
  const uint64_t lds_bytes = uint64_t{kd.group_segment_fixed_size} + dynamic_lds_bytes;
  const uint64_t blocks = (lds_bytes + t.lds_granule_bytes - 1) / t.lds_granule_bytes;
  if (blocks > lds.mask())
    throw InvalidArgument(cat("kernel needs ", lds_bytes, " bytes of LDS; ", t.name, " allows at most ",
                              uint64_t{lds.mask()} * t.lds_granule_bytes));
  KernelInfo k;
  k.rsrc1 = kd.compute_pgm_rsrc1 | (t.rsrc1_priv_for_cwsr ? field(rsrc1, "priv").place(1) : 0u);
  // LLVM leaves LDS_SIZE zero in the descriptor (the runtime knows the dynamic part); the dispatch sets it.
  k.rsrc2 = (kd.compute_pgm_rsrc2 & ~(lds.mask() << lds.lo)) | lds.place(blocks);
  k.rsrc3 = kd.compute_pgm_rsrc3;
  k.wave32 = (kd.kernel_code_properties & KernelDescriptor::kWavefrontSize32) != 0;
  k.dispatch_ptr = (kd.kernel_code_properties & KernelDescriptor::kDispatchPtr) != 0;
  k.group_segment_size = static_cast<uint32_t>(lds_bytes);
  k.private_segment_size = kd.private_segment_fixed_size;
  return k;
}

}  // namespace hcq::amd
