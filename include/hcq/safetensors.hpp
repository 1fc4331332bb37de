// safetensors files: named tensors saved and loaded in the format tinygrad, PyTorch and Hugging Face tools read
// (github.com/huggingface/safetensors): an 8-byte little-endian header length N, N bytes of a JSON object
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
// then the data: each tensor's bytes, little-endian, row-major, at [begin, end) from the data's start.
//
//   hcq::save_safetensors("mlp.safetensors", {{"l1.weight", w1}, {"l1.bias", b1}});
//   hcq::load_safetensors_into("mlp.safetensors", {{"l1.weight", w1}, {"l1.bias", b1}});  // in place
//   hcq::SafetensorsFile f = hcq::load_safetensors("mlp.safetensors");                     // fresh tensors
//
// dtypes, by the format's names: BOOL U8 I8 I32 U32 I64 F16 BF16 F32 (what hcq tensors hold). The other names of
// the format (F64, I16, U16, U64, F8_*) are a clear error when loading.
// Saving writes as the reference implementation does: tensors ordered by element size (largest first), then name,
// so each starts aligned to its element size; the header padded with spaces to a multiple of 8 bytes. The file is
// written beside its destination under a temporary name, flushed, and renamed over it: a crash leaves the old file
// or the new one, never half of one.
//
// Errors: SafetensorsError, whose message starts with the file's path and says what is wrong: too short, a header
// length beyond the file, bad JSON (with the byte), a tensor entry missing a field or of the wrong type, an unknown
// dtype, offsets out of order, overlapping, leaving a hole or beyond the data, a shape whose size in bytes is not
// its offsets' span, a BOOL byte other than 0 or 1; loading into tensors: a name missing from the file (or, strict,
// in the file but not asked for), a shape or dtype that differs. A load checks the whole file before it creates or
// writes any tensor: nothing is half-loaded. System call failures are OsError.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "hcq/error.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

class SafetensorsError : public Error {
 public:
  using Error::Error;
};

using TensorMap = std::map<std::string, Tensor>;
using SafetensorsMetadata = std::map<std::string, std::string>;  // the optional "__metadata__": strings only

struct SafetensorsFile {
  TensorMap tensors;
  SafetensorsMetadata metadata;
};

// Realizes and reads each tensor (on any device), then writes the file atomically. InvalidArgument for a name that
// is empty or "__metadata__".
void save_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                      const SafetensorsMetadata& metadata = {});

// Every tensor of the file, as new tensors on `device` (empty: HCQ_DEVICE, else CPU), and the metadata.
SafetensorsFile load_safetensors(const std::filesystem::path& path, const std::string& device = {});

// The file's values assigned into existing tensors (on their devices), matched by name: each must be in the file
// with the same shape and dtype. strict: the file must hold no other tensors either (as PyTorch's
// load_state_dict(strict=True)). Everything is checked before the first tensor is written; the writes are one
// realize. Returns the metadata.
SafetensorsMetadata load_safetensors_into(const std::filesystem::path& path, const TensorMap& into, bool strict = true);

// The format's name of a dtype ("F32", "BOOL", ...).
const char* safetensors_dtype_name(DType t);

}  // namespace hcq
