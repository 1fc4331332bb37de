// What the op tests share between a hcq::Tensor and the double-precision reference (reference.hpp): deterministic
// inputs already rounded to a dtype, tensors made from reference arrays and read back into them, the tolerance table,
// and the comparison that reports the first mismatches with their index.
//
// Tolerances, in one place (|got - want| <= atol + rtol * |want|):
//   result dtype   rounded (one rounding of the exact result)   approximate (transcendentals, several roundings)
//   float32        rtol 1e-5, atol 1e-6                         rtol 5e-5, atol 5e-6
//   float16        rtol 1e-3, atol 1e-3                         rtol 4e-3, atol 2e-3
//   bfloat16       rtol 1e-2, atol 1e-2                         rtol 3e-2, atol 2e-2
//   integers, bool exact                                        exact
// "rounded" is for add, sub, mul, max, min, neg, abs, where, casts, movement and sums of integer-valued floats (exact
// in float32 whatever the order); "approximate" for exp, log, sin, sqrt, pow, sigmoid, gelu, ..., true division
// (which may be computed as a * (1 / b)), mean, var, softmax and matmul of non-integer values.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "framework_ops/reference.hpp"
#include "hcq/dtype.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {

inline const std::vector<DType> kAllDtypes = {DType::bool_,   DType::int8,     DType::uint8,
                                              DType::int32,   DType::uint32,   DType::int64,
                                              DType::float16, DType::bfloat16, DType::float32};
inline const std::vector<DType> kIntDtypes = {DType::int8, DType::uint8, DType::int32, DType::uint32, DType::int64};
inline const std::vector<DType> kFloatDtypes = {DType::float16, DType::bfloat16, DType::float32};
inline const std::vector<DType> kNumericDtypes = {DType::int8,  DType::uint8,   DType::int32,    DType::uint32,
                                                  DType::int64, DType::float16, DType::bfloat16, DType::float32};

// The test's own names (not dtype_name(), which is under test): "bool", "int8", ..., "float32".
const char* name_of(DType t);
bool is_float_type(DType t);
bool is_unsigned_type(DType t);

// Half types decoded from their bits by the IEEE formulas, independent of float16_t::to_float.
double decode_float16(uint16_t bits);
double decode_bfloat16(uint16_t bits);

// v as dtype t holds it: floats rounded (through float16_t/bfloat16_t::from_float for the half types), integers
// wrapped modulo 2^bits (v must be integral), bool as v != 0.
double stored(DType t, double v);

// splitmix64: small, fast, and the same sequence on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform(double lo, double hi);     // [lo, hi)
  int64_t integer(int64_t lo, int64_t hi);  // [lo, hi], inclusive
  ref::Dims permutation_of(int64_t n);      // a random order of 0..n-1 (as int64 values)

 private:
  uint64_t state_;
};

// Where inputs are drawn from. Integer dtypes always draw integers; `integral` makes a float dtype draw integers too
// (so sums and products of them are exact); |v| < min_magnitude is drawn again (divisors, reciprocals).
struct Domain {
  double lo, hi;
  bool integral = false;
  double min_magnitude = 0;
};
// Values for every dtype that stay well inside its range (bool: 0/1).
Domain default_domain(DType t);
ref::Array random_array(const ref::Dims& shape, DType t, Domain d, uint64_t seed);
inline ref::Array random_array(const ref::Dims& shape, DType t, uint64_t seed) {
  return random_array(shape, t, default_domain(t), seed);
}

// A tensor holding a's values in dtype t (through the bytes constructor). a's values should be stored(t, ...) values
// so the tensor holds exactly what the reference computes from.
Tensor to_tensor(const ref::Array& a, DType t);
// Realizes t and reads it back (data<T>(), or tolist() for bool: data<bool>() cannot be instantiated, a
// std::vector<bool> has no contiguous storage).
ref::Array to_array(const Tensor& t);

enum class Accuracy { rounded, approximate };
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType result, Accuracy accuracy);
inline constexpr Tolerance kExact{0, 0};

// Same shape and every element within tolerance (NaN matches NaN, an infinity only itself). On failure the message
// names the shapes or the first mismatches (index, got, want) and how many there were.
::testing::AssertionResult matches(const ref::Array& got, const ref::Array& want, Tolerance tol);
// The tensor's dtype is `dtype`, then its values match.
::testing::AssertionResult matches(const Tensor& got, DType dtype, const ref::Array& want, Tolerance tol);

// One result to check: its dtype, then its values against the reference within tol; `name` says which op it was.
struct Check {
  std::string name;
  Tensor got;
  DType dtype;
  ref::Array want;
  Tolerance tol;
};
// Checks every result, failing the current test once per result that is wrong. Results of one dtype and shape are
// stacked and realized together, so one kernel computes a whole group: the suite's run time is its kernel count
// (clang compiles each distinct kernel), and a table of 20 ops in 9 dtypes would otherwise be 180 kernels.
void expect_all(const std::vector<Check>& checks);

// Checks that f throws E (or a subclass) whose message contains every fragment; for errors whose exact wording the
// implementation still owns.
template <class E, class F>
::testing::AssertionResult throws_containing(F f, const std::vector<std::string>& fragments) {
  try {
    f();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const std::string& fragment : fragments)
      if (what.find(fragment) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << what << "\" lacks \"" << fragment << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw another type: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace hcq::optest
