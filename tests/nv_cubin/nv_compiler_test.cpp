// The NV compiler: NVRTC diagnostics, the cache, and a missing NVRTC (a bad library path) as a clear error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../common/message_of.hpp"
#include "hcq/compiler.hpp"
#include "hcq/error.hpp"
#include "nv/compiler/nv_compiler.hpp"
#include "nv/cubin/cubin.hpp"
#include "nv_kernels.hpp"

namespace hcq::nv {
namespace {

constexpr auto compile_error_of = hcq::test::message_of<CompileError>;

TEST(NvCompiler, MissingNvrtcIsAClearError) {
  NvCompiler c("sm_90", {"/nonexistent/libnvrtc.so.13", "libnvrtc-not-here.so"});
  EXPECT_EQ(c.identity(), "NVRTC unavailable");
  const std::string m = compile_error_of([&] { (void)c.compile(test::kAxpbSource); });
  EXPECT_NE(m.find("NVRTC is not available"), std::string::npos) << m;
  EXPECT_NE(m.find("/nonexistent/libnvrtc.so.13"), std::string::npos) << m;
  EXPECT_NE(m.find("libnvrtc-not-here.so"), std::string::npos) << m;
  // Asked again: the same answer, not a crash or a retry storm.
  EXPECT_EQ(compile_error_of([&] { (void)c.compile(test::kAxpbSource); }), m);
}

TEST(NvCompiler, IdentityTargetOptionsKeyTheCache) {
  REQUIRE_NVRTC();
  NvCompiler a("sm_90"), b("sm_80");
  EXPECT_EQ(a.target(), "sm_90");
  EXPECT_EQ(a.identity().rfind("NVRTC ", 0), 0u) << a.identity();
  EXPECT_NE(a.identity(), "NVRTC unavailable");
  EXPECT_NE(a.options().find("--gpu-architecture=sm_90"), std::string::npos) << a.options();
  EXPECT_NE(a.options().find("prelude="), std::string::npos);
  EXPECT_NE(a.cache_key("x"), b.cache_key("x"));
}

TEST(NvCompiler, DiagnosticsNameTheUsersLine) {
  REQUIRE_NVRTC();
  NvCompiler c("sm_90");
  const std::string m =
      compile_error_of([&] { (void)c.compile("HCQ_KERNEL(k, 1, 0) {\n  undeclared_thing = 1;\n}\n"); });
  EXPECT_NE(m.find("kernel.c(2)"), std::string::npos) << m;
  EXPECT_NE(m.find("undeclared_thing"), std::string::npos) << m;
  EXPECT_NE(compile_error_of([&] { (void)c.compile("static int x;\n"); }).find("no kernel"), std::string::npos);
  EXPECT_NE(compile_error_of([&] { (void)NvCompiler("gfx1100").compile(test::kAxpbSource); }).find("SM version"),
            std::string::npos);
}

TEST(NvCompiler, CacheServesTheSecondCompile) {
  REQUIRE_NVRTC();
  char tmpl[] = "/tmp/hcq-nv-cache-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const CompileCache cache(tmpl);
  NvCompiler c("sm_89");
  const std::vector<uint8_t> first = c.compile_cached(test::kAxpbSource, cache, false);
  // assert_compile: any real compile throws, so this one must come from the cache.
  const std::vector<uint8_t> again = c.compile_cached(test::kAxpbSource, cache, true);
  EXPECT_EQ(first, again);
  EXPECT_EQ(Cubin::parse(again).source(), test::kAxpbSource);
  EXPECT_THROW((void)c.compile_cached(std::string(test::kAxpbSource) + "\n", cache, true), CompileError);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace hcq::nv
