// A kernel with its own constant bank 2 (NVRTC 13's sm_86 literals, .nv.constant2.<kernel>) loaded and launched on
// SIM-NV:ampere: the QMD binds bank 2 (address, size in 16-byte units, valid) where the image holds the section's
// bytes, and the kernel computes what a double loop here computes. The simulator checks the binding at each launch
// (twin_registry.cpp, check_banks), so a QMD without it faults instead of passing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "hcq/buffer.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/program.hpp"
#include "nv/cubin/cubin.hpp"
#include "nv/facts/arch.hpp"
#include "nv/facts/qmd.hpp"
#include "nv/rm/nv_device.hpp"
#include "nv/rm/nv_program.hpp"
#include "nv_kernels.hpp"
#include "sim/nv/sim_nv_device.hpp"

namespace hcq::nv {
namespace {

TEST(NvConstantBank2, Sm86KernelRunsOnSimAmpereWithItsBankBound) {
  REQUIRE_NVRTC();
  const std::unique_ptr<Device> dev = sim::open_sim_nv_gpu("SIM-NV:ampere", "ampere");
  const std::vector<uint8_t> bin = dev->compiler().compile(test::kConstantBank2Source);
  const Cubin cubin = Cubin::parse(bin);
  ASSERT_EQ(cubin.sm(), 86u);
  const CubinKernel& k = cubin.kernel("stack3");
  ASSERT_EQ(k.banks.size(), 1u) << "NVRTC no longer puts this kernel's literals in bank 2: pick another kernel";
  const CubinConstantBank bank = k.banks[0];

  std::unique_ptr<Program> prog = dev->load_program("stack3", bin);
  const auto& p = static_cast<const NvProgram&>(*prog);
  const NvArchInfo& arch = *static_cast<NvDevice&>(*dev).gpu().facts().arch;
  const qmd::QmdRoles& r = qmd::layout(arch.qmd_version).roles;
  const std::span<const uint32_t> q = p.qmd_template();
  const uint64_t address = (qmd::get(q, *r.cbuf[2].address_lower) | (qmd::get(q, *r.cbuf[2].address_upper) << 32))
                           << r.cbuf_address_shift;
  EXPECT_EQ(address, p.facts().image_va + bank.offset);
  EXPECT_EQ(qmd::get(q, *r.cbuf[2].size_shifted4), (bank.size + 15) / 16);
  EXPECT_EQ(qmd::get(q, *r.cbuf[2].valid), 1u);
  for (uint32_t other = 1; other < qmd::kConstantBuffers; ++other) {
    bool module_bank = false;
    for (const CubinConstantBank& m : cubin.constant_banks()) module_bank |= m.bank == other;
    if (other != 2 && !module_bank) {
      EXPECT_EQ(qmd::get(q, *r.cbuf[other].valid), 0u) << "bank " << other;
    }
  }

  // Three [2, 3] inputs stacked along a new last axis: out[i][j][k] = (a, b, c)[k][i][j], by a loop here.
  std::vector<float> in[3];
  for (int t = 0; t < 3; ++t)
    for (int e = 0; e < 6; ++e) in[t].push_back(static_cast<float>(100 * (t + 1) + e));
  std::vector<float> want(18);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int t = 0; t < 3; ++t) want[static_cast<size_t>(i * 9 + j * 3 + t)] = in[t][static_cast<size_t>(i * 3 + j)];
  Buffer out(*dev, 18 * 4), a(*dev, 6 * 4), b(*dev, 6 * 4), c(*dev, 6 * 4);
  a.copyin(std::span<const float>(in[0]));
  b.copyin(std::span<const float>(in[1]));
  c.copyin(std::span<const float>(in[2]));
  const Buffer* bufs[] = {&out, &a, &b, &c};
  prog->launch(std::span<const Buffer* const>(bufs), {}, {1, 1, 1}, {18, 1, 1});
  dev->synchronize();
  std::vector<float> got(18);
  out.copyout(std::span<float>(got));
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace hcq::nv
