// Fashion-MNIST: the idx format (a big-endian magic and dims, then the bytes) read from gzip'd files, checked
// against what the dataset must be before anything is returned.
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "hcq/datasets.hpp"
#include "hcq/error.hpp"

namespace hcq {
namespace {

// idx magic: two zero bytes, the element type (0x08 = unsigned byte), the number of dims.
constexpr uint32_t kIdxImagesMagic = 0x00000803;
constexpr uint32_t kIdxLabelsMagic = 0x00000801;
constexpr uint8_t kIdxUbyte = 0x08;

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | uint32_t{b[at + 3]};
}

std::string describe_magic(uint32_t magic) {
  const uint8_t type = static_cast<uint8_t>(magic >> 8), dims = static_cast<uint8_t>(magic);
  if ((magic >> 16) != 0) return cat(hex(magic), ", not an idx header");
  return cat(hex(magic), " (", type == kIdxUbyte ? "ubyte" : cat("element type ", hex(type)), ", ", unsigned{dims},
             " dims)");
}

// The decompressed idx file's header: magic and dims. Returns the dims; checks the data size is exactly theirs.
std::vector<uint32_t> idx_header(const std::vector<uint8_t>& raw, const std::string& name, uint32_t want_magic,
                                 const char* what) {
  const size_t ndim = want_magic & 0xff;
  const size_t header = 4 + 4 * ndim;
  if (raw.size() < 4) throw DataError(cat(name, ": ", raw.size(), " bytes decompressed, too short for an idx header"));
  const uint32_t magic = be32(raw, 0);
  if (magic != want_magic) {
    throw DataError(
        cat(name, ": idx magic is ", describe_magic(magic), "; ", what, " files have ", describe_magic(want_magic)));
  }
  if (raw.size() < header) {
    throw DataError(cat(name, ": ", raw.size(), " bytes decompressed, too short for the idx header of ", ndim,
                        " dims (", header, " bytes)"));
  }
  std::vector<uint32_t> dims(ndim);
  uint64_t elements = 1;
  for (size_t d = 0; d < ndim; ++d) {
    dims[d] = be32(raw, 4 + 4 * d);
    elements *= dims[d];  // at most 3 dims of < 2^32: a product that can overflow only past any real file
  }
  const uint64_t have = raw.size() - header;
  if (have != elements) {
    std::string shape;
    for (size_t d = 0; d < ndim; ++d) shape += cat(d != 0 ? " x " : "", dims[d]);
    throw DataError(cat(name, ": the idx header says ", shape, " = ", elements, " bytes of data, the file holds ", have,
                        have < elements ? " (truncated before compression?)" : ""));
  }
  return dims;
}

}  // namespace

LabelledImages load_idx_pair(const std::filesystem::path& images_gz, const std::filesystem::path& labels_gz,
                             int64_t rows, int64_t cols, int classes) {
  std::vector<uint8_t> images = read_gzip_file(images_gz);
  const std::vector<uint8_t> labels = read_gzip_file(labels_gz);
  const std::string iname = images_gz.string(), lname = labels_gz.string();
  const std::vector<uint32_t> idims = idx_header(images, iname, kIdxImagesMagic, "image");
  const std::vector<uint32_t> ldims = idx_header(labels, lname, kIdxLabelsMagic, "label");
  if ((rows != 0 && idims[1] != rows) || (cols != 0 && idims[2] != cols)) {
    throw DataError(cat(iname, ": images are ", idims[1], " x ", idims[2], ", expected ", rows, " x ", cols));
  }
  if (ldims[0] != idims[0]) {
    throw DataError(cat(lname, ": ", ldims[0], " labels for the ", idims[0], " images of ", iname));
  }
  LabelledImages out;
  out.count = idims[0];
  out.rows = idims[1];
  out.cols = idims[2];
  out.labels.assign(labels.begin() + 8, labels.end());
  for (size_t i = 0; i < out.labels.size(); ++i) {
    if (out.labels[i] >= classes) {
      throw DataError(cat(lname, ": label ", i, " is ", unsigned{out.labels[i]}, ", outside 0..", classes - 1));
    }
  }
  // The pixels are the decompressed file past its 16-byte header: shifted down in place (a memmove), no second
  // 47 MB buffer.
  images.erase(images.begin(), images.begin() + 16);
  out.pixels = std::move(images);
  return out;
}

FashionMnist load_fashion_mnist(const std::filesystem::path& dir) {
  const char* names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                         "t10k-labels-idx1-ubyte.gz"};
  // A missing file is the common case (the package is not installed): say which package before trying any.
  for (const char* n : names) {
    std::error_code ec;
    if (!std::filesystem::exists(dir / n, ec)) {
      throw DataError(cat((dir / n).string(), ": no such file; Fashion-MNIST comes from Debian's ",
                          kFashionMnistPackage, " package (scripts/setup.sh installs it",
                          dir == kFashionMnistDir ? ")" : cat(", into ", kFashionMnistDir, ")")));
    }
  }
  FashionMnist out;
  out.train = load_idx_pair(dir / names[0], dir / names[1], 28, 28, 10);
  out.test = load_idx_pair(dir / names[2], dir / names[3], 28, 28, 10);
  return out;
}

}  // namespace hcq
