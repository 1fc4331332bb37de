#include "framework/jit/check.hpp"

#include <cstdint>
#include <cstring>
#include <span>

#include "framework/engine/realize.hpp"
#include "framework/ir/shape_of.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/jit.hpp"

namespace hcq::fw {
namespace {

std::vector<std::byte> bytes_of(const Tensor& t) {
  Node n = t.node();
  while (Node done = n->realized()) n = done;
  std::vector<std::byte> out(static_cast<size_t>(numel(t.shape())) * dtype_size(t.dtype()));
  read_buffer_view(n, out);
  return out;
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// An element as its value (where the host has the type) and its bits.
std::string element_str(DType t, const std::byte* p) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, dtype_size(t));
  const std::string hex = hcq::hex(bits);
  switch (t) {
    case DType::float32: return hcq::cat(load<float>(p), " (", hex, ")");
    case DType::int32: return hcq::cat(load<int32_t>(p), " (", hex, ")");
    case DType::uint32: return hcq::cat(load<uint32_t>(p), " (", hex, ")");
    case DType::int64: return hcq::cat(load<int64_t>(p), " (", hex, ")");
    case DType::int8: return hcq::cat(static_cast<int>(load<int8_t>(p)), " (", hex, ")");
    case DType::uint8:
    case DType::bool_: return hcq::cat(static_cast<int>(load<uint8_t>(p)), " (", hex, ")");
    default: return hex;  // float16, bfloat16: the bits
  }
}

}  // namespace

void check_replay(size_t call, const std::vector<Tensor>& replayed, const std::vector<Tensor>& eager,
                  const std::vector<std::string>& writers) {
  for (size_t k = 0; k < replayed.size(); ++k) {
    const std::vector<std::byte> got = bytes_of(replayed[k]), want = bytes_of(eager[k]);
    const size_t size = dtype_size(replayed[k].dtype());
    for (size_t at = 0; at < got.size(); at += size) {
      if (std::memcmp(got.data() + at, want.data() + at, size) == 0) continue;
      throw JitError(
          hcq::cat("TinyJit (HCQ_JIT_CHECK): call ", call, "'s output ", k, " (", shape_str(replayed[k].shape()), " ",
                   dtype_name(replayed[k].dtype()), ") differs from the function run eagerly at element ", at / size,
                   ": replay ", element_str(replayed[k].dtype(), got.data() + at), ", eager ",
                   element_str(replayed[k].dtype(), want.data() + at), "; written in the replay by ", writers[k],
                   ". The replay does not compute what the function does: call the function without "
                   "TinyJit until this is fixed, and report it with this message"));
    }
  }
}

}  // namespace hcq::fw
