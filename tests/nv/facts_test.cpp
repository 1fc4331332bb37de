// The fact tables themselves: lookups, ordering, field extents, and the numbers the rest of hcq relies on.
#include <gtest/gtest.h>

#include "hcq/error.hpp"
#include "nv/facts/arch.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/facts/methods.hpp"
#include "nv/facts/qmd.hpp"

namespace hcq::nv {
namespace {

TEST(NvFacts, ArchitecturesByNameSmAndClass) {
  EXPECT_EQ(arch_from_name("ampere").sm, 86u);
  EXPECT_EQ(arch_from_name("ada").classes.compute, 0xc9c0u);
  EXPECT_EQ(arch_from_name("hopper").classes.gpfifo, 0xc86fu);
  EXPECT_EQ(arch_from_name("blackwell").qmd_version, 5u);
  EXPECT_EQ(arch_from_name("sm_80").sm, 80u);
  EXPECT_EQ(arch_from_name("sm90").arch, NvArch::hopper);
  EXPECT_EQ(arch_from_name("sm_120").classes.copy, 0xcab5u);
  EXPECT_THROW(arch_from_name("volta"), InvalidArgument);
  EXPECT_THROW(arch_from_name("sm_"), InvalidArgument);
  EXPECT_THROW(arch_from_name("sm_75"), InvalidArgument);
  EXPECT_EQ(find_arch_by_compute_class(0xcdc0)->sm, 100u);
  // RM's class lists: GA100 has the _A Ampere classes, GA10x the _B ones (no chip pairs c6c0 with c7b5).
  EXPECT_EQ(arch_from_name("sm_80").classes.compute, 0xc6c0u);
  EXPECT_EQ(arch_from_name("sm_80").classes.copy, 0xc6b5u);
  EXPECT_EQ(arch_from_name("sm_86").classes.compute, 0xc7c0u);
  EXPECT_EQ(arch_from_name("sm_86").classes.copy, 0xc7b5u);
  EXPECT_EQ(arch_from_name("sm_89").classes.copy, 0xc7b5u);
  EXPECT_EQ(find_arch_by_sm(61), nullptr);
  EXPECT_EQ(arch_info(NvArch::hopper).cbank0_param_offset, 0x210u);
  EXPECT_EQ(arch_info(NvArch::blackwell).cbank0_param_offset, 0x380u);
  EXPECT_EQ(arch_info(NvArch::ampere).sass_version(), 0x86u);
  for (const NvArchInfo& a : nv_arch_table()) {
    SCOPED_TRACE(a.sm);
    // Every class an architecture names has a method table, of the right kind.
    EXPECT_EQ(find_class(a.classes.gpfifo)->kind, ClassKind::host);
    EXPECT_EQ(find_class(a.classes.compute)->kind, ClassKind::compute);
    EXPECT_EQ(find_class(a.classes.copy)->kind, ClassKind::copy);
    EXPECT_FALSE(a.classes.usermode.empty());
    EXPECT_EQ(qmd::layout(a.qmd_version).major_version, a.qmd_version);
    EXPECT_TRUE(std::is_sorted(a.shared_carveouts_kib.begin(), a.shared_carveouts_kib.end()));
    EXPECT_LE(a.shared_carveouts_kib.back() * 1024u, 228u * 1024u);
  }
}

TEST(NvFacts, MethodTablesAreSortedAndFieldsFitTheirWord) {
  for (const ClassMethods* c : all_classes()) {
    SCOPED_TRACE(std::string(c->prefix));
    for (size_t i = 0; i < c->methods.size(); ++i) {
      const Method& m = c->methods[i];
      if (i) {
        EXPECT_LT(c->methods[i - 1].offset, m.offset) << m.name;
      }
      EXPECT_EQ(m.offset % 4, 0u);
      EXPECT_EQ(c->find(m.offset), &m);
      EXPECT_EQ(c->find(m.name), &m);
      // Host methods live in the host class only.
      EXPECT_EQ(m.offset < pb::kHostMethodLimit, c->kind == ClassKind::host) << m.name;
      uint64_t used = 0;
      for (const BitField& f : m.fields) {
        EXPECT_LE(f.hi(), 31u) << m.name << "." << f.name;
        const uint64_t bits = f.mask() << f.lo;
        EXPECT_EQ(used & bits, 0u) << m.name << "." << f.name << " overlaps another field";
        used |= bits;
        for (const EnumName& e : f.enums) EXPECT_TRUE(f.fits(e.value)) << f.name << "_" << e.name;
      }
    }
  }
  EXPECT_EQ(find_class(0xc56f)->find("SEM_ADDR_HI")->fields[0].width, 8u);
  EXPECT_EQ(find_class(0xc86f)->find("SEM_ADDR_HI")->fields[0].width, 25u);
  EXPECT_EQ(find_class(0x1234), nullptr);
  // LAUNCH_DMA: FORCE_RMWDISABLE (bit 11) through NVC8B5, gone from NVC9B5; two-word semaphores from NVC7B5 on.
  for (uint32_t cls : {0xc6b5u, 0xc7b5u, 0xc8b5u, 0xc9b5u, 0xcab5u}) {
    SCOPED_TRACE(cls);
    const Method* launch = find_class(cls)->find("LAUNCH_DMA");
    ASSERT_NE(launch, nullptr);
    EXPECT_EQ(launch->field("FORCE_RMWDISABLE") != nullptr, cls <= 0xc8b5u);
    EXPECT_EQ(launch->field("SEMAPHORE_PAYLOAD_SIZE") != nullptr, cls != 0xc6b5u);
    EXPECT_EQ(find_class(cls)->find("SET_SEMAPHORE_PAYLOAD_UPPER") != nullptr, cls != 0xc6b5u);
  }
  EXPECT_EQ(pb::header(SecOp::inc_method, 1, 0x2b4, 1), 0x200120adu);  // the vectors' SEND_PCAS_A header
}

TEST(NvFacts, QmdTablesHaveNoOverlapsAndFitTheirSize) {
  for (uint32_t v : {3u, 5u}) {
    SCOPED_TRACE(v);
    const qmd::QmdLayout& l = qmd::layout(v);
    EXPECT_EQ(l.size_bytes(), v == 3 ? 256u : 384u);
    for (size_t i = 0; i < l.fields.size(); ++i) {
      const BitField& f = l.fields[i];
      EXPECT_LT(f.hi(), l.size_words * 32) << f.name;
      EXPECT_LE(f.width, 32u) << f.name;
      if (i) {
        EXPECT_GT(f.lo, l.fields[i - 1].hi()) << f.name << " overlaps " << l.fields[i - 1].name;
      }
      EXPECT_EQ(l.find(f.name), &f) << "duplicate name " << f.name;
    }
  }
  EXPECT_THROW(qmd::layout(4), InvalidArgument);
  // Spot values from the headers: V3 CTA_RASTER_WIDTH MW(415:384), V5 GRID_WIDTH MW(1279:1248),
  // V5 CONSTANT_BUFFER_VALID(i) MW(1856+4i).
  EXPECT_EQ(qmd::layout(3).find("CTA_RASTER_WIDTH")->lo, 384u);
  EXPECT_EQ(qmd::layout(5).find("GRID_WIDTH")->lo, 1248u);
  EXPECT_EQ(qmd::layout(5).find("CONSTANT_BUFFER_VALID_7")->lo, 1856u + 28u);
  EXPECT_EQ(qmd::layout(3).find("CONSTANT_BUFFER_SIZE_SHIFTED4_1")->lo, 1075u + 64u);
  EXPECT_EQ(qmd::layout(5).find("RELEASE_PAYLOAD64B_1")->lo, 316u);
}

TEST(NvFacts, QmdGetSetStraddleAndLimits) {
  std::vector<uint32_t> q(64, 0);
  const BitField straddle{"TEST", 60, 8};
  qmd::set(q, straddle, 0xa5);
  EXPECT_EQ(q[1], 0x5u << 28);
  EXPECT_EQ(q[2], 0xau);
  EXPECT_EQ(qmd::get(q, straddle), 0xa5u);
  EXPECT_THROW(qmd::set(q, straddle, 0x100), InvalidArgument);
  const BitField beyond{"BEYOND", 2040, 16};
  EXPECT_THROW(qmd::get(q, beyond), InvalidArgument);
  EXPECT_THROW(qmd::set(q, beyond, 1), InvalidArgument);
}

TEST(NvFacts, GpfifoAndDoorbellNumbers) {
  EXPECT_EQ(gpfifo::kLevel.lo, 41u);
  EXPECT_EQ(gpfifo::kLength.lo, 42u);
  EXPECT_EQ(gpfifo::kLength.width, 21u);
  EXPECT_EQ(gpfifo::kUserdGpGetOffset, 0x88u);
  EXPECT_EQ(gpfifo::kUserdGpPutOffset, 0x8cu);
  EXPECT_EQ(gpfifo::kDoorbellOffset, 0x90u);
}

}  // namespace
}  // namespace hcq::nv
