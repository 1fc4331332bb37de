// CompileCache: one file per compiled binary, named by a 128-bit hash of its key.
//
// Entry layout (little endian):
//   "HCQCACHE"  u32 format version  u32 zero
//   u64 key length, key bytes
//   u64 payload length, payload bytes
//   u64 checksum of every byte before it
// The stored key catches hash collisions; lengths and checksum catch truncation and bit rot. Any mismatch deletes
// the file so the next compile rewrites it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>

#include "hcq/compiler.hpp"
#include "hcq/knobs.hpp"

namespace hcq {

namespace {

constexpr std::array<char, 8> kMagic = {'H', 'C', 'Q', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint64_t kChecksumSeed = 0x243f6a8885a308d3ULL;  // digits of pi: any fixed value works
constexpr uint64_t kNameSeedLo = 0x13198a2e03707344ULL;
constexpr uint64_t kNameSeedHi = 0xa4093822299f31d0ULL;

// The final mix of splitmix64: spreads every input bit over every output bit.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// A fast 64-bit hash (8 bytes per step). Not cryptographic: it names files and detects corruption.
uint64_t hash64(std::span<const std::byte> data, uint64_t seed) {
  constexpr uint64_t kMul1 = 0x9e3779b97f4a7c15ULL;
  constexpr uint64_t kMul2 = 0xc2b2ae3d27d4eb4fULL;
  uint64_t h = seed ^ (data.size() * kMul1);
  auto step = [&](uint64_t word) { h = std::rotl(h ^ (word * kMul2), 31) * kMul1; };
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, data.data() + i, 8);
    step(word);
  }
  if (i < data.size()) {
    uint64_t word = 0;
    std::memcpy(&word, data.data() + i, data.size() - i);
    step(word ^ 0xff);  // so a tail of zero bytes differs from no tail
  }
  return mix64(h);
}

std::span<const std::byte> bytes_of(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

void put_u64(std::vector<std::byte>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}

// Reads entry fields front to back; any read past the end marks the entry bad.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> data) : data_(data) {}
  std::span<const std::byte> take(uint64_t n) {
    if (n > data_.size() - pos_) {
      ok_ = false;
      return {};
    }
    auto s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t u64() { return le(take(8)); }
  uint32_t u32() { return static_cast<uint32_t>(le(take(4))); }
  size_t pos() const { return pos_; }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  static uint64_t le(std::span<const std::byte> s) {
    uint64_t v = 0;
    for (size_t i = 0; i < s.size(); ++i) v |= static_cast<uint64_t>(s[i]) << (8 * i);
    return v;
  }
  std::span<const std::byte> data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Owns a file descriptor from ::open (cache files are plain files, not kernel objects behind the OS seam).
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

std::optional<std::vector<std::byte>> read_whole_file(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) return std::nullopt;
  struct stat st{};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::vector<std::byte> data(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(f.fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shrank under us: parse what we have, the checks will reject it
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  return data;
}

bool write_all(int fd, std::span<const std::byte> data) {
  size_t put = 0;
  while (put < data.size()) {
    const ssize_t n = ::write(fd, data.data() + put, data.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    put += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

CompileCache::CompileCache(std::string dir) : dir_(dir.empty() ? knobs::cache_dir() : std::move(dir)) {}

std::string CompileCache::path_for(std::string_view key) const {
  const uint64_t hi = hash64(bytes_of(key), kNameSeedHi);
  const uint64_t lo = hash64(bytes_of(key), kNameSeedLo);
  char name[33];
  std::snprintf(name, sizeof name, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return dir_ + "/" + name + ".hcqc";
}

std::optional<std::vector<uint8_t>> CompileCache::get(std::string_view key) const {
  const std::string path = path_for(key);
  auto data = read_whole_file(path);
  if (!data) return std::nullopt;

  Reader r(*data);
  const auto magic = r.take(kMagic.size());
  const uint32_t version = r.u32();
  const uint32_t reserved = r.u32();
  const auto stored_key = r.take(r.u64());
  const auto payload = r.take(r.u64());
  const size_t checked_bytes = r.pos();
  const uint64_t checksum = r.u64();

  const bool good = r.ok() && r.at_end() && std::memcmp(magic.data(), kMagic.data(), kMagic.size()) == 0 &&
                    version == kFormatVersion && reserved == 0 && stored_key.size() == key.size() &&
                    std::memcmp(stored_key.data(), key.data(), key.size()) == 0 &&
                    checksum == hash64(std::span(*data).first(checked_bytes), kChecksumSeed);
  if (!good) {
    // Corrupt, truncated, from another format, or another key with the same name: never load it, and clear the
    // way for a fresh entry.
    ::unlink(path.c_str());
    return std::nullopt;
  }
  std::vector<uint8_t> out(payload.size());
  if (!payload.empty()) std::memcpy(out.data(), payload.data(), payload.size());
  return out;
}

void CompileCache::put(std::string_view key, const std::vector<uint8_t>& value) const {
  std::vector<std::byte> entry;
  entry.reserve(kMagic.size() + 8 + 8 + key.size() + 8 + value.size() + 8);
  for (char c : kMagic) entry.push_back(static_cast<std::byte>(c));
  put_u64(entry, kFormatVersion);  // u32 version, then u32 zero
  put_u64(entry, key.size());
  entry.insert(entry.end(), bytes_of(key).begin(), bytes_of(key).end());
  put_u64(entry, value.size());
  const auto payload = std::as_bytes(std::span(value));
  entry.insert(entry.end(), payload.begin(), payload.end());
  put_u64(entry, hash64(entry, kChecksumSeed));

  // Failing to store is never fatal: the binary is in hand, only the next process pays for a compile again.
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::string path = path_for(key);
  // Unique per writer, so concurrent writers never share a temporary; rename() makes the entry appear whole.
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng());
  bool ok = false;
  {
    Fd f(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    ok = f.fd >= 0 && write_all(f.fd, entry);
    if (f.fd >= 0 && ::close(f.fd) != 0) ok = false;
    f.fd = -1;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return;
  ::unlink(tmp.c_str());
}

}  // namespace hcq
