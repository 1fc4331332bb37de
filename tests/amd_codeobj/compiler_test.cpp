// The AMD compiler: C and LLVM IR front doors, cache identity, diagnostics, gfx950.
#include <elf.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "../common/message_of.hpp"
#include "amd/codeobj/code_object.hpp"
#include "amd/compiler/amd_compiler.hpp"
#include "hcq/compiler.hpp"
#include "hcq/error.hpp"
#include "kernels.hpp"

namespace hcq::amd {
namespace {

constexpr auto message_of = hcq::test::message_of<CompileError>;

TEST(AmdCompiler, IdentityTargetOptionsKeyTheCache) {
  AmdCompiler a("gfx1100"), b("gfx942"), ir("gfx1100", SourceLanguage::llvm_ir);
  EXPECT_EQ(a.target(), "gfx1100");
  EXPECT_NE(a.identity().find("LLVM 19"), std::string::npos) << a.identity();
  EXPECT_NE(a.identity().find("clang"), std::string::npos) << a.identity();
  EXPECT_NE(a.identity().find("LLD"), std::string::npos) << a.identity();
  EXPECT_NE(a.options().find("-mcpu=gfx1100"), std::string::npos);
  EXPECT_NE(a.cache_key("x"), b.cache_key("x"));
  EXPECT_NE(a.cache_key("x"), ir.cache_key("x"));
}

TEST(AmdCompiler, Gfx950IsACompileErrorThatSaysWhy) {
  AmdCompiler c("gfx950");
  EXPECT_EQ(c.target(), "gfx950");
  const std::string m = message_of([&] { c.compile(test::kAxpbSource); });
  EXPECT_NE(m.find("gfx950"), std::string::npos) << m;
  EXPECT_NE(m.find("LLVM 19"), std::string::npos) << m;
  EXPECT_NE(message_of([] { AmdCompiler("gfx9999").compile("x"); }).find("gfx9999"), std::string::npos);
}

TEST(AmdCompiler, CDiagnosticsPointAtTheUsersLine) {
  AmdCompiler c("gfx1100");
  const std::string m = message_of([&] { c.compile("HCQ_KERNEL(k, 1, 0) {\n  undefined_thing = 1;\n}\n"); });
  EXPECT_NE(m.find("kernel.c:2"), std::string::npos) << m;
  // A source without HCQ_KERNEL has nothing to launch.
  EXPECT_NE(message_of([&] { c.compile("int f(void) { return 1; }\n"); }).find("HCQ_KERNEL"), std::string::npos);
  // A libm function the GPU has no native instruction for fails the link, naming the symbol.
  const std::string m2 = message_of([&] {
    c.compile(
        "HCQ_KERNEL(k, 1, 0) { HCQ_FOR_EACH_THREAD(x, y, z) { HCQ_BUF(float, 0)[x] = powf(HCQ_BUF(float, 0)[x], 3.0f); } }");
  });
  EXPECT_NE(m2.find("powf"), std::string::npos) << m2;
}

TEST(AmdCompiler, BadIrIsACompileError) {
  AmdCompiler c("gfx1100", SourceLanguage::llvm_ir);
  EXPECT_NE(message_of([&] { c.compile("define void @f( {"); }).find("does not parse"), std::string::npos);
  EXPECT_NE(message_of([&] {
              c.compile("target triple = \"x86_64-pc-linux-gnu\"\ndefine void @f() { ret void }");
            }).find("x86_64"),
            std::string::npos);
}

TEST(AmdCompiler, StagesProduceWhatTheyPromise) {
  AmdCompiler c("gfx1201");
  const std::string ir = c.c_to_ir(test::kAxpbSource);
  EXPECT_NE(ir.find("axpb_hcq_desc"), std::string::npos);
  const std::vector<uint8_t> obj = c.ir_to_object(ir, true, "src");
  ASSERT_GE(obj.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, obj.data(), sizeof eh);
  EXPECT_EQ(eh.e_type, ET_REL);
  EXPECT_EQ(eh.e_machine, 224);
  const CodeObject co = CodeObject::parse(c.link(obj));
  EXPECT_EQ(co.gfx(), "gfx1201");
  const auto src = co.section(".hcq.source");
  EXPECT_EQ(std::string(src.begin(), src.end()), "src");
}

TEST(AmdCompiler, CompileCacheServesTheSecondTime) {
  char tmpl[] = "/tmp/hcq-amd-cache-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const CompileCache cache(tmpl);
  AmdCompiler c("gfx942");
  const std::vector<uint8_t> first = c.compile_cached(test::kAxpbSource, cache, false);
  const std::vector<uint8_t> again = c.compile_cached(test::kAxpbSource, cache, /*assert_compile=*/true);
  EXPECT_EQ(first, again);
  EXPECT_EQ(CodeObject::parse(again).kernel("axpb").kernarg_segment_size, 28u);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace hcq::amd
