// Helpers of the TinyJit tests: inputs of known values, bitwise comparison of outputs, the message of a JitError.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/engine/realize.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq::jittest {

// n floats from a fixed linear-congruential sequence in [-2, 2) (a seed per input set).
inline std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 4.0f - 2.0f;
  }
  return v;
}

// The bytes of a float tensor, compared exactly (bit for bit, NaN patterns included).
inline void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<float> g = got.data<float>(), w = want.data<float>();
  EXPECT_EQ(std::memcmp(g.data(), w.data(), g.size() * sizeof(float)), 0) << what;
}

// The message of the JitError `f` throws ("" and a failure when it throws none, or another type).
inline std::string jit_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const JitError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a JitError: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no JitError thrown";
  return {};
}

// A knob (an environment variable) set for a scope, unset after it.
class ScopedKnob {
 public:
  ScopedKnob(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedKnob() { ::unsetenv(name_); }
  ScopedKnob(const ScopedKnob&) = delete;
  ScopedKnob& operator=(const ScopedKnob&) = delete;

 private:
  const char* name_;
};

// Runs f with the renderer's test hook installed; the schedule cache is cleared before and after, so the kernels
// f needs are rendered through the hook, and later ones without it. The hook is removed whatever f throws.
template <class F>
void with_render_hook(std::function<void(fw::RenderedKernel&)> hook, F&& f) {
  fw::clear_schedule_cache();
  fw::set_render_hook(std::move(hook));
  try {
    f();
  } catch (...) {
    fw::set_render_hook({});
    fw::clear_schedule_cache();
    throw;
  }
  fw::set_render_hook({});
  fw::clear_schedule_cache();
}

}  // namespace hcq::jittest
