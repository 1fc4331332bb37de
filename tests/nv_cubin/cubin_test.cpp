// The cubin loader on NVRTC cubins for several SM versions (kernels, attributes, relocations, the source section),
// launch limits, and hostile input: every truncation and random byte flips of a real cubin give a CompileError or a
// consistent load, never a crash.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "../common/message_of.hpp"
#include "hcq/error.hpp"
#include "nv/cubin/cubin.hpp"
#include "nv/cubin/cubin_facts.hpp"
#include "nv/facts/arch.hpp"
#include "nv_kernels.hpp"

namespace hcq::nv {
namespace {

using test::cubin_for;
using test::kAxpbSource;
using test::kSharedGlobalSource;

constexpr auto compile_error_of = hcq::test::message_of<CompileError>;

class CubinPerArch : public ::testing::TestWithParam<std::string> {};

TEST_P(CubinPerArch, AxpbKernelAndItsAttributes) {
  REQUIRE_NVRTC();
  const std::string arch = GetParam();
  const Cubin c = Cubin::parse(cubin_for(arch, kAxpbSource));
  EXPECT_EQ(c.arch(), arch);
  EXPECT_EQ(c.identity().size(), 32u);
  ASSERT_EQ(c.kernels().size(), 1u);
  const CubinKernel& k = c.kernel("axpb");
  EXPECT_EQ(k.code_offset % 128, 0u);
  EXPECT_GT(k.code_size, 0u);
  EXPECT_LT(k.code_offset + k.code_size, c.image().size() + 1);
  EXPECT_GT(k.registers, 0u);
  EXPECT_LE(k.registers, 255u);
  // One 32-byte parameter block (2 x 8 + 3 x 4, rounded to 8) right after the architecture's driver prefix.
  EXPECT_EQ(k.param_offset, arch_from_name(arch).cbank0_param_offset);
  EXPECT_EQ(k.param_size, 32u);
  EXPECT_EQ(k.cbank0_size, k.param_offset + k.param_size);
  ASSERT_EQ(k.params.size(), 1u);
  EXPECT_EQ(k.params[0].offset, 0u);
  EXPECT_EQ(k.params[0].size, 32u);
  EXPECT_EQ(k.num_buffers, 2u);
  EXPECT_EQ(k.num_values, 3u);
  EXPECT_EQ(k.shared_bytes, c.reserved_shared_bytes());
  ASSERT_FALSE(k.exit_offsets.empty());
  for (uint32_t e : k.exit_offsets) EXPECT_LT(e, k.code_size);
  EXPECT_EQ(c.source(), kAxpbSource);
  EXPECT_EQ(c.kernel_at_code(k.code_offset), &k);
  EXPECT_EQ(c.kernel_at_code(k.code_offset + 16), nullptr);
  EXPECT_THROW((void)c.kernel("nope"), InvalidArgument);
}

TEST_P(CubinPerArch, SharedMemoryGlobalDataAndRelocations) {
  REQUIRE_NVRTC();
  const std::string arch = GetParam();
  const Cubin c = Cubin::parse(cubin_for(arch, kSharedGlobalSource));
  const CubinKernel& k = c.kernel("reverse_tile");
  // From sm_90 on, the compiler places shared variables after a 1 KiB system window, inside the section.
  EXPECT_EQ(k.shared_bytes, 1024u + (c.sm() >= 90 ? 1024u : 0u) + c.reserved_shared_bytes());
  EXPECT_EQ(k.num_buffers, 1u);
  EXPECT_EQ(k.num_values, 0u);
  const CubinKernel& b = c.kernel("bounded");
  ASSERT_TRUE(b.max_threads.has_value());
  EXPECT_EQ((*b.max_threads)[0], 128u);
  EXPECT_FALSE(b.num_buffers.has_value());  // not an HCQ_KERNEL: no descriptor

  // table_ptr (an 8-byte pointer in global data) points at table: an R_CUDA_G64 the loader applies at the base (and
  // constant bank 4 holds R_CUDA_64 addresses of the globals).
  ASSERT_FALSE(c.relocations().empty());
  const uint64_t base = 0x7f1234560000ull;
  const std::vector<uint8_t> img = c.image_at(base);
  ASSERT_EQ(img.size(), c.image().size());
  bool saw_64 = false;
  for (const Cubin::Relocation& r : c.relocations()) {
    ASSERT_LT(r.offset, img.size());
    if (r.type != static_cast<uint32_t>(cubin::Reloc::r64) && r.type != static_cast<uint32_t>(cubin::Reloc::g64))
      continue;
    saw_64 = true;
    uint64_t at_base = 0, at_zero = 0;
    std::memcpy(&at_base, img.data() + r.offset, 8);
    std::memcpy(&at_zero, c.image().data() + r.offset, 8);
    EXPECT_EQ(at_base, base + r.value);
    EXPECT_EQ(at_zero, r.value);
    EXPECT_LT(r.value, img.size());  // it points into the image
  }
  EXPECT_TRUE(saw_64);
  // The initial values of `table` are in the image.
  const float want[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  bool found = false;
  for (size_t o = 0; o + sizeof want <= img.size() && !found; o += 4)
    found = !std::memcmp(img.data() + o, want, sizeof want);
  EXPECT_TRUE(found);
  EXPECT_THROW((void)c.image_at(base + 4), InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Archs, CubinPerArch,
                         ::testing::Values("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"));

TEST(Cubin, SmVersionFromFlagsForBothAbiVersions) {
  EXPECT_EQ(cubin::sm_of_flags(8, 0x6005004), 80u);
  EXPECT_EQ(cubin::sm_of_flags(8, 0x6005a04), 90u);
  EXPECT_EQ(cubin::sm_of_flags(8, 0x6006402), 100u);
  EXPECT_EQ(cubin::sm_of_flags(8, 0x6007802), 120u);
  EXPECT_EQ(cubin::sm_of_flags(7, 0x5a055a), 90u);  // CUDA 12: SM in the low byte
}

TEST(Cubin, LaunchLimitsSayWhatDoesNotFit) {
  CubinKernel k;
  k.name = "k";
  k.registers = 64;
  k.shared_bytes = 48 * 1024;
  const LaunchLimits hopper = launch_limits(arch_from_name("hopper"));
  EXPECT_NO_THROW(Cubin::check_launch(k, {1024, 1, 1}, 0, hopper));  // 32 warps x 2048 = 65536
  k.registers = 65;
  try {
    Cubin::check_launch(k, {1024, 1, 1}, 0, hopper);
    ADD_FAILURE() << "no error for 1024 threads x 65 registers";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("1024 threads x 65 registers"), std::string::npos) << m;
    EXPECT_NE(m.find("65536"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(Cubin::check_launch(k, {32, 8, 1}, 0, hopper));
  try {
    Cubin::check_launch(k, {32, 1, 1}, hopper.max_shared_bytes_per_block, hopper);
    ADD_FAILURE() << "no error for too much shared memory";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("49152 static + "), std::string::npos) << e.what();
  }
  EXPECT_THROW(Cubin::check_launch(k, {1025, 1, 1}, 0, hopper), InvalidArgument);
  EXPECT_THROW(Cubin::check_launch(k, {0, 1, 1}, 0, hopper), InvalidArgument);
  k.reqntid = std::array<uint32_t, 3>{64, 1, 1};
  EXPECT_THROW(Cubin::check_launch(k, {32, 1, 1}, 0, hopper), InvalidArgument);
  EXPECT_NO_THROW(Cubin::check_launch(k, {64, 1, 1}, 0, hopper));
}

TEST(Cubin, LaunchBoundsOfARealKernel) {
  REQUIRE_NVRTC();
  const Cubin c = Cubin::parse(cubin_for("sm_90", kSharedGlobalSource));
  const LaunchLimits l = launch_limits(arch_from_name("sm_90"));
  EXPECT_NO_THROW(Cubin::check_launch(c.kernel("bounded"), {128, 1, 1}, 0, l));
  EXPECT_THROW(Cubin::check_launch(c.kernel("bounded"), {256, 1, 1}, 0, l), InvalidArgument);
}

// ---- hostile input ----

std::vector<uint8_t> real_cubin() { return cubin_for("sm_90", kSharedGlobalSource); }

// A loaded cubin must be self-consistent: everything it reports lies inside what it holds.
void expect_consistent(const Cubin& c) {
  for (const CubinKernel& k : c.kernels()) {
    EXPECT_LE(k.code_offset + k.code_size, c.image().size());
    EXPECT_LE(uint64_t{k.param_offset} + k.param_size, k.cbank0_size);
    for (const CubinConstantBank& b : c.banks_of(k)) {
      EXPECT_LE(b.offset + b.size, c.image().size());
      EXPECT_GE(b.bank, 1u);
      EXPECT_LE(b.bank, cubin::kMaxConstantBank);
    }
    (void)Cubin::check_launch;  // limits are checked separately
  }
  for (const Cubin::Relocation& r : c.relocations()) EXPECT_LE(r.offset + 4, c.image().size());
  for (const CubinConstantBank& b : c.constant_banks()) EXPECT_LE(b.offset + b.size, c.image().size());
  try {
    (void)c.image_at(Cubin::image_alignment());
  } catch (const InvalidArgument&) {
  }
}

TEST(CubinHostile, EveryTruncationIsACompileError) {
  REQUIRE_NVRTC();
  const std::vector<uint8_t> full = real_cubin();
  for (size_t n = 0; n < full.size(); ++n) {
    try {
      const Cubin c = Cubin::parse(std::span<const uint8_t>(full.data(), n));
      expect_consistent(c);  // a prefix that still holds every section referenced may load
    } catch (const CompileError&) {
    }
  }
}

TEST(CubinHostile, RandomByteFlipsNeverCrash) {
  REQUIRE_NVRTC();
  const std::vector<uint8_t> full = real_cubin();
  std::mt19937_64 rng(1234);
  size_t loaded = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = full;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      // Half the flips hit the headers and tables (the first and last KiB), where they matter most.
      const size_t at = (rng() & 1) ? rng() % b.size() : (rng() & 1) ? rng() % 1024 : b.size() - 1 - rng() % 1024;
      b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    try {
      const Cubin c = Cubin::parse(b);
      expect_consistent(c);
      ++loaded;
    } catch (const CompileError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(loaded, 0u);  // flips in code bytes change nothing the loader checks
}

// Patches one field of the real cubin and returns the loader's message.
template <class F>
std::string error_after(F patch) {
  std::vector<uint8_t> b = real_cubin();
  patch(b);
  return compile_error_of([&] { (void)Cubin::parse(b); });
}

Elf64_Ehdr header_of(const std::vector<uint8_t>& b) {
  Elf64_Ehdr h;
  std::memcpy(&h, b.data(), sizeof h);
  return h;
}
Elf64_Shdr section_named(const std::vector<uint8_t>& b, std::string_view name, size_t* offset = nullptr) {
  const Elf64_Ehdr eh = header_of(b);
  Elf64_Shdr strh;
  std::memcpy(&strh, b.data() + eh.e_shoff + eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof strh);
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr h;
    std::memcpy(&h, b.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof h);
    if (name == reinterpret_cast<const char*>(b.data() + strh.sh_offset + h.sh_name)) {
      if (offset) *offset = eh.e_shoff + i * sizeof(Elf64_Shdr);
      return h;
    }
  }
  ADD_FAILURE() << "no section " << name;
  return {};
}

// Edits the first entry of the first RELA section that relocates a loaded (SHF_ALLOC) section.
template <class Edit>
void patch_first_loaded_rela(std::vector<uint8_t>& b, Edit edit) {
  const Elf64_Ehdr eh = header_of(b);
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr h;
    std::memcpy(&h, b.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof h);
    if (h.sh_type != SHT_RELA || h.sh_size == 0) continue;
    Elf64_Shdr target;
    std::memcpy(&target, b.data() + eh.e_shoff + h.sh_info * sizeof(Elf64_Shdr), sizeof target);
    if (!(target.sh_flags & SHF_ALLOC)) continue;
    Elf64_Rela r;
    std::memcpy(&r, b.data() + h.sh_offset, sizeof r);
    edit(r);
    std::memcpy(b.data() + h.sh_offset, &r, sizeof r);
    return;
  }
  ADD_FAILURE() << "no loaded relocation to patch";
}

TEST(CubinHostile, ClearMessagesForWhatIsWrong) {
  REQUIRE_NVRTC();
  EXPECT_NE(error_after([](auto& b) { b[18] = 224; }).find("EM_CUDA"), std::string::npos);
  EXPECT_NE(error_after([](auto& b) { b[16] = 1; }).find("ET_REL"), std::string::npos);
  EXPECT_NE(error_after([](auto& b) { b[0] = 0; }).find("not an ELF"), std::string::npos);
  EXPECT_NE(error_after([](auto& b) { b.resize(100); }).find("section header table"), std::string::npos);
  // A relocation type the loader does not apply.
  {
    const std::string m = error_after([](auto& b) {
      patch_first_loaded_rela(b, [](Elf64_Rela& r) { r.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), 99); });
    });
    EXPECT_NE(m.find("relocation type 99"), std::string::npos) << m;
  }
  // A 32-bit relocation whose value cannot fit its field (the fuzzer's find: it was an InvalidArgument from the
  // relocation at base 0, which parse() let out).
  {
    const std::string m = error_after([](auto& b) {
      patch_first_loaded_rela(b, [](Elf64_Rela& r) {
        r.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), static_cast<uint32_t>(cubin::Reloc::r32));
        r.r_addend = int64_t{1} << 40;
      });
    });
    EXPECT_NE(m.find("R_CUDA_32 against"), std::string::npos) << m;
    EXPECT_NE(m.find("does not fit its 32-bit field"), std::string::npos) << m;
  }
  // The kernel's parameters said to overflow its cbank0.
  {
    const std::string m = error_after([](auto& b) {
      const Elf64_Shdr info = section_named(b, ".nv.info.reverse_tile");
      for (uint64_t o = 0; o + 4 <= info.sh_size;) {
        uint8_t* rec = b.data() + info.sh_offset + o;
        uint16_t v;
        std::memcpy(&v, rec + 2, 2);
        if (rec[0] == 0x04 && rec[1] == static_cast<uint8_t>(cubin::Attr::param_cbank)) {
          const uint16_t huge = 0xfff0;
          std::memcpy(rec + 4 + 4, &huge, 2);  // param offset
          return;
        }
        o += rec[0] == 0x04 ? 4 + v : 4;
      }
      ADD_FAILURE() << "no EIATTR_PARAM_CBANK";
    });
    EXPECT_NE(m.find("overflow"), std::string::npos) << m;
  }
}

TEST(Cubin, AppendSectionKeepsEverythingElse) {
  REQUIRE_NVRTC();
  const std::vector<uint8_t>& full = cubin_for("sm_80", kAxpbSource);
  const Cubin a = Cubin::parse(full);
  const std::string extra = "more bytes";
  const std::vector<uint8_t> grown =
      append_section(full, ".hcq.note", std::span(reinterpret_cast<const uint8_t*>(extra.data()), extra.size()));
  const Cubin b = Cubin::parse(grown);
  EXPECT_EQ(a.image(), b.image());
  EXPECT_EQ(b.source(), a.source());
  const std::span<const uint8_t> s = b.section(".hcq.note");
  EXPECT_EQ(std::string(s.begin(), s.end()), extra);
  EXPECT_NE(a.identity(), b.identity());
  EXPECT_THROW((void)append_section(std::span<const uint8_t>(full.data(), 10), ".x", {}), CompileError);
}

// NVRTC 13 for sm_86 keeps a kernel's 64-bit literals in its own constant bank 2 (.nv.constant2.<kernel>): the loader
// lays the section out in the image, 256-byte aligned, with its bytes, and names it as the kernel's bank 2, which
// banks_of() adds to the module's banks for a launch.
TEST(Cubin, Sm86KernelConstantBank2IsLaidOutForTheKernel) {
  REQUIRE_NVRTC();
  const std::vector<uint8_t>& elf = cubin_for("sm_86", test::kConstantBank2Source);
  const Cubin c = Cubin::parse(elf);
  const CubinKernel& k = c.kernel("stack3");
  const Elf64_Shdr sec = section_named(elf, ".nv.constant2.stack3");
  ASSERT_GT(sec.sh_size, 0u) << "NVRTC no longer puts this kernel's literals in bank 2: pick another kernel";
  ASSERT_EQ(k.banks.size(), 1u);
  EXPECT_EQ(k.banks[0].bank, 2u);
  EXPECT_EQ(k.banks[0].size, sec.sh_size);
  EXPECT_EQ(k.banks[0].offset % cubin::kConstantAlign, 0u);
  ASSERT_LE(k.banks[0].offset + k.banks[0].size, c.image().size());
  EXPECT_TRUE(std::equal(c.image().begin() + static_cast<ptrdiff_t>(k.banks[0].offset),
                         c.image().begin() + static_cast<ptrdiff_t>(k.banks[0].offset + k.banks[0].size),
                         elf.begin() + static_cast<ptrdiff_t>(sec.sh_offset)));
  // Not the module's: the module's banks stay as they were, and a launch of the kernel binds both.
  for (const CubinConstantBank& m : c.constant_banks()) EXPECT_NE(m.bank, 2u);
  const std::vector<CubinConstantBank> all = c.banks_of(k);
  EXPECT_EQ(all.size(), c.constant_banks().size() + 1);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(), [](auto& a, auto& b) { return a.bank < b.bank; }));
}

// A kernel bank whose kernel is not in the cubin, and a bank number out of range, are refused by name.
TEST(CubinHostile, KernelConstantBankOfNoKernelOrOutOfRange) {
  REQUIRE_NVRTC();
  const std::vector<uint8_t>& elf = cubin_for("sm_86", test::kConstantBank2Source);
  auto rename = [&](std::string_view to) {
    std::vector<uint8_t> b = elf;
    const Elf64_Ehdr eh = header_of(b);
    Elf64_Shdr strh;
    std::memcpy(&strh, b.data() + eh.e_shoff + eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof strh);
    const Elf64_Shdr sec = section_named(b, ".nv.constant2.stack3");
    char* name = reinterpret_cast<char*>(b.data() + strh.sh_offset + sec.sh_name);
    EXPECT_EQ(std::strlen(name), to.size());
    std::memcpy(name, to.data(), to.size());
    return compile_error_of([&] { (void)Cubin::parse(b); });
  };
  const std::string no_kernel = rename(".nv.constant2.stacks");
  EXPECT_NE(no_kernel.find("bad cubin: .nv.constant2.stacks: constant bank 2 of 'stacks', which is no kernel here"),
            std::string::npos)
      << no_kernel;
  const std::string range = rename(".nv.constant18.stack");
  EXPECT_NE(range.find("bad cubin: .nv.constant18.stack: constant bank 18 out of range"), std::string::npos) << range;
  const std::string unknown = rename(".nv.constant99stack3");
  EXPECT_NE(unknown.find("an allocated section of a kind this loader does not know"), std::string::npos) << unknown;
}

}  // namespace
}  // namespace hcq::nv
