// The known targets. GC/SDMA IP versions are the ones Linux's IP discovery reports for these parts (gfx942: GC 9.4.3
// + SDMA 4.4.2, gfx950: GC 9.5.0 + SDMA 4.4.5, gfx11: GC 11.0.x + SDMA 6.0.x, gfx12: GC 12.0.x + SDMA 7.0.x).
#include "amd/target.hpp"

#include <array>
#include <stdexcept>
#include <type_traits>

#include "hcq/error.hpp"

namespace hcq::amd {
namespace {

uint32_t reg(const RegisterTable& t, std::string_view name) {
  const Register* r = t.find(name);
  // The tables are ours: a missing name is a bug in drivers/amd, found by the first test that builds a target.
  if (!r) throw std::logic_error(cat("register table ", t.name, " lacks ", name));
  return r->addr;
}

Target make(std::string_view name, uint8_t gc_major, uint8_t gc_minor, uint8_t gc_step, uint8_t sdma_major,
            uint8_t sdma_minor) {
  Target t{};
  t.name = name;
  t.gc_major = gc_major;
  t.gc_minor = gc_minor;
  t.gc_stepping = gc_step;
  t.sdma_major = sdma_major;
  t.sdma_minor = sdma_minor;
  switch (gc_major) {
    case 9:
      t.family = GfxFamily::gc9_4;
      t.pm4 = &pm4::kGfx9;
      t.regs = &kRegsGc9_4;
      t.wave32 = false;
      t.aql_compute = true;  // gfx942/gfx950 are multi-XCC: PM4 PRED_EXEC works only inside IBs there
      t.matrix_unit = MatrixUnit::mfma_cdna3;
      break;
    case 11:
      t.family = GfxFamily::gc11;
      t.pm4 = &pm4::kGfx10Plus;
      t.regs = &kRegsGc11;
      t.wave32 = true;
      // tinygrad sets PRIV on gfx11 "to work around CWSR" (compute wave save/restore); no AMD header says so. We keep
      // it so that our dispatches match the reference until a real gfx11 run says otherwise.
      t.rsrc1_priv_for_cwsr = true;
      t.matrix_unit = MatrixUnit::wmma_gfx11;
      break;
    default:
      t.family = GfxFamily::gc12;
      t.pm4 = &pm4::kGfx10Plus;
      t.regs = &kRegsGc12;
      t.wave32 = true;
      t.matrix_unit = MatrixUnit::wmma_gfx12;
      break;
  }
  t.sdma = sdma_major == 4 ? &sdma::kSdma4 : sdma_major == 6 ? &sdma::kSdma6 : &sdma::kSdma7;
  const RegisterTable& r = *t.regs;
  t.cregs = ComputeRegs{reg(r, "COMPUTE_DISPATCH_INITIATOR"),
                        reg(r, "COMPUTE_START_X"),
                        reg(r, "COMPUTE_NUM_THREAD_X"),
                        reg(r, "COMPUTE_PGM_LO"),
                        reg(r, "COMPUTE_DISPATCH_SCRATCH_BASE_LO"),
                        reg(r, "COMPUTE_PGM_RSRC1"),
                        reg(r, "COMPUTE_PGM_RSRC2"),
                        reg(r, "COMPUTE_PGM_RSRC3"),
                        reg(r, "COMPUTE_RESOURCE_LIMITS"),
                        reg(r, "COMPUTE_TMPRING_SIZE"),
                        reg(r, "COMPUTE_RESTART_X"),
                        reg(r, "COMPUTE_USER_DATA_0")};
  t.hdp_flush_req = reg(r, "BIF_BX_PF0_GPU_HDP_FLUSH_REQ");
  t.hdp_flush_done = reg(r, "BIF_BX_PF0_GPU_HDP_FLUSH_DONE");
  // Linux flushes HDP from a compute ring by requesting its own CP bit: ref_and_mask_cp2 << pipe on MEC1 (cp6 << pipe
  // on MEC2). A KFD user queue does not know its pipe, and KFD places user queues on MEC1, so we request all four MEC1
  // pipe bits (cp2..cp5) and wait until all four are done. MEC2 (KIQ/HIQ) bits are left alone.
  t.hdp_flush_mask = 0x3cu;
  t.lds_granule_bytes = 512;  // 128 dwords on GC 9..12
  return t;
}

// Devices hold their Target for life and decode their rings through it until the process's very end: the device
// registry's exit-time destructor synchronizes every device, and a wait that times out describes the rings. The
// registry is made before this table (at the first device open), so it is destroyed after it; a table with a
// destructor (a std::vector, say) would be freed under the registry's feet. A trivially destructible one is never
// destroyed: it stays readable for as long as the process runs, whatever order the statics were made in.
static_assert(std::is_trivially_destructible_v<Target>, "the target table must never be destroyed (see table())");

std::span<const Target> table() {
  static const std::array targets = {
      make("gfx942", 9, 4, 3, 4, 4),   make("gfx950", 9, 5, 0, 4, 4),   make("gfx1100", 11, 0, 0, 6, 0),
      make("gfx1101", 11, 0, 1, 6, 0), make("gfx1102", 11, 0, 2, 6, 0), make("gfx1200", 12, 0, 0, 7, 0),
      make("gfx1201", 12, 0, 1, 7, 0),
  };
  return targets;
}

}  // namespace

std::span<const Target> Target::known() { return table(); }

std::string Target::known_names() {
  std::string s;
  for (const Target& t : table()) {
    if (!s.empty()) s += ", ";
    s += t.name;
  }
  return s;
}

const Target& Target::from_gfx(std::string_view gfx_name) {
  for (const Target& t : table())
    if (t.name == gfx_name) return t;
  throw InvalidArgument(cat("unknown AMD target '", gfx_name, "': known targets are ", known_names()));
}

}  // namespace hcq::amd
