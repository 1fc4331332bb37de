// safetensors: a file written byte by byte from the format's definition (github.com/huggingface/safetensors:
// u64 little-endian header length, JSON header, data) against what save writes and load reads; a round trip of every
// dtype; every broken file with its whole message; loading into tensors checks all before writing any.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework_data/data_test_util.hpp"
#include "hcq/safetensors.hpp"

namespace hcq {
namespace {

using datatest::message_of;
using datatest::read_bytes;
using datatest::ScratchDir;
using datatest::write_bytes;

// A file from a header text and data bytes: the length is the header's, as written.
std::vector<uint8_t> file_of(const std::string& header, const std::vector<uint8_t>& data) {
  std::string bytes;  // built as a string: GCC 12's -Warray-bounds misfires on vector::insert here
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>(static_cast<uint8_t>(n >> (8 * i)));
  bytes += header;
  for (uint8_t b : data) bytes += static_cast<char>(b);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

// "w": F32 [1.0, -2.0] (IEEE 754: 0x3f800000, 0xc0000000, stored little-endian); "m": U8 (1, 3) [1, 2, 3].
// The writer puts the 4-byte dtype first, then pads the 140-byte header with 4 spaces to 144 (0x90).
const std::string kGoldenHeader =
    "{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
    "\"m\":{\"dtype\":\"U8\",\"shape\":[1,3],\"data_offsets\":[8,11]}}    ";
const std::vector<uint8_t> kGoldenData{0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 1, 2, 3};

TEST(FrameworkSafetensors, SaveWritesTheFormatsBytes) {
  ScratchDir d;
  ASSERT_EQ(kGoldenHeader.size(), 144u);
  const std::vector<uint8_t> want = file_of(kGoldenHeader, kGoldenData);
  EXPECT_EQ(want[0], 0x90);
  save_safetensors(d.path / "g.safetensors",
                   {{"w", Tensor(std::vector<float>{1.0f, -2.0f}, {2}, "CPU")},
                    {"m", Tensor(std::vector<uint8_t>{1, 2, 3}, {1, 3}, "CPU")}},
                   {{"format", "pt"}});
  EXPECT_EQ(read_bytes(d.path / "g.safetensors"), want);
  // No temporary file is left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(d.path)) ++files;
  EXPECT_EQ(files, 1);
}

TEST(FrameworkSafetensors, LoadReadsTheFormatsBytes) {
  ScratchDir d;
  // Another writer's layout: no metadata, the U8 first, spaces and newlines in the JSON, no padding.
  write_bytes(d.path / "g.safetensors",
              file_of("{ \"m\": {\"dtype\": \"U8\", \"shape\": [1, 3], \"data_offsets\": [0, 3]},\n"
                      "  \"w\": {\"shape\": [2], \"dtype\": \"F32\", \"data_offsets\": [3, 11]} }",
                      {1, 2, 3, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}));
  const SafetensorsFile f = load_safetensors(d.path / "g.safetensors", "CPU");
  EXPECT_TRUE(f.metadata.empty());
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors.at("w").shape(), (Shape{2}));
  EXPECT_EQ(f.tensors.at("w").data<float>(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(f.tensors.at("m").shape(), (Shape{1, 3}));
  EXPECT_EQ(f.tensors.at("m").data<uint8_t>(), (std::vector<uint8_t>{1, 2, 3}));
}

TEST(FrameworkSafetensors, RoundTripEveryDType) {
  ScratchDir d;
  const TensorMap in{
      {"bool", Tensor(std::vector<uint8_t>{1, 0, 1}, {3}, "CPU").cast(DType::bool_)},
      {"u8", Tensor(std::vector<uint8_t>{0, 255, 7}, {3}, "CPU")},
      {"i8", Tensor(std::vector<int8_t>{-128, 127, 0}, {3}, "CPU")},
      {"i32", Tensor(std::vector<int32_t>{-5, 1 << 30, 3, 4}, {2, 2}, "CPU")},
      {"u32", Tensor(std::vector<uint32_t>{4000000000u}, {1}, "CPU")},
      {"i64", Tensor(std::vector<int64_t>{-(int64_t{1} << 40), 9}, {2}, "CPU")},
      {"f16", Tensor(std::vector<float>{0.5f, -3.0f}, {2}, "CPU").cast(DType::float16)},
      {"bf16", Tensor(std::vector<float>{1.5f, 256.0f}, {2}, "CPU").cast(DType::bfloat16)},
      {"f32", Tensor(std::vector<float>{3.25f, -0.0f, 1e-30f}, {3, 1}, "CPU")},
      {"scalar", Tensor::scalar(2.5, DType::float32, "CPU")},
      {"empty", Tensor::zeros({0, 4}, DType::float32, "CPU")},
  };
  save_safetensors(d.path / "all.safetensors", in, {{"epoch", "3"}, {"quote\"and\\slash", "\n"}});
  const SafetensorsFile f = load_safetensors(d.path / "all.safetensors", "CPU");
  EXPECT_EQ(f.metadata, (SafetensorsMetadata{{"epoch", "3"}, {"quote\"and\\slash", "\n"}}));
  ASSERT_EQ(f.tensors.size(), in.size());
  for (const auto& [name, t] : in) {
    SCOPED_TRACE(name);
    const Tensor& g = f.tensors.at(name);
    EXPECT_EQ(g.shape(), t.shape());
    EXPECT_EQ(g.dtype(), t.dtype());
    EXPECT_EQ(g.tolist(), t.tolist());
  }
  // And into existing tensors on the default device (HCQ_DEVICE: a simulated GPU in the framework runs on one):
  // the values arrive in place.
  TensorMap into;
  for (const auto& [name, t] : in) into.emplace(name, Tensor::zeros(t.shape(), t.dtype()).realize());
  EXPECT_EQ(load_safetensors_into(d.path / "all.safetensors", into).at("epoch"), "3");
  for (const auto& [name, t] : in) {
    SCOPED_TRACE(name);
    EXPECT_EQ(into.at(name).tolist(), t.tolist());
  }
}

TEST(FrameworkSafetensors, SaveReplacesAtomically) {
  ScratchDir d;
  const auto p = d.path / "x.safetensors";
  save_safetensors(p, {{"a", Tensor(std::vector<float>{1}, {1}, "CPU")}});
  save_safetensors(p, {{"b", Tensor(std::vector<float>{2, 3}, {2}, "CPU")}});
  const SafetensorsFile f = load_safetensors(p, "CPU");
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors.at("b").data<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(message_of<InvalidArgument>([&] { save_safetensors(p, {{"__metadata__", Tensor::zeros({1})}}); }),
            "save_safetensors " + p.string() + ": a tensor cannot be named \"__metadata__\"");
  // Nothing was written by the failed save.
  EXPECT_EQ(load_safetensors(p, "CPU").tensors.count("b"), 1u);
}

// The whole message of loading `bytes` as a file.
std::string load_error(const ScratchDir& d, const std::vector<uint8_t>& bytes) {
  const auto p = d.path / "bad.safetensors";
  write_bytes(p, bytes);
  return message_of<SafetensorsError>([&] { load_safetensors(p, "CPU"); });
}

TEST(FrameworkSafetensors, BadFiles) {
  ScratchDir d;
  const std::string p = (d.path / "bad.safetensors").string() + ": ";
  const std::string w8 = "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
  const std::vector<uint8_t> eight(8, 0);
  EXPECT_EQ(load_error(d, {1, 2, 3}), p + "the file is 3 bytes, too short for the 8-byte header length");
  std::vector<uint8_t> beyond = file_of("{}", {});
  beyond[0] = 3;
  EXPECT_EQ(load_error(d, beyond), p + "the header length is 3 bytes, beyond the file's 2 bytes after it");
  EXPECT_EQ(load_error(d, file_of("{\"w\":", {})),
            p + "the header is not valid JSON: expected a value, found the end at byte 5");
  EXPECT_EQ(load_error(d, file_of("{" + w8 + ",}", eight)),
            p + "the header is not valid JSON: expected a string key at byte 54");
  EXPECT_EQ(load_error(d, file_of("{" + w8 + "," + w8 + "}", eight)),
            p + "the header is not valid JSON: duplicate key \"w\" at byte 54");
  EXPECT_EQ(load_error(d, file_of("[]", {})), p + "the header is an array, not a JSON object");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", eight)),
            p + "tensor \"w\": dtype F64 is not one hcq tensors hold (BOOL U8 I8 I32 U32 I64 F16 BF16 F32)");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,8]}}", eight)),
            p + "tensor \"w\": unknown dtype \"Q4\"");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", eight)),
            p + "tensor \"w\" lacks \"data_offsets\"");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", eight)),
            p + "tensor \"w\"'s shape holds -2, not a non-negative integer");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", eight)),
            p + "tensor \"w\": data_offsets [8, 0] are out of order");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", eight)),
            p + "tensor \"w\": data_offsets [0, 16] end beyond the data (8 bytes)");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", eight)),
            p + "tensor \"w\": shape (3,) of float32 is 3 x 4 bytes, but data_offsets [0, 8] span 8");
  EXPECT_EQ(load_error(d, file_of("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                  "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                                  eight)),
            p + "tensor \"b\" at [4, 8) overlaps tensor \"a\" at [0, 8)");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", eight)),
            p + "bytes [0, 4) of the data belong to no tensor");
  EXPECT_EQ(load_error(d, file_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", eight)),
            p + "bytes [4, 8) of the data belong to no tensor");
  EXPECT_EQ(load_error(d, file_of("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", {1, 2})),
            p + "tensor \"b\": BOOL element 1 is 2, not 0 or 1");
  EXPECT_EQ(load_error(d, file_of("{\"__metadata__\":{\"n\":1}}", {})),
            p + "\"__metadata__\" value \"n\" is a number, not a string");
}

// A poor man's fuzzer for a file read from anywhere: every truncation of the golden file and every byte of it flipped
// three ways either loads or is a SafetensorsError; no other exception, no crash. Every truncation fails: the last
// tensor's bytes end where the file does.
TEST(FrameworkSafetensors, EveryTruncationAndByteFlipIsACleanError) {
  ScratchDir d;
  const std::vector<uint8_t> good = file_of(kGoldenHeader, kGoldenData);
  const auto p = d.path / "f.safetensors";
  const auto outcome = [&](const std::vector<uint8_t>& bytes) {
    write_bytes(p, bytes);
    try {
      (void)load_safetensors(p, "CPU");
      return 0;
    } catch (const SafetensorsError&) {
      return 1;
    } catch (...) {
      return 2;
    }
  };
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(outcome(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))), 1) << n;
  }
  int loaded = 0, refused = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t x : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::vector<uint8_t> bytes = good;
      bytes[i] ^= x;
      const int r = outcome(bytes);
      EXPECT_NE(r, 2) << "byte " << i << " ^ " << int{x};
      (r == 0 ? loaded : refused)++;
    }
  }
  EXPECT_GT(loaded, 0);   // flipped data bytes, spaces of the padding turned into other whitespace...
  EXPECT_GT(refused, 0);  // ...and most of the header
}

TEST(FrameworkSafetensors, LoadIntoChecksEverythingBeforeWritingAny) {
  ScratchDir d;
  const auto path = d.path / "m.safetensors";
  const std::string p = path.string() + ": ";
  save_safetensors(path, {{"a", Tensor(std::vector<float>{1, 2}, {2}, "CPU")},
                          {"b", Tensor(std::vector<float>{3, 4, 5}, {3}, "CPU")}});
  // On the default device (HCQ_DEVICE), as the file's values are copied to where each tensor lives.
  Tensor a = Tensor::zeros({2}, DType::float32).realize();
  Tensor b = Tensor::zeros({3, 1}, DType::float32).realize();
  // "a" comes first and matches, "b" does not: a must stay untouched.
  EXPECT_EQ(message_of<SafetensorsError>([&] { load_safetensors_into(path, {{"a", a}, {"b", b}}); }),
            p + "tensor \"b\" is (3,) float32 in the file, but (3, 1) float32 where it is loaded");
  EXPECT_EQ(a.data<float>(), (std::vector<float>{0, 0}));
  Tensor bi = Tensor::zeros({3}, DType::int32, "CPU").realize();
  EXPECT_EQ(message_of<SafetensorsError>([&] { load_safetensors_into(path, {{"a", a}, {"b", bi}}); }),
            p + "tensor \"b\" is (3,) float32 in the file, but (3,) int32 where it is loaded");
  Tensor c = Tensor::zeros({1}, DType::float32, "CPU").realize();
  EXPECT_EQ(message_of<SafetensorsError>([&] { load_safetensors_into(path, {{"a", a}, {"c", c}}); }),
            p + "no tensor \"c\" (2 tensors in the file)");
  EXPECT_EQ(message_of<SafetensorsError>([&] { load_safetensors_into(path, {{"a", a}}); }),
            p + "tensor \"b\" is in the file but not loaded");
  EXPECT_EQ(a.data<float>(), (std::vector<float>{0, 0}));
  load_safetensors_into(path, {{"a", a}}, /*strict=*/false);
  EXPECT_EQ(a.data<float>(), (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace hcq
