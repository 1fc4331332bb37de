// The kernel ABI's matrix instructions (HCQ_MMA16_*, include/hcq/kernel_abi.h; issue 19): the result layouts against
// the vendors' tables, and a kernel of two waves, each making one 16 x 16 x 16 product from shared memory, built for
// the GPUs that have the instruction (gfx1100's and gfx1201's WMMA and gfx942's MFMA through LLVM, sm_86's and sm_90's
// mma.sync through NVRTC) and run there by the simulators' host twins, and on the CPU device (every unit's host
// form). Expected values are a double loop over the same operands, chosen so that every float32 sum is exact.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../../drivers/cpu/cpu_device.hpp"
#include "common/timeline.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/kernel_abi.h"
#include "sim_gpus/sim_gpus.hpp"

namespace hcq {
namespace {

// (lane, element) -> (row, column) of the 16 x 16 sums, transcribed by hand rather than from the macros: AMD's RDNA3
// ISA guide, "Wave Matrix Multiply Accumulate" (wave32 D matrix: lanes 0-15 hold the even rows of their column,
// 16-31 the odd ones); RDNA4's (lanes 0-15 rows 0-7 of their column, 16-31 rows 8-15) and CDNA3's 16x16 MFMA
// (wave64: each group of 16 lanes 4 consecutive rows), as AMD's ISA guides and tinygrad's emulator
// (runtime/ops_python.py) lay them out; and the PTX ISA, "Matrix fragments for mma.m16n8k16" (C: c0, c1 at row
// groupID, columns threadID_in_group * 2 + {0, 1}; c2, c3 at row groupID + 8), two m16n8k16 for 16 columns.
struct Entry {
  int lane, e, row, col;
};
constexpr Entry kWmmaGfx11[] = {{0, 0, 0, 0},  {0, 7, 14, 0}, {5, 3, 6, 5},    {15, 1, 2, 15},
                                {16, 0, 1, 0}, {17, 3, 7, 1}, {31, 7, 15, 15}, {20, 4, 9, 4}};
constexpr Entry kWmmaGfx12[] = {{0, 0, 0, 0},  {0, 7, 7, 0},    {5, 3, 3, 5},   {15, 1, 1, 15},
                                {16, 0, 8, 0}, {31, 7, 15, 15}, {20, 2, 10, 4}, {17, 6, 14, 1}};
constexpr Entry kMfmaCdna3[] = {{0, 0, 0, 0},   {0, 3, 3, 0},    {17, 1, 5, 1},  {35, 2, 10, 3},
                                {48, 0, 12, 0}, {63, 3, 15, 15}, {15, 2, 2, 15}, {40, 1, 9, 8}};
constexpr Entry kMmaSm80[] = {{0, 0, 0, 0}, {0, 1, 0, 1},  {0, 2, 8, 0},    {0, 3, 8, 1},   {5, 0, 1, 2},
                              {5, 3, 9, 3}, {5, 6, 9, 10}, {31, 7, 15, 15}, {30, 4, 7, 12}, {3, 5, 0, 15}};

// Each entry against a unit's ROW and COL macros.
template <size_t N, typename Row, typename Col>
void expect_layout(const Entry (&entries)[N], Row row, Col col, const char* unit) {
  for (const Entry& x : entries) {
    EXPECT_EQ(row(x.lane, x.e), x.row) << unit << " lane " << x.lane << " element " << x.e;
    EXPECT_EQ(col(x.lane, x.e), x.col) << unit << " lane " << x.lane << " element " << x.e;
  }
}
#define HCQ_TEST_ROW_(U) [](int l, int e) { return HCQ_MMA16_##U##_ROW(l, e); }
#define HCQ_TEST_COL_(U) [](int l, [[maybe_unused]] int e) { return HCQ_MMA16_##U##_COL(l, e); }

TEST(MatrixLayouts, WmmaGfx11MatchesTheRdna3Guide) {
  expect_layout(kWmmaGfx11, HCQ_TEST_ROW_(WMMA_GFX11), HCQ_TEST_COL_(WMMA_GFX11), "WMMA_GFX11");
}

TEST(MatrixLayouts, WmmaGfx12AndMfmaCdna3MatchAmdsGuides) {
  expect_layout(kWmmaGfx12, HCQ_TEST_ROW_(WMMA_GFX12), HCQ_TEST_COL_(WMMA_GFX12), "WMMA_GFX12");
  expect_layout(kMfmaCdna3, HCQ_TEST_ROW_(MFMA_CDNA3), HCQ_TEST_COL_(MFMA_CDNA3), "MFMA_CDNA3");
}

TEST(MatrixLayouts, MmaSm80MatchesThePtxFragments) {
  expect_layout(kMmaSm80, HCQ_TEST_ROW_(MMA_SM80), HCQ_TEST_COL_(MMA_SM80), "MMA_SM80");
}

// Each layout gives the 256 sums to its lanes' elements, each sum once.
TEST(MatrixLayouts, EverySumHasOneLaneAndElement) {
  auto cover = [](int lanes, int sums, auto row, auto col) {
    std::set<std::pair<int, int>> seen;
    for (int lane = 0; lane < lanes; ++lane)
      for (int e = 0; e < sums; ++e) {
        const int r = row(lane, e), c = col(lane, e);
        EXPECT_TRUE(r >= 0 && r < 16 && c >= 0 && c < 16) << r << "," << c;
        seen.emplace(r, c);
      }
    return seen.size();
  };
#define HCQ_TEST_COVER_(U) cover(HCQ_MMA16_##U##_LANES, HCQ_MMA16_##U##_SUMS, HCQ_TEST_ROW_(U), HCQ_TEST_COL_(U))
  EXPECT_EQ(HCQ_TEST_COVER_(WMMA_GFX11), 256u);
  EXPECT_EQ(HCQ_TEST_COVER_(WMMA_GFX12), 256u);
  EXPECT_EQ(HCQ_TEST_COVER_(MFMA_CDNA3), 256u);
  EXPECT_EQ(HCQ_TEST_COVER_(MMA_SM80), 256u);
#undef HCQ_TEST_COVER_
}

// Two waves of 32 lanes; wave w multiplies A_w (16 x 16) by B_w (given transposed, 16 x 16) into C_w, which starts
// from the output buffer's values (the instruction accumulates). Tiles sit in shared memory with a row stride of 24
// words, the second wave's after the first's.
std::string product_kernel(const std::string& unit, const std::string& type) {
  std::string s = R"(
HCQ_THREAD_KERNEL(mma16, 3, 0) {
  HCQ_SHARED(uint16_t, sa, 2 * 16 * 24);
  HCQ_SHARED(uint16_t, sb, 2 * 16 * 24);
  const uint32_t lx = HCQ_LOCAL_ID(0), w = lx / HCQ_MMA16_UNIT_LANES, lane = lx % HCQ_MMA16_UNIT_LANES;
  for (uint32_t e = lx; e < 512; e += 2 * HCQ_MMA16_UNIT_LANES) {
    sa[(e / 16) * 24 + e % 16] = HCQ_BUF(const uint16_t, 1)[e];
    sb[(e / 16) * 24 + e % 16] = HCQ_BUF(const uint16_t, 2)[e];
  }
  HCQ_BARRIER();
  float acc[HCQ_MMA16_UNIT_SUMS];
  for (int e = 0; e < HCQ_MMA16_UNIT_SUMS; ++e)
    acc[e] = HCQ_BUF(float, 0)[w * 256 + HCQ_MMA16_UNIT_ROW(lane, e) * 16 + HCQ_MMA16_UNIT_COL(lane, e)];
  HCQ_MMA16_UNIT_TYPE(acc, sa, w * 16 * 24, 24, sb, w * 16 * 24, 24, lane);
  for (int e = 0; e < HCQ_MMA16_UNIT_SUMS; ++e)
    HCQ_BUF(float, 0)[w * 256 + HCQ_MMA16_UNIT_ROW(lane, e) * 16 + HCQ_MMA16_UNIT_COL(lane, e)] = acc[e];
}
)";
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"UNIT_TYPE", unit + "_" + type}, {"UNIT", unit}})
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  return s;
}

// Values whose products and sums of 16 are exact in float32, as float16 and as bfloat16 words.
constexpr float kValues[] = {-2.0f, -1.5f, -1.0f, -0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f};
uint16_t f16_bits(float v) {  // exact for kValues: a normal float16 with few mantissa bits
  if (v == 0.0f) return 0;
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t sign = (u >> 16) & 0x8000u, exp = ((u >> 23) & 0xffu) - 127u + 15u, man = (u >> 13) & 0x3ffu;
  return static_cast<uint16_t>(sign | (exp << 10) | man);
}
uint16_t bf16_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>(u >> 16);
}

struct Case {
  std::string device;  // "CPU", or a simulated GPU "SIM-AMD:gfx1100"
  std::string unit;    // the kernel ABI's unit: WMMA_GFX11, WMMA_GFX12, MFMA_CDNA3, MMA_SM80
  uint32_t lanes;      // its wave
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.device << " " << c.unit; }

class MatrixProducts : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const std::string& d = GetParam().device;
    if (d == "CPU") {
      dev_ = std::make_unique<cpu::CpuDevice>("CPU:matrix");
    } else {
      const size_t colon = d.find(':');
      dev_ = test::open_machine(test::SimGpu{d.substr(0, colon), d.substr(colon + 1)});
    }
    if (dev_->compiler().identity().find("unavailable") != std::string::npos)
      GTEST_SKIP() << "no compiler for this device here: " << dev_->compiler().identity();
  }
  void TearDown() override {
    for (const Allocation& a : allocs_) dev_->free_memory(a);
  }
  Allocation mem(uint64_t bytes) {
    allocs_.push_back(dev_->alloc_memory(bytes, BufferSpec{.cpu_access = true, .zero = true}));
    return allocs_.back();
  }

  // C_w += A_w . B_w^T for both waves, against a double loop; the binary, for the callers' own checks.
  std::vector<uint8_t> check(const std::string& type) {
    const bool bf16 = type == "BF16";
    const std::vector<uint8_t> bin = dev_->compiler().compile(product_kernel(GetParam().unit, type));
    auto p = dev_->load_program("mma16", bin);
    Allocation out = mem(512 * 4), a = mem(512 * 2), b = mem(512 * 2);
    std::vector<float> av(512), bv(512), cv(512);
    for (size_t i = 0; i < 512; ++i) {
      av[i] = kValues[(i * 7 + i / 16) % 12];
      bv[i] = kValues[(i * 5 + 3 * (i / 16) + 1) % 12];
      cv[i] = static_cast<float>(i % 9) - 4.0f;
      static_cast<uint16_t*>(a.host_ptr())[i] = bf16 ? bf16_bits(av[i]) : f16_bits(av[i]);
      static_cast<uint16_t*>(b.host_ptr())[i] = bf16 ? bf16_bits(bv[i]) : f16_bits(bv[i]);
      static_cast<float*>(out.host_ptr())[i] = cv[i];
    }
    auto q = dev_->compute_queue();
    q->exec(*p, LaunchArgs{{out.va, a.va, b.va}, {}}, Dims{1u, 1u, 1u}, Dims{2 * GetParam().lanes, 1u, 1u});
    q->signal(dev_->timeline_signal(), test::take_timeline_value(*dev_));
    q->submit();
    dev_->synchronize();
    const auto* got = static_cast<const float*>(out.host_ptr());
    for (int w = 0; w < 2; ++w)
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 16; ++n) {
          double want = cv[static_cast<size_t>(w * 256 + m * 16 + n)];
          for (int k = 0; k < 16; ++k)
            want += static_cast<double>(av[static_cast<size_t>(w * 256 + m * 16 + k)]) *
                    bv[static_cast<size_t>(w * 256 + n * 16 + k)];
          EXPECT_EQ(got[w * 256 + m * 16 + n], want) << type << " wave " << w << " row " << m << " column " << n;
        }
    return bin;
  }

  std::unique_ptr<Device> dev_;
  std::vector<Allocation> allocs_;
};

TEST_P(MatrixProducts, Float16SumsEqualTheDoubleLoop) { check("F16"); }
TEST_P(MatrixProducts, Bfloat16SumsEqualTheDoubleLoop) { check("BF16"); }

INSTANTIATE_TEST_SUITE_P(
    All, MatrixProducts,
    ::testing::Values(Case{"CPU", "WMMA_GFX11", 32}, Case{"CPU", "WMMA_GFX12", 32}, Case{"CPU", "MFMA_CDNA3", 64},
                      Case{"CPU", "MMA_SM80", 32}, Case{"SIM-AMD:gfx1100", "WMMA_GFX11", 32},
                      Case{"SIM-AMD:gfx1201", "WMMA_GFX12", 32}, Case{"SIM-AMD:gfx942", "MFMA_CDNA3", 64},
                      Case{"SIM-NV:ampere", "MMA_SM80", 32}, Case{"SIM-NV:hopper", "MMA_SM80", 32}),
    [](const auto& info) {
      std::string n = info.param.device + "_" + info.param.unit;
      for (char& c : n)
        if (c == ':' || c == '-') c = '_';
      return n;
    });

// The AMD code objects hold the matrix instructions themselves (LLVM's disassembler), not loops of FMAs.
class AmdMatrixBinaries : public MatrixProducts {};
TEST_P(AmdMatrixBinaries, HoldTheInstruction) {
  const std::string gfx = GetParam().device.substr(GetParam().device.find(':') + 1);
  const std::string mnemonic = GetParam().unit == "MFMA_CDNA3" ? "v_mfma_f32_16x16x16_" : "v_wmma_f32_16x16x16_";
  for (const char* type : {"F16", "BF16"}) {
    const std::vector<uint8_t> bin = check(type);
    const std::string path = ::testing::TempDir() + "/hcq_mma16_" + gfx + "_" + type + ".co";
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bin.data(), 1, bin.size(), f);
    std::fclose(f);
    const std::string cmd = "llvm-objdump-19 -d --mcpu=" + gfx + " " + path + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string text;
    std::array<char, 4096> buf{};
    while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) text.append(buf.data(), n);
    ASSERT_EQ(pclose(p), 0) << text;
    const std::string want = mnemonic + (std::string(type) == "F16" ? "f16" : "bf16");
    EXPECT_NE(text.find(want), std::string::npos) << gfx << " " << type << ": no " << want << " in\n"
                                                  << text.substr(0, 4000);
  }
}

INSTANTIATE_TEST_SUITE_P(Amd, AmdMatrixBinaries,
                         ::testing::Values(Case{"SIM-AMD:gfx1100", "WMMA_GFX11", 32},
                                           Case{"SIM-AMD:gfx1201", "WMMA_GFX12", 32},
                                           Case{"SIM-AMD:gfx942", "MFMA_CDNA3", 64}),
                         [](const auto& info) { return info.param.unit; });

// A GPU without the instruction refuses to build a kernel that uses it, naming the macro.
TEST(MatrixProductsElsewhere, Gfx12HasNoGfx11Wmma) {
  auto dev = test::open_machine(test::SimGpu{"SIM-AMD", "gfx1201"});
  try {
    dev->compiler().compile(product_kernel("WMMA_GFX11", "F16"));
    FAIL() << "gfx1201 built a gfx11 WMMA kernel";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("HCQ_MMA16_WMMA_GFX11_F16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hcq
