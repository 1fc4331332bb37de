// A target descriptor: which tables (PM4 dialect, SDMA dialect, registers) and which per-generation facts apply to a
// gfx target. Every per-generation difference in drivers/amd is read from here, never tested for by name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "amd/pm4_facts.hpp"
#include "amd/regs.hpp"
#include "amd/sdma_facts.hpp"
#include "hcq/matrix_unit.hpp"

namespace hcq::amd {

enum class GfxFamily : uint8_t { gc9_4, gc11, gc12 };

// Dword addresses of the compute registers a dispatch writes, resolved from the target's RegisterTable by name.
struct ComputeRegs {
  uint32_t dispatch_initiator, start_x, num_thread_x, pgm_lo, scratch_base_lo, rsrc1, rsrc2, rsrc3, resource_limits,
      tmpring_size, restart_x, user_data_0;
};

struct Target {
  std::string_view name;  // "gfx1100"
  uint8_t gc_major, gc_minor, gc_stepping;
  uint8_t sdma_major, sdma_minor;
  GfxFamily family;
  const pm4::Dialect* pm4;
  const sdma::Dialect* sdma;
  const RegisterTable* regs;
  ComputeRegs cregs;
  // HDP flush: the CP writes `hdp_flush_mask` to REQ, then waits until (DONE & mask) == mask.
  uint32_t hdp_flush_req, hdp_flush_done, hdp_flush_mask;
  bool wave32;                 // DISPATCH_INITIATOR has cs_w32_en (GC 10+); GC 9 runs wave64 only
  bool aql_compute;            // multi-XCC parts: compute work goes through an AQL queue
  bool rsrc1_priv_for_cwsr;    // set COMPUTE_PGM_RSRC1.PRIV (see KernelInfo::from_descriptor)
  uint32_t lds_granule_bytes;  // COMPUTE_PGM_RSRC2.LDS_SIZE unit
  // The matrix instruction generated kernels use for half-type products: GC 9.4's MFMA (wave64), GC 11's and GC
  // 12's WMMA (wave32, each with its own operand layouts).
  MatrixUnit matrix_unit;

  // The descriptor of a known target; throws hcq::InvalidArgument naming the known ones otherwise.
  static const Target& from_gfx(std::string_view gfx_name);
  static std::span<const Target> known();
  static std::string known_names();  // "gfx942, gfx950, gfx1100, ..."
};

}  // namespace hcq::amd
