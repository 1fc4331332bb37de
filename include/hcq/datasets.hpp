// Datasets for training: Fashion-MNIST read from Debian's `dataset-fashion-mnist` package (four gzip'd idx files
// under /usr/share/datasets/fashion-mnist, installed by scripts/setup.sh), and shuffled fixed-shape batches of it.
//
//   hcq::FashionMnist data = hcq::load_fashion_mnist();            // ~0.4 s CPU: both sets decoded, checked
//   hcq::BatchSampler sampler(data.train.count, 128, /*seed=*/0);   // 468 batches an epoch (the last 96 dropped)
//   const std::vector<int64_t> order = sampler.permutation(epoch);
//   for (int64_t i = 0; i < sampler.batches_per_epoch(); ++i) {
//     hcq::Batch b = make_batch(data.train, sampler.batch(order, i));  // images (128,1,28,28) float32 in [0,1]
//     ...
//   }
//
// Pixels are kept on the host as uint8, as the files store them (60000 x 784 bytes = 47 MB, a quarter of float32);
// a batch is converted when it is made. Its PixelFormat says how: float32 divided by 255 (the default, what an MLP
// with Adam 1e-3 wants), or the raw 0..255 as float32 (tinygrad's beautiful_mnist feeds its CNN these: mnist()
// returns uint8 tensors and the first conv casts them; the BatchNorms absorb the scale), or uint8 itself.
// Labels are int32 tensors (the framework's default int; cross entropy takes them as class indices).
//
// Errors: DataError, whose message names the file and what is wrong with it (missing: which package installs it;
// not gzip; truncated or corrupt gzip; wrong idx magic; dims that do not match; more or fewer labels than images; a
// label outside 0..9). Nothing is half-loaded: a load returns both sets complete or throws.
// Threads: the functions share no state; a BatchSampler is immutable once made.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hcq/error.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

// A dataset file that is missing, unreadable or malformed. The message starts with the file's path.
class DataError : public Error {
 public:
  using Error::Error;
};

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";
// The ten classes, by label (from the dataset's README).
inline constexpr std::array<std::string_view, 10> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

// Images with one label each, on the host.
struct LabelledImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, image-major then row-major; 0 = background
  std::vector<uint8_t> labels;  // count, each < the number of classes
  int64_t image_size() const { return rows * cols; }
};

struct FashionMnist {
  LabelledImages train;  // 60000 images 28 x 28
  LabelledImages test;   // 10000
};

// Reads and checks the four files in `dir` (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz and the t10k-
// pair): 28 x 28 images, labels 0..9.
FashionMnist load_fashion_mnist(const std::filesystem::path& dir = kFashionMnistDir);

// One images/labels pair of gzip'd idx files (magic 0x00000803: uint8, 3 dims; 0x00000801: uint8, 1 dim). `rows`
// and `cols` are what the images must be (0: any); labels must be < `classes`.
LabelledImages load_idx_pair(const std::filesystem::path& images_gz, const std::filesystem::path& labels_gz,
                             int64_t rows, int64_t cols, int classes);

// The whole decompressed content of a gzip file (several members are joined, as gzip -d does). DataError for a
// missing or unreadable file, one that is not gzip, a truncated stream, a corrupt one (bad data or CRC).
std::vector<uint8_t> read_gzip_file(const std::filesystem::path& path);

// Which indices make up each batch of an epoch: a fresh permutation of [0, count) per epoch, a function of (seed,
// epoch) only (the same on every machine and standard library), cut into batches of `batch`.
// The last partial batch: shuffled, it is dropped, so every batch has the same shape (TinyJit replays a fixed shape;
// a dropped image is in another epoch's batches, as the permutation changes). An epoch has count / batch batches.
// In order (seed-free, for evaluation), the last batch is padded with indices from the start and Batch::valid says
// how many rows are real: ceil(count / batch) batches, every image seen once.
class BatchSampler {
 public:
  enum class Order { shuffled, sequential };
  // InvalidArgument when batch < 1, or (shuffled) count < batch.
  BatchSampler(int64_t count, int64_t batch, uint64_t seed, Order order = Order::shuffled);
  int64_t batches_per_epoch() const { return batches_; }
  int64_t batch_size() const { return batch_; }
  // The indices of batch i (0 <= i < batches_per_epoch()) of `epoch`; always batch_size() of them. This draws the
  // epoch's permutation each call (~0.2 ms for 60000); a training loop takes permutation(epoch) once and slices it
  // with the second form.
  std::vector<int64_t> batch(int64_t epoch, int64_t i) const { return batch(permutation(epoch), i); }
  std::vector<int64_t> batch(std::span<const int64_t> permutation, int64_t i) const;
  // How many of batch i's rows are real (sequential order pads the last one; shuffled: always batch_size()).
  int64_t valid(int64_t i) const;
  // The epoch's whole order (count indices).
  std::vector<int64_t> permutation(int64_t epoch) const;

 private:
  int64_t count_, batch_, batches_;
  uint64_t seed_;
  Order order_;
};

enum class PixelFormat {
  unit_float,  // float32, pixel / 255: [0, 1]
  raw_float,   // float32, 0..255 (tinygrad's beautiful_mnist feeds its CNN these)
  uint8,       // as stored
};

struct Batch {
  Tensor images;  // (n, 1, rows, cols)
  Tensor labels;  // (n,) int32
  int64_t valid;  // rows that are real data (the rest repeat earlier images; see BatchSampler)
};

// The images and labels at `indices` as tensors on `device` (empty: HCQ_DEVICE, else CPU). `valid`: how many
// leading rows are real (default all). InvalidArgument for an index out of range.
Batch make_batch(const LabelledImages& data, std::span<const int64_t> indices,
                 PixelFormat format = PixelFormat::unit_float, const std::string& device = {}, int64_t valid = -1);
// The same into host memory the caller owns (images: indices.size() * image_size() elements).
void gather_batch(const LabelledImages& data, std::span<const int64_t> indices, std::span<float> images,
                  std::span<int32_t> labels, PixelFormat format = PixelFormat::unit_float);

}  // namespace hcq
