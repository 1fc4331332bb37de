// Hang bundles written by any test (conformance hangs, AMD faults, replay) go to one temporary directory that is
// removed when the test binary ends, so a test run leaves nothing in /tmp. A person who wants to keep them sets
// HCQ_BUNDLE_DIR before running; then it is left alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

class BundleDirEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (const char* v = std::getenv("HCQ_BUNDLE_DIR"); v && *v) return;
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/hcq-tests-bundles-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return;  // bundles then go to the default place; tests still run
    dir_ = tmpl;
    ::setenv("HCQ_BUNDLE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  std::string dir_;
};

// Registered before main(): gtest takes ownership.
[[maybe_unused]] ::testing::Environment* const g_bundle_env =
    ::testing::AddGlobalTestEnvironment(new BundleDirEnvironment);

}  // namespace
