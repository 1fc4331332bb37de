// Tensors to and from the reference, the inputs and the tolerance table (tensor_check.hpp).
#include "framework_ops/tensor_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

namespace hcq::optest {

namespace {

template <class T>
void append(std::vector<std::byte>& bytes, T value) {
  const size_t at = bytes.size();
  bytes.resize(at + sizeof(T));
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

template <class T>
std::vector<double> widen(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

bool same(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

std::string format_index(size_t flat, const ref::Dims& shape) {
  ref::Dims index(shape.size());
  for (size_t d = shape.size(); d > 0; --d) {
    index[d - 1] = static_cast<int64_t>(flat % static_cast<size_t>(shape[d - 1]));
    flat /= static_cast<size_t>(shape[d - 1]);
  }
  std::string s = "[";
  for (size_t d = 0; d < index.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(index[d]);
  }
  return s + "]";
}

}  // namespace

// For messages only (names are not values under test).
const char* name_of(DType t) { return hcq::dtype_name(t).data(); }

bool is_float_type(DType t) { return t == DType::float16 || t == DType::bfloat16 || t == DType::float32; }
bool is_unsigned_type(DType t) { return t == DType::uint8 || t == DType::uint32; }

double decode_float16(uint16_t bits) {
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  if (exponent == 0x1f) return mantissa ? std::nan("") : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);     // subnormal: mantissa * 2^-14 / 2^10
  return sign * std::ldexp(1024 + mantissa, exponent - 15 - 10);  // (1.mantissa) * 2^(e - 15)
}

double decode_bfloat16(uint16_t bits) {
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const int exponent = (bits >> 7) & 0xff, mantissa = bits & 0x7f;
  if (exponent == 0xff) return mantissa ? std::nan("") : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -133);   // subnormal: mantissa * 2^-126 / 2^7
  return sign * std::ldexp(128 + mantissa, exponent - 127 - 7);  // (1.mantissa) * 2^(e - 127)
}

double stored(DType t, double v) {
  switch (t) {
    case DType::bool_: return v != 0 ? 1.0 : 0.0;
    case DType::int8: return static_cast<int8_t>(static_cast<int64_t>(v));
    case DType::uint8: return static_cast<uint8_t>(static_cast<int64_t>(v));
    case DType::int32: return static_cast<int32_t>(static_cast<int64_t>(v));
    case DType::uint32: return static_cast<uint32_t>(static_cast<int64_t>(v));
    case DType::int64: return static_cast<double>(static_cast<int64_t>(v));
    case DType::float16: return decode_float16(float16_t::from_float(static_cast<float>(v)).bits);
    case DType::bfloat16: return decode_bfloat16(bfloat16_t::from_float(static_cast<float>(v)).bits);
    case DType::float32: return static_cast<float>(v);
  }
  return v;
}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * std::ldexp(static_cast<double>(next() >> 11), -53);
}

int64_t Rng::integer(int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
}

ref::Dims Rng::permutation_of(int64_t n) {
  ref::Dims order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(integer(0, i))]);
  return order;
}

Domain default_domain(DType t) {
  switch (t) {
    case DType::bool_: return {0, 1, true};
    case DType::int8: return {-100, 100, true};
    case DType::uint8: return {0, 250, true};
    case DType::int32: return {-1e9, 1e9, true};
    case DType::uint32: return {0, 4e9, true};
    case DType::int64: return {-1e12, 1e12, true};  // beyond 32 bits, still exact in a double
    case DType::float16:
    case DType::bfloat16:
    case DType::float32: return {-10, 10};
  }
  return {0, 1};
}

ref::Array random_array(const ref::Dims& shape, DType t, Domain d, uint64_t seed) {
  Rng rng(seed * 0x2545f4914f6cdd1dull + 1);
  ref::Array a = ref::Array::filled(shape, 0.0);
  const bool integral = d.integral || !is_float_type(t);
  for (double& v : a.values) {
    do {
      v = integral ? static_cast<double>(
                         rng.integer(static_cast<int64_t>(std::ceil(d.lo)), static_cast<int64_t>(std::floor(d.hi))))
                   : rng.uniform(d.lo, d.hi);
      v = stored(t, v);
    } while (std::fabs(v) < d.min_magnitude);
  }
  return a;
}

Tensor to_tensor(const ref::Array& a, DType t) {
  std::vector<std::byte> bytes;
  for (double v : a.values) {
    switch (t) {
      case DType::bool_: append<uint8_t>(bytes, v != 0); break;
      case DType::int8: append(bytes, static_cast<int8_t>(v)); break;
      case DType::uint8: append(bytes, static_cast<uint8_t>(v)); break;
      case DType::int32: append(bytes, static_cast<int32_t>(v)); break;
      case DType::uint32: append(bytes, static_cast<uint32_t>(v)); break;
      case DType::int64: append(bytes, static_cast<int64_t>(v)); break;
      case DType::float16: append(bytes, float16_t::from_float(static_cast<float>(v))); break;
      case DType::bfloat16: append(bytes, bfloat16_t::from_float(static_cast<float>(v))); break;
      case DType::float32: append(bytes, static_cast<float>(v)); break;
    }
  }
  return Tensor(std::span<const std::byte>(bytes), a.shape, t);
}

ref::Array to_array(const Tensor& t) {
  std::vector<double> values;
  switch (t.dtype()) {
    case DType::bool_: values = t.tolist(); break;
    case DType::int8: values = widen(t.data<int8_t>()); break;
    case DType::uint8: values = widen(t.data<uint8_t>()); break;
    case DType::int32: values = widen(t.data<int32_t>()); break;
    case DType::uint32: values = widen(t.data<uint32_t>()); break;
    case DType::int64: values = widen(t.data<int64_t>()); break;
    case DType::float16:
      for (float16_t h : t.data<float16_t>()) values.push_back(decode_float16(h.bits));
      break;
    case DType::bfloat16:
      for (bfloat16_t h : t.data<bfloat16_t>()) values.push_back(decode_bfloat16(h.bits));
      break;
    case DType::float32: values = widen(t.data<float>()); break;
  }
  return ref::Array(t.shape(), std::move(values));
}

Tolerance tolerance(DType result, Accuracy accuracy) {
  const bool approximate = accuracy == Accuracy::approximate;
  switch (result) {
    case DType::float32: return approximate ? Tolerance{5e-5, 5e-6} : Tolerance{1e-5, 1e-6};
    case DType::float16: return approximate ? Tolerance{4e-3, 2e-3} : Tolerance{1e-3, 1e-3};
    case DType::bfloat16: return approximate ? Tolerance{3e-2, 2e-2} : Tolerance{1e-2, 1e-2};
    default: return kExact;
  }
}

::testing::AssertionResult matches(const ref::Array& got, const ref::Array& want, Tolerance tol) {
  if (got.shape != want.shape)
    return ::testing::AssertionFailure() << "shape " << ref::format(got.shape) << ", want " << ref::format(want.shape);
  std::ostringstream detail;
  detail.precision(9);
  size_t bad = 0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    if (same(got.values[i], want.values[i], tol)) continue;
    if (++bad <= 8)
      detail << "\n  at " << format_index(i, want.shape) << ": got " << got.values[i] << ", want " << want.values[i];
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.values.size() << " elements of shape "
                                       << ref::format(want.shape) << " differ (rtol " << tol.rtol << ", atol "
                                       << tol.atol << ")" << detail.str();
}

::testing::AssertionResult matches(const Tensor& got, DType dtype, const ref::Array& want, Tolerance tol) {
  if (got.dtype() != dtype)
    return ::testing::AssertionFailure() << "dtype " << name_of(got.dtype()) << ", want " << name_of(dtype);
  return matches(to_array(got), want, tol);
}

void expect_all(const std::vector<Check>& checks) {
  // Groups of results with one dtype and shape, in first-seen order.
  std::vector<std::pair<Tensor, std::vector<size_t>>> groups;
  for (size_t i = 0; i < checks.size(); ++i) {
    const Tensor& t = checks[i].got;
    if (t.dtype() != checks[i].dtype)
      ADD_FAILURE() << checks[i].name << ": dtype " << name_of(t.dtype()) << ", want " << name_of(checks[i].dtype);
    auto same = [&](const auto& g) {
      const Tensor& first = checks[g.second[0]].got;
      return first.dtype() == t.dtype() && first.shape() == t.shape();
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) groups.push_back({Tensor(), {i}});
    else it->second.push_back(i);
  }
  std::vector<Tensor> stacks;
  for (auto& [stacked, members] : groups) {
    std::vector<Tensor> parts;
    for (size_t i : members) parts.push_back(checks[i].got);
    stacked = parts.size() == 1 ? parts[0] : Tensor::stack(parts, 0);
    stacks.push_back(stacked);
  }
  Tensor::realize(stacks);
  for (const auto& [stacked, members] : groups) {
    const ref::Array all = to_array(stacked);
    const size_t n = all.values.size() / members.size();
    for (size_t k = 0; k < members.size(); ++k) {
      const Check& c = checks[members[k]];
      const auto first = all.values.begin() + static_cast<std::ptrdiff_t>(k * n);
      const ref::Array got(c.got.shape(), std::vector<double>(first, first + static_cast<std::ptrdiff_t>(n)));
      const ::testing::AssertionResult r = matches(got, c.want, c.tol);
      if (!r) ADD_FAILURE() << c.name << ": " << r.message();
    }
  }
}

}  // namespace hcq::optest
