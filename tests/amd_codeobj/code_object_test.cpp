// The AMDHSA code object loader against real LLVM 19 output for gfx1100, gfx942 and gfx1201, and against malformed
// objects (every truncation, every single-byte flip, random mutations, bad indexes): an error, never a crash.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "amd/codeobj/code_object.hpp"
#include "amd/target.hpp"
#include "hcq/error.hpp"
#include "kernels.hpp"

namespace hcq::amd {
namespace {

class CodeObjectPerTarget : public ::testing::TestWithParam<std::string> {};

uint32_t lds_field(const Target& t, uint32_t rsrc2) {
  for (const Field& f : t.regs->find("COMPUTE_PGM_RSRC2")->fields)
    if (f.name == "lds_size") return f.get(rsrc2);
  ADD_FAILURE() << "no lds_size field";
  return 0;
}

TEST_P(CodeObjectPerTarget, CKernelFactsFromDescriptorAndMetadata) {
  const std::string gfx = GetParam();
  const CodeObject co = CodeObject::parse(test::axpb_code_object(gfx));
  EXPECT_EQ(co.gfx(), gfx);
  EXPECT_EQ(co.version(), 5u);
  EXPECT_EQ(co.identity().size(), 32u);
  ASSERT_EQ(co.kernels().size(), 1u);
  const CodeObjectKernel& k = co.kernel("axpb");
  // 2 buffers (8 bytes each) then 3 values (4 bytes each).
  EXPECT_EQ(k.kernarg_segment_size, 28u);
  EXPECT_EQ(k.descriptor.kernarg_size, 28u);
  EXPECT_EQ(k.arg_count, 5u);
  EXPECT_EQ(k.num_buffers, 2u);
  EXPECT_EQ(k.num_values, 3u);
  EXPECT_EQ(k.descriptor_offset % 64, 0u);
  EXPECT_EQ(k.code_offset % 256, 0u);
  EXPECT_LT(k.code_offset, co.image().size());
  EXPECT_EQ(co.kernel_at_code(k.code_offset), &k);
  EXPECT_EQ(co.kernel_at_descriptor(k.descriptor_offset), &k);
  EXPECT_EQ(co.kernel_at_code(k.descriptor_offset), nullptr);
  EXPECT_TRUE(k.descriptor.kernel_code_properties & KernelDescriptor::kKernargSegmentPtr);
  // The dims come from the launch block in the kernarg segment: the kernel does not ask for the dispatch pointer.
  EXPECT_FALSE(k.descriptor.kernel_code_properties & KernelDescriptor::kDispatchPtr);

  const Target& t = Target::from_gfx(gfx);
  const KernelInfo info = co.info("axpb", t);
  EXPECT_FALSE(info.dispatch_ptr);
  EXPECT_EQ(info.wave32, gfx != "gfx942");
  EXPECT_EQ(info.group_segment_size, 0u);
  EXPECT_EQ(info.private_segment_size, 0u);
  EXPECT_NE(info.rsrc1, 0u);  // VGPR/SGPR counts, float mode
  EXPECT_EQ(lds_field(t, info.rsrc2), 0u);
  EXPECT_EQ(info.rsrc3, k.descriptor.compute_pgm_rsrc3);

  const std::span<const uint8_t> src = co.section(".hcq.source");
  EXPECT_EQ(std::string(src.begin(), src.end()), test::kAxpbSource);
  EXPECT_TRUE(co.relocations().empty());
  EXPECT_EQ(co.image_at(co.image_alignment()), co.image());
}

TEST_P(CodeObjectPerTarget, IrKernelWithLds) {
  const std::string gfx = GetParam();
  const CodeObject co = CodeObject::parse(test::lds_code_object(gfx));
  const CodeObjectKernel& k = co.kernel("lds_reverse");
  EXPECT_EQ(k.descriptor.group_segment_fixed_size, 1024u);
  EXPECT_EQ(k.arg_count, 2u);
  EXPECT_EQ(k.num_buffers, 1u);
  EXPECT_EQ(k.num_values, 1u);
  EXPECT_GE(k.kernarg_segment_size, 12u);
  EXPECT_TRUE(co.section(".hcq.source").empty());
  const Target& t = Target::from_gfx(gfx);
  const KernelInfo info = co.info("lds_reverse", t);
  EXPECT_EQ(info.group_segment_size, 1024u);
  EXPECT_EQ(lds_field(t, info.rsrc2), 1024u / t.lds_granule_bytes);
  // Dynamic LDS adds to the fixed part.
  EXPECT_EQ(co.info("lds_reverse", t, 1024).group_segment_size, 2048u);
}

INSTANTIATE_TEST_SUITE_P(Targets, CodeObjectPerTarget, ::testing::Values("gfx1100", "gfx942", "gfx1201"));

TEST(CodeObject, WrongTargetAndUnknownKernel) {
  const CodeObject co = CodeObject::parse(test::axpb_code_object("gfx1100"));
  EXPECT_THROW(co.info("axpb", Target::from_gfx("gfx942")), InvalidArgument);
  try {
    co.kernel("nope");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("axpb"), std::string::npos) << e.what();
  }
}

// Parses `bytes`: either it loads (and then its kernels can be asked about) or it is a CompileError saying
// "bad code object"; anything else fails the test.
void parse_or_bad(std::span<const uint8_t> bytes, const std::string& what) {
  try {
    const CodeObject co = CodeObject::parse(bytes);
    for (const CodeObjectKernel& k : co.kernels()) {
      try {
        (void)co.info(k.name, Target::from_gfx(co.gfx()));
      } catch (const InvalidArgument&) {
        // a flipped descriptor asking for user SGPRs we do not set up, or an unknown target: fine
      }
    }
  } catch (const CompileError& e) {
    if (std::string(e.what()).rfind("bad code object: ", 0) != 0) ADD_FAILURE() << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected " << e.what();
  }
}

TEST(CodeObjectMalformed, EveryTruncation) {
  const std::vector<uint8_t>& good = test::axpb_code_object("gfx1100");
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + n);  // a copy, so ASan sees reads past the end
    EXPECT_THROW(CodeObject::parse(cut), CompileError) << "prefix of " << n << " bytes";
  }
}

TEST(CodeObjectMalformed, EveryByteFlipped) {
  const std::vector<uint8_t>& good = test::axpb_code_object("gfx1201");
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t x : {uint8_t{0xff}, uint8_t{0x80}}) {
      std::vector<uint8_t> bad = good;
      bad[i] ^= x;
      parse_or_bad(bad, "byte " + std::to_string(i) + " ^ " + std::to_string(x));
    }
  }
}

TEST(CodeObjectMalformed, RandomMutations) {
  std::mt19937_64 rng(1234);
  const std::vector<uint8_t>& good = test::lds_code_object("gfx942");
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> bad = good;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int j = 0; j < n; ++j) {
      const size_t at = rng() % bad.size();
      switch (rng() % 3) {
        case 0: bad[at] = static_cast<uint8_t>(rng()); break;
        case 1: bad[at] = 0xff; break;
        default:  // a large little-endian value where offsets and sizes live
          for (size_t b = at; b < std::min(bad.size(), at + 8); ++b) bad[b] = static_cast<uint8_t>(rng() | 0x80);
      }
    }
    if (rng() % 4 == 0) bad.resize(rng() % bad.size());
    parse_or_bad(bad, "mutation " + std::to_string(iter));
  }
}

template <class T>
void poke(std::vector<uint8_t>& b, size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}
template <class T>
T peek(const std::vector<uint8_t>& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

void expect_bad(const std::vector<uint8_t>& bytes, const std::string& needle) {
  try {
    (void)CodeObject::parse(bytes);
    ADD_FAILURE() << "parsed; expected an error mentioning '" << needle << "'";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CodeObjectMalformed, BadHeaderFieldsAndIndexes) {
  const std::vector<uint8_t> good = test::axpb_code_object("gfx1100");
  const auto eh = peek<Elf64_Ehdr>(good, 0);
  std::vector<uint8_t> b;

  // clang-format off: one corruption and its expected complaint per row
  b = good; b[0] = 0; expect_bad(b, "no ELF magic");
  b = good; poke<uint16_t>(b, offsetof(Elf64_Ehdr, e_machine), 62); expect_bad(b, "EM_AMDGPU");
  b = good; b[EI_OSABI] = 0; expect_bad(b, "ELFOSABI_AMDGPU_HSA");
  b = good; b[EI_ABIVERSION] = 1; expect_bad(b, "v4, v5 and v6");
  b = good; poke<uint16_t>(b, offsetof(Elf64_Ehdr, e_type), ET_REL); expect_bad(b, "ET_DYN");
  b = good; poke<uint32_t>(b, offsetof(Elf64_Ehdr, e_flags), 0x7f); expect_bad(b, "EF_AMDGPU_MACH");
  b = good; poke<uint64_t>(b, offsetof(Elf64_Ehdr, e_phoff), ~0ull - 8); expect_bad(b, "program header table");
  b = good; poke<uint16_t>(b, offsetof(Elf64_Ehdr, e_shnum), 0xffff); expect_bad(b, "section header table");
  b = good; poke<uint16_t>(b, offsetof(Elf64_Ehdr, e_shstrndx), eh.e_shnum); expect_bad(b, "section name table index");
  b = good; poke<uint16_t>(b, offsetof(Elf64_Ehdr, e_phentsize), 32); expect_bad(b, "e_phentsize");

  // Section-level: point the symbol table's sh_link past the section table, then at a non-string section; make a
  // PT_LOAD claim file bytes past the end.
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    const size_t at = eh.e_shoff + size_t{i} * sizeof(Elf64_Shdr);
    const auto sh = peek<Elf64_Shdr>(good, at);
    if (sh.sh_type != SHT_SYMTAB) continue;
    b = good; poke<uint32_t>(b, at + offsetof(Elf64_Shdr, sh_link), 999); expect_bad(b, "not a string table");
    b = good; poke<uint32_t>(b, at + offsetof(Elf64_Shdr, sh_link), 0); expect_bad(b, "not a string table");
    b = good; poke<uint64_t>(b, at + offsetof(Elf64_Shdr, sh_size), 1ull << 40); expect_bad(b, "outside");
    b = good; poke<uint64_t>(b, at + offsetof(Elf64_Shdr, sh_entsize), 16); expect_bad(b, "entry size");
  }
  for (uint32_t i = 0; i < eh.e_phnum; ++i) {
    const size_t at = eh.e_phoff + size_t{i} * sizeof(Elf64_Phdr);
    if (peek<Elf64_Phdr>(good, at).p_type != PT_LOAD) continue;
    b = good; poke<uint64_t>(b, at + offsetof(Elf64_Phdr, p_filesz), good.size() + 1); expect_bad(b, "PT_LOAD");
    b = good; poke<uint64_t>(b, at + offsetof(Elf64_Phdr, p_vaddr), ~0ull - 4); expect_bad(b, "PT_LOAD");
    break;
  }
  // clang-format on
}

}  // namespace
}  // namespace hcq::amd
