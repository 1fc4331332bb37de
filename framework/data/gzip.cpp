// read_gzip_file: a whole gzip file inflated with zlib, every way it can be broken reported with the file's name.
// The file is read into memory first (the largest dataset file is 26 MB) so that the stream's end can be told from
// a truncation: inflate() only says it wants more input, and whether there is more is known here.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "hcq/datasets.hpp"
#include "hcq/error.hpp"

namespace hcq {
namespace {

// The gzip member's first two bytes (RFC 1952, ID1 ID2).
constexpr uint8_t kGzipId1 = 0x1f, kGzipId2 = 0x8b;
// A member is at least a 10-byte header and an 8-byte trailer (CRC32, ISIZE).
constexpr size_t kGzipMinMember = 18;
// The output is presized from the last member's ISIZE (the uncompressed size mod 2^32), believed only as far as
// deflate can expand (at most 1032:1, RFC 1951's longest match of 258 bytes from a code as short as 2 bits) and up to
// kMaxPresize: a corrupt or hostile trailer costs no more than the input could honestly produce. Past that, the
// output grows as inflate needs.
constexpr size_t kMaxDeflateRatio = 1032;
constexpr size_t kMaxPresize = size_t{1} << 30;
constexpr size_t kGrowChunk = size_t{1} << 20;

std::vector<uint8_t> read_whole_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(cat(path.string(), ": cannot open: ", std::strerror(errno)));
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw DataError(cat(path.string(), ": cannot stat: ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw DataError(cat(path.string(), S_ISDIR(st.st_mode) ? ": a directory, not a file" : ": not a regular file"));
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      throw DataError(cat(path.string(), ": read failed after ", done, " of ", bytes.size(), " bytes",
                          err != 0 ? cat(": ", std::strerror(err)) : std::string(" (the file shrank)")));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

struct Inflater {
  z_stream zs{};
  Inflater(const std::filesystem::path& path) {
    // 15 + 16: a 32 KiB window, gzip wrapping only (a zlib or raw deflate stream is an error).
    if (inflateInit2(&zs, 15 + 16) != Z_OK) throw OutOfMemory(cat(path.string(), ": zlib could not start inflating"));
  }
  ~Inflater() { inflateEnd(&zs); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

}  // namespace

std::vector<uint8_t> read_gzip_file(const std::filesystem::path& path) {
  const std::vector<uint8_t> in = read_whole_file(path);
  const std::string name = path.string();
  if (in.size() < 2 || in[0] != kGzipId1 || in[1] != kGzipId2) {
    throw DataError(cat(name, ": not a gzip file (",
                        in.size() < 2 ? cat(in.size(), " bytes long")
                                      : cat("starts with ", hex(in[0]), " ", hex(in[1]), ", not 0x1f 0x8b"),
                        ")"));
  }
  size_t presize = kGrowChunk;
  if (in.size() >= kGzipMinMember) {
    uint32_t isize = 0;
    std::memcpy(&isize, in.data() + in.size() - 4, 4);  // little-endian, as the host (static_assert in batches.cpp)
    if (isize != 0) presize = std::min({size_t{isize}, in.size() * kMaxDeflateRatio, kMaxPresize});
  }
  std::vector<uint8_t> out(presize);

  Inflater inf(path);
  z_stream& zs = inf.zs;
  size_t in_pos = 0, out_pos = 0;
  for (;;) {
    if (out_pos == out.size()) out.resize(out.size() + std::max(kGrowChunk, out.size() / 2));
    const size_t in_chunk = std::min<size_t>(in.size() - in_pos, std::numeric_limits<uInt>::max());
    const size_t out_chunk = std::min<size_t>(out.size() - out_pos, std::numeric_limits<uInt>::max());
    zs.next_in = const_cast<Bytef*>(in.data() + in_pos);  // zlib's API is not const-correct; it only reads
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = out.data() + out_pos;
    zs.avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_chunk - zs.avail_in;
    out_pos += out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (in_pos == in.size()) break;
      // Another member follows (gzip -d joins them); anything else is not gzip data.
      if (in.size() - in_pos >= 2 && in[in_pos] == kGzipId1 && in[in_pos + 1] == kGzipId2) {
        inflateReset(&zs);
        continue;
      }
      throw DataError(cat(name, ": ", in.size() - in_pos, " bytes after the end of the gzip stream (at byte ", in_pos,
                          ") that are not another gzip member"));
    }
    if (rc == Z_DATA_ERROR) {
      throw DataError(cat(name, ": corrupt gzip data at compressed byte ", in_pos, " (", out_pos,
                          " bytes decompressed): ", zs.msg != nullptr ? zs.msg : "zlib data error"));
    }
    if (rc == Z_MEM_ERROR) throw OutOfMemory(cat(name, ": zlib ran out of memory inflating"));
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw DataError(cat(name, ": zlib inflate failed with code ", rc));
    // Z_OK or Z_BUF_ERROR: it wants more input or more room. No input left means the file stops mid-stream.
    if (in_pos == in.size() && zs.avail_out != 0) {
      throw DataError(cat(name, ": truncated gzip file: the stream stops after ", in.size(), " compressed bytes (",
                          out_pos, " decompressed) before its end marker and checksum"));
    }
  }
  out.resize(out_pos);
  return out;
}

}  // namespace hcq
