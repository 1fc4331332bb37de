// The on-disk compile cache: round trips, hits across processes, and corrupt entries that must be rebuilt, never
// loaded.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "hcq/compiler.hpp"
#include "hcq/error.hpp"

namespace hcq {
namespace {

namespace fs = std::filesystem;

// A compiler whose "binary" is derived from the source and which counts its real compiles.
class CountingCompiler : public Compiler {
 public:
  explicit CountingCompiler(std::string options = "-O2") : options_(std::move(options)) {}
  std::vector<uint8_t> compile(std::string_view source) override {
    ++compiles;
    const std::string image = "BIN:" + std::string(source) + options_;
    return std::vector<uint8_t>(image.begin(), image.end());
  }
  std::string identity() const override { return "counting-cc-1.0"; }
  std::string target() const override { return "test-arch"; }
  std::string options() const override { return options_; }
  int compiles = 0;

 private:
  std::string options_;
};

class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "hcq-cache-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    dir_ = (fs::path(root_) / "nested" / "cache").string();  // put() must create parents
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  static std::vector<char> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void write_file(const std::string& path, const std::vector<char>& data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  size_t files_in_dir() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++n;
    return n;
  }

  std::string root_, dir_;
};

const std::vector<uint8_t> kPayload = {0, 1, 2, 3, 0xff, 0xfe, 'x', 'y', 'z', 0};

TEST_F(CompileCacheTest, PutThenGetRoundTrips) {
  CompileCache cache(dir_);
  EXPECT_EQ(cache.get("key"), std::nullopt);
  cache.put("key", kPayload);
  EXPECT_EQ(cache.get("key"), kPayload);

  std::vector<uint8_t> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 131 + (i >> 11));
  const std::string binary_key("with\0nul", 8);
  cache.put(binary_key, big);
  EXPECT_EQ(cache.get(binary_key), big);

  cache.put("empty", {});
  EXPECT_EQ(cache.get("empty"), std::vector<uint8_t>{});
  EXPECT_EQ(cache.get("key"), kPayload) << "other entries untouched";
}

TEST_F(CompileCacheTest, PutReplacesAndLeavesNoTemporaries) {
  CompileCache cache(dir_);
  cache.put("key", kPayload);
  cache.put("key", {42});
  EXPECT_EQ(cache.get("key"), std::vector<uint8_t>{42});
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(CompileCacheTest, PathIsA128BitHexNameInTheDir) {
  CompileCache cache(dir_);
  const fs::path p = cache.path_for("some key");
  EXPECT_EQ(p.parent_path(), fs::path(dir_));
  const std::string stem = p.stem().string();
  ASSERT_EQ(stem.size(), 32u) << p;
  EXPECT_EQ(stem.find_first_not_of("0123456789abcdef"), std::string::npos) << p;
  EXPECT_EQ(cache.path_for("some key"), p.string()) << "stable";
  EXPECT_NE(cache.path_for("some kez"), p.string());
  EXPECT_NE(cache.path_for(std::string("some key\0", 9)), p.string());
}

TEST_F(CompileCacheTest, CompileCachedCompilesOnceThenHits) {
  CompileCache cache(dir_);
  CountingCompiler cc;
  const auto first = cc.compile_cached("int f;", cache, false);
  const auto second = cc.compile_cached("int f;", cache, false);
  EXPECT_EQ(cc.compiles, 1);
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, cc.compile("int f;"));
}

TEST_F(CompileCacheTest, KeyCoversOptionsAndSource) {
  CompileCache cache(dir_);
  CountingCompiler o2("-O2"), o0("-O0");
  o2.compile_cached("int f;", cache, false);
  o0.compile_cached("int f;", cache, false);
  o2.compile_cached("int g;", cache, false);
  EXPECT_EQ(o2.compiles, 2);
  EXPECT_EQ(o0.compiles, 1);
  EXPECT_NE(o2.cache_key("int f;"), o0.cache_key("int f;"));
}

TEST_F(CompileCacheTest, AssertCompileMakesAMissThrow) {
  CompileCache cache(dir_);
  CountingCompiler cc;
  try {
    cc.compile_cached("int f;", cache, true);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("HCQ_ASSERT_COMPILE"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("counting-cc-1.0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cc.compiles, 0);
}

TEST_F(CompileCacheTest, HitAcrossTwoProcesses) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child fills the cache and reports how many real compiles it did. No gtest macros here: _exit only.
    ::close(fds[0]);
    CountingCompiler cc;
    CompileCache cache(dir_);
    int status = 0;
    try {
      cc.compile_cached("kernel source", cache, false);
    } catch (...) {
      status = 1;
    }
    const int compiles = cc.compiles;
    const bool wrote = ::write(fds[1], &compiles, sizeof compiles) == sizeof compiles;
    ::_exit(wrote ? status : 2);
  }
  ::close(fds[1]);
  int child_compiles = -1;
  EXPECT_EQ(::read(fds[0], &child_compiles, sizeof child_compiles), static_cast<ssize_t>(sizeof child_compiles));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(child_compiles, 1);

  // This process never compiled it: with HCQ_ASSERT_COMPILE semantics only a hit can succeed.
  CountingCompiler cc;
  CompileCache cache(dir_);
  std::vector<uint8_t> got;
  ASSERT_NO_THROW(got = cc.compile_cached("kernel source", cache, true));
  EXPECT_EQ(cc.compiles, 0);
  EXPECT_EQ(got, cc.compile("kernel source"));
}

TEST_F(CompileCacheTest, TruncatedEntryIsDeletedAndRebuilt) {
  CompileCache cache(dir_);
  CountingCompiler cc;
  const auto good = cc.compile_cached("int f;", cache, false);
  const std::string path = cache.path_for(cc.cache_key("int f;"));
  const auto bytes = read_file(path);
  ASSERT_GT(bytes.size(), 16u);

  for (size_t keep : {size_t{0}, size_t{7}, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(cat("kept ", keep, " of ", bytes.size(), " bytes"));
    write_file(path, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)));
    EXPECT_EQ(cache.get(cc.cache_key("int f;")), std::nullopt);
    EXPECT_FALSE(fs::exists(path)) << "a corrupt entry is removed";
    const int before = cc.compiles;
    EXPECT_EQ(cc.compile_cached("int f;", cache, false), good);
    EXPECT_EQ(cc.compiles, before + 1) << "rebuilt, not loaded";
    EXPECT_EQ(read_file(path), bytes) << "the rebuilt entry is whole again";
  }
}

TEST_F(CompileCacheTest, EveryFlippedByteIsDetected) {
  CompileCache cache(dir_);
  const std::string key = "k";
  cache.put(key, kPayload);
  const std::string path = cache.path_for(key);
  const auto bytes = read_file(path);
  for (size_t i = 0; i < bytes.size(); ++i) {
    SCOPED_TRACE(cat("byte ", i, " of ", bytes.size()));
    auto bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    write_file(path, bad);
    ASSERT_EQ(cache.get(key), std::nullopt);
    ASSERT_FALSE(fs::exists(path));
  }
}

TEST_F(CompileCacheTest, TrailingGarbageIsDetected) {
  CompileCache cache(dir_);
  cache.put("k", kPayload);
  auto bytes = read_file(cache.path_for("k"));
  bytes.push_back('!');
  write_file(cache.path_for("k"), bytes);
  EXPECT_EQ(cache.get("k"), std::nullopt);
}

TEST_F(CompileCacheTest, EntryStoredUnderAnotherKeyIsNeverLoaded) {
  CompileCache cache(dir_);
  CountingCompiler cc;
  cc.compile_cached("int a;", cache, false);
  // Pretend the names of two keys collided: the file for "int b;" holds the entry of "int a;".
  const std::string path_b = cache.path_for(cc.cache_key("int b;"));
  fs::copy_file(cache.path_for(cc.cache_key("int a;")), path_b);
  EXPECT_EQ(cache.get(cc.cache_key("int b;")), std::nullopt);
  EXPECT_FALSE(fs::exists(path_b));
  EXPECT_EQ(cc.compile_cached("int b;", cache, false), cc.compile("int b;"));
  EXPECT_EQ(cc.compiles, 3);  // a, b, and the direct compile above
}

TEST_F(CompileCacheTest, UnwritableCacheDoesNotBreakCompiles) {
  // A regular file where the directory should be: nothing can be created under it.
  const std::string blocker = (fs::path(root_) / "file").string();
  write_file(blocker, {'x'});
  CompileCache cache((fs::path(blocker) / "cache").string());
  CountingCompiler cc;
  EXPECT_EQ(cc.compile_cached("int f;", cache, false), cc.compile("int f;"));
  EXPECT_EQ(cc.compile_cached("int f;", cache, false), cc.compile("int f;"));
  EXPECT_EQ(cc.compiles, 4) << "nothing was stored, so every call compiles";
}

// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_F(CompileCacheTest, KnobsPickTheCacheDirAndAssertCompile) {
  ScopedEnv dir("HCQ_CACHE_DIR", dir_);
  CountingCompiler cc;
  {
    ScopedEnv assert_on("HCQ_ASSERT_COMPILE", "1");
    EXPECT_THROW(cc.compile_cached("int knob;"), CompileError);
  }
  {
    ScopedEnv assert_off("HCQ_ASSERT_COMPILE", "0");
    cc.compile_cached("int knob;");
  }
  EXPECT_EQ(cc.compiles, 1);
  EXPECT_TRUE(fs::exists(CompileCache(dir_).path_for(cc.cache_key("int knob;"))));
  ScopedEnv assert_on("HCQ_ASSERT_COMPILE", "1");
  EXPECT_EQ(cc.compile_cached("int knob;"), cc.compile("int knob;"));
  EXPECT_EQ(cc.compiles, 2);  // the direct compile only
}

TEST_F(CompileCacheTest, EmptyDirMeansTheDefaultCacheDir) {
  CompileCache cache("");
  EXPECT_FALSE(cache.dir().empty());
}

}  // namespace
}  // namespace hcq
