// The CPU compiler and ELF loader: real objects from clang-19 load and run; malformed objects (truncated, bad
// offsets and indexes, random byte flips) throw CompileError and never crash or read out of bounds.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../drivers/cpu/cpu_compiler.hpp"
#include "../../drivers/cpu/elf_loader.hpp"
#include "hcq/backend/os.hpp"
#include "hcq/error.hpp"
#include "hcq/kernel_abi.h"

namespace hcq::cpu {
namespace {

constexpr const char* kAddOne = R"(
HCQ_KERNEL(add1, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(float, 1)[i] + 1.0f;
  }
}
)";

// Uses writable data, a constant table, an external libm call and a call stub: every part of the layout.
constexpr const char* kMixed = R"(
static const float table[4] = {1.0f, 4.0f, 9.0f, 16.0f};
static int calls;
float (*volatile pick)(float) = sqrtf;
HCQ_KERNEL(roots, 1, 0) {
  calls++;
  float *out = HCQ_BUF(float, 0);
  HCQ_FOR_EACH_THREAD(x, y, z) { out[x] = pick(table[x & 3]) + sqrtf(table[x & 3]); }
  memset(out + 4, 0, 4 * sizeof(float));
  out[8] = (float)calls;
}
)";

class CpuElfLoader : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CpuCompiler cc(real_os());
    add_one_obj = cc.compile(kAddOne);
    mixed_obj = cc.compile(kMixed);
  }
  // Loads `bytes`: success or CompileError are both fine, anything else (another exception, a crash) is not.
  static void load_or_compile_error(const std::vector<uint8_t>& bytes) {
    try {
      ElfImage image = ElfImage::load(bytes);
      (void)image.find("add1");
    } catch (const CompileError& e) {
      // "bad ELF: ..." or, when a flip renamed an external symbol, "kernel calls '<name>' ...".
      const std::string msg = e.what();
      EXPECT_TRUE(msg.find("bad ELF: ") == 0 || msg.find("kernel calls '") == 0) << msg;
    }
  }
  // Compiled once for the suite (a clang run is tens of milliseconds).
  static inline std::vector<uint8_t> add_one_obj, mixed_obj;
  const std::vector<uint8_t>* add_one_ = &add_one_obj;
  const std::vector<uint8_t>* mixed_ = &mixed_obj;
};

hcq_dispatch one_group(const void* kernargs, uint32_t nbufs, uint32_t local_x) {
  hcq_dispatch d{};
  d.kernargs = static_cast<const unsigned char*>(kernargs);
  d.vals = reinterpret_cast<const uint32_t*>(d.kernargs + 8 * nbufs);
  for (int i = 0; i < 3; ++i) d.num_groups[i] = d.local_size[i] = 1;
  d.local_size[0] = local_x;
  return d;
}

TEST_F(CpuElfLoader, LoadsAndRunsAKernel) {
  ElfImage image = ElfImage::load(*add_one_);
  auto fn = image.find("add1");
  ASSERT_TRUE(fn);
  EXPECT_EQ(fn->type, STT_FUNC);
  auto desc_sym = image.find("add1_hcq_desc");
  ASSERT_TRUE(desc_sym);
  hcq_kernel_desc desc;
  std::memcpy(&desc, reinterpret_cast<const void*>(desc_sym->addr), sizeof desc);
  EXPECT_EQ(desc.magic, HCQ_KERNEL_MAGIC);
  EXPECT_EQ(desc.nbufs, 2u);
  EXPECT_EQ(desc.nvals, 1u);

  std::vector<float> in(64), out(64, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  struct {
    uint64_t bufs[2];
    uint32_t n;
  } args{{reinterpret_cast<uint64_t>(out.data()), reinterpret_cast<uint64_t>(in.data())}, 60};
  const hcq_dispatch d = one_group(&args, 2, 64);
  reinterpret_cast<void (*)(const hcq_dispatch*)>(fn->addr)(&d);
  for (size_t i = 0; i < 60; ++i) EXPECT_EQ(out[i], in[i] + 1.0f) << i;
  for (size_t i = 60; i < 64; ++i) EXPECT_EQ(out[i], -1.0f) << i;  // the bound value is honoured
  EXPECT_FALSE(image.find("no_such_symbol"));
  EXPECT_EQ(image.function_names(), std::vector<std::string>{"add1"});
}

TEST_F(CpuElfLoader, DataConstantsAndExternalCallsAreRelocated) {
  ElfImage image = ElfImage::load(*mixed_);
  auto fn = image.find("roots");
  ASSERT_TRUE(fn);
  std::vector<float> out(9, -1.0f);
  const uint64_t buf = reinterpret_cast<uint64_t>(out.data());
  const hcq_dispatch d = one_group(&buf, 1, 4);
  auto kernel = reinterpret_cast<void (*)(const hcq_dispatch*)>(fn->addr);
  kernel(&d);
  kernel(&d);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], 4.0f);
  EXPECT_EQ(out[2], 6.0f);
  EXPECT_EQ(out[3], 8.0f);
  EXPECT_EQ(out[4], 0.0f);  // memset through the whitelist
  EXPECT_EQ(out[8], 2.0f);  // writable .bss kept its state between calls
}

TEST_F(CpuElfLoader, UnknownExternalSymbolIsNamed) {
  CpuCompiler cc(real_os());
  const auto obj = cc.compile("int puts(const char *);\nHCQ_KERNEL(k, 0, 0) { puts(\"hi\"); }\n");
  try {
    ElfImage::load(obj);
    FAIL() << "an object calling puts loaded";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("'puts'"), std::string::npos) << e.what();
  }
}

TEST_F(CpuElfLoader, CompileErrorCarriesDiagnostics) {
  CpuCompiler cc(real_os());
  try {
    cc.compile("HCQ_KERNEL(k, 0, 0) {\n  this is not C;\n}\n");
    FAIL() << "bad source compiled";
  } catch (const CompileError& e) {
    // #line makes the user's own line numbers show through the prepended ABI.
    EXPECT_NE(std::string(e.what()).find("kernel.c:2"), std::string::npos) << e.what();
  }
}

TEST_F(CpuElfLoader, MissingCompilerSaysHowToInstallIt) {
  const char* old = std::getenv("HCQ_CC");
  const std::string saved = old ? old : "";
  setenv("HCQ_CC", "/nonexistent/clang-19", 1);
  CpuCompiler cc(real_os());
  if (old) setenv("HCQ_CC", saved.c_str(), 1);
  else unsetenv("HCQ_CC");
  try {
    cc.compile(kAddOne);
    FAIL() << "compiled without a compiler";
  } catch (const CompileError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/nonexistent/clang-19"), std::string::npos) << msg;
    EXPECT_NE(msg.find("apt-get install clang-19"), std::string::npos) << msg;
  }
  EXPECT_NE(cc.identity().find("unavailable"), std::string::npos) << cc.identity();
}

TEST_F(CpuElfLoader, IdentityTargetAndOptionsDescribeTheBuild) {
  CpuCompiler cc(real_os());
  EXPECT_NE(cc.identity().find("clang"), std::string::npos) << cc.identity();
  EXPECT_EQ(cc.target().rfind("x86_64-", 0), 0u) << cc.target();
  EXPECT_NE(cc.options().find("-march=native"), std::string::npos);
  EXPECT_EQ(cc.identity(), cc.identity());  // cached, stable
}

TEST_F(CpuElfLoader, RejectsNonElfAndWrongKinds) {
  EXPECT_THROW(ElfImage::load({}), CompileError);
  const std::vector<uint8_t> text(200, 'x');
  EXPECT_THROW(ElfImage::load(text), CompileError);

  auto with = [&](auto edit) {
    std::vector<uint8_t> b = *add_one_;
    auto* eh = reinterpret_cast<Elf64_Ehdr*>(b.data());
    edit(*eh);
    return b;
  };
  EXPECT_THROW(ElfImage::load(with([](Elf64_Ehdr& e) { e.e_ident[EI_CLASS] = ELFCLASS32; })), CompileError);
  EXPECT_THROW(ElfImage::load(with([](Elf64_Ehdr& e) { e.e_type = ET_DYN; })), CompileError);
  EXPECT_THROW(ElfImage::load(with([](Elf64_Ehdr& e) { e.e_machine = EM_AARCH64; })), CompileError);
  EXPECT_THROW(ElfImage::load(with([](Elf64_Ehdr& e) { e.e_shoff = ~0ull - 8; })), CompileError);
  EXPECT_THROW(ElfImage::load(with([](Elf64_Ehdr& e) { e.e_shnum = 0xffff; })), CompileError);
  EXPECT_THROW(ElfImage::load(with([](Elf64_Ehdr& e) { e.e_shstrndx = e.e_shnum; })), CompileError);
  EXPECT_THROW(ElfImage::load(with([](Elf64_Ehdr& e) { e.e_shentsize = 32; })), CompileError);
}

// Edits one section header field of every section of a given type.
std::vector<uint8_t> edit_sections(std::vector<uint8_t> b, uint32_t type, void (*edit)(Elf64_Shdr&)) {
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(b.data());
  for (uint32_t i = 0; i < eh->e_shnum; ++i) {
    auto* sh = reinterpret_cast<Elf64_Shdr*>(b.data() + eh->e_shoff + i * sizeof(Elf64_Shdr));
    if (sh->sh_type == type) edit(*sh);
  }
  return b;
}

TEST_F(CpuElfLoader, RejectsBadOffsetsAndIndexes) {
  const auto& obj = *add_one_;
  const std::vector<std::vector<uint8_t>> broken = {
      edit_sections(obj, SHT_PROGBITS, [](Elf64_Shdr& s) { s.sh_offset = 1ull << 40; }),
      edit_sections(obj, SHT_PROGBITS, [](Elf64_Shdr& s) { s.sh_size = ~0ull; }),
      edit_sections(obj, SHT_PROGBITS, [](Elf64_Shdr& s) { s.sh_addralign = 3; }),
      edit_sections(obj, SHT_SYMTAB, [](Elf64_Shdr& s) { s.sh_link = 0xfff0; }),
      edit_sections(obj, SHT_SYMTAB, [](Elf64_Shdr& s) { s.sh_entsize = 7; }),
      edit_sections(obj, SHT_SYMTAB, [](Elf64_Shdr& s) { s.sh_type = SHT_PROGBITS; }),
      edit_sections(obj, SHT_STRTAB, [](Elf64_Shdr& s) { s.sh_size = 1; }),
      edit_sections(obj, SHT_RELA, [](Elf64_Shdr& s) { s.sh_info = 0xfff0; }),
      edit_sections(obj, SHT_RELA, [](Elf64_Shdr& s) { s.sh_link = 0; }),
      edit_sections(obj, SHT_RELA, [](Elf64_Shdr& s) { s.sh_type = SHT_REL; }),
      edit_sections(obj, SHT_NOBITS, [](Elf64_Shdr& s) { s.sh_size = 1ull << 50; }),
  };
  for (size_t i = 0; i < broken.size(); ++i) {
    SCOPED_TRACE(i);
    if (broken[i] == obj) continue;  // the object has no section of that type
    EXPECT_THROW(ElfImage::load(broken[i]), CompileError);
  }
}

TEST_F(CpuElfLoader, RejectsBadSymbolAndRelocationIndexes) {
  std::vector<uint8_t> b = *mixed_;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(b.data());
  bool edited_sym = false, edited_rela = false;
  for (uint32_t i = 0; i < eh->e_shnum; ++i) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(b.data() + eh->e_shoff + i * sizeof(Elf64_Shdr));
    if (sh->sh_type == SHT_SYMTAB && sh->sh_size >= 2 * sizeof(Elf64_Sym)) {
      std::vector<uint8_t> c = b;
      auto* sym = reinterpret_cast<Elf64_Sym*>(c.data() + sh->sh_offset + sizeof(Elf64_Sym));
      sym->st_name = 0x7fffffff;
      EXPECT_THROW(ElfImage::load(c), CompileError);
      c = b;
      sym = reinterpret_cast<Elf64_Sym*>(c.data() + sh->sh_offset + sh->sh_size - sizeof(Elf64_Sym));
      sym->st_shndx = static_cast<uint16_t>(eh->e_shnum + 3);
      EXPECT_THROW(ElfImage::load(c), CompileError);
      edited_sym = true;
    }
    if (sh->sh_type == SHT_RELA && sh->sh_size >= sizeof(Elf64_Rela)) {
      std::vector<uint8_t> c = b;
      auto* rela = reinterpret_cast<Elf64_Rela*>(c.data() + sh->sh_offset);
      rela->r_info = ELF64_R_INFO(0xffffff, ELF64_R_TYPE(rela->r_info));
      EXPECT_THROW(ElfImage::load(c), CompileError);
      c = b;
      rela = reinterpret_cast<Elf64_Rela*>(c.data() + sh->sh_offset);
      rela->r_offset = 1ull << 40;
      EXPECT_THROW(ElfImage::load(c), CompileError);
      c = b;
      rela = reinterpret_cast<Elf64_Rela*>(c.data() + sh->sh_offset);
      rela->r_info = ELF64_R_INFO(ELF64_R_SYM(rela->r_info), 200);
      EXPECT_THROW(ElfImage::load(c), CompileError);
      edited_rela = true;
    }
  }
  EXPECT_TRUE(edited_sym);
  EXPECT_TRUE(edited_rela);
}

TEST_F(CpuElfLoader, EveryTruncationIsRejected) {
  for (const auto* obj : {add_one_, mixed_}) {
    for (size_t len = 0; len < obj->size(); ++len) {
      std::vector<uint8_t> prefix(obj->begin(), obj->begin() + static_cast<ptrdiff_t>(len));
      // Section headers sit at the end of clang's objects, so any prefix loses some: never loadable.
      EXPECT_THROW(ElfImage::load(prefix), CompileError) << "length " << len;
    }
  }
}

TEST_F(CpuElfLoader, RandomByteFlipsNeverCrash) {
  std::mt19937_64 rng(12345);  // fixed: a failure reproduces
  for (const auto* obj : {add_one_, mixed_}) {
    for (int round = 0; round < 1500; ++round) {
      std::vector<uint8_t> b = *obj;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      load_or_compile_error(b);
    }
  }
}

// Flips aimed at the headers, where a mistake would send the parser astray.
TEST_F(CpuElfLoader, RandomHeaderCorruptionNeverCrashes) {
  std::mt19937_64 rng(777);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(add_one_->data());
  const size_t sh_begin = eh->e_shoff, sh_bytes = eh->e_shnum * sizeof(Elf64_Shdr);
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> b = *add_one_;
    const size_t at = round % 2 ? rng() % sizeof(Elf64_Ehdr) : sh_begin + rng() % sh_bytes;
    b[at] = static_cast<uint8_t>(rng());
    load_or_compile_error(b);
  }
}

}  // namespace
}  // namespace hcq::cpu
