// hcq-cache-alias DIR FROM TO: for every entry of the compile cache in DIR whose compiler identity is FROM, stores
// the same binary again under identity TO (same target, options and source). hw-tests/bundle.sh uses it so that a
// machine without the compiler that made a binary (identity "clang (unavailable)") is served it, for exactly the
// target it was made for: the simulated GPUs' host twins in the bundle's rehearsal.
// hcq-cache-alias --drop DIR FROM: removes every entry whose compiler identity is FROM (bundle.sh: this machine's
// clang, which no machine the bundle goes to has). Both print how many entries they handled. Not shipped in the bundle.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "hcq/compiler.hpp"

namespace {

// The key stored in an entry (its layout is in hcq/compile_cache.cpp: 16 bytes of header, a u64 length, the key).
// The binary is then read through CompileCache::get, which checks the whole entry.
std::string stored_key(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> head(24);
  if (!in.read(reinterpret_cast<char*>(head.data()), 24)) return {};
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(head[16 + i]) << (8 * i);
  if (length > (1u << 24)) return {};
  std::string key(length, '\0');
  if (!in.read(key.data(), static_cast<std::streamsize>(length))) return {};
  return key;
}

}  // namespace

int main(int argc, char** argv) {
  const bool drop = argc == 4 && std::string(argv[1]) == "--drop";
  if (argc != 4) {
    std::fprintf(stderr,
                 "usage: hcq-cache-alias DIR FROM_IDENTITY TO_IDENTITY | hcq-cache-alias --drop DIR FROM_IDENTITY\n");
    return 2;
  }
  const char* dir = drop ? argv[2] : argv[1];
  const hcq::CompileCache cache(dir);
  const std::string from = std::string(drop ? argv[3] : argv[2]) + '\0';
  const std::string to = drop ? std::string() : std::string(argv[3]) + '\0';
  int handled = 0;
  std::vector<std::filesystem::path> dropped;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".hcqc") continue;
    const std::string key = stored_key(entry.path());
    if (key.compare(0, from.size(), from) != 0) continue;
    if (drop) {
      dropped.push_back(entry.path());  // removed after the walk, which must not see the directory change
      continue;
    }
    const auto binary = cache.get(key);
    if (!binary) continue;
    cache.put(to + key.substr(from.size()), *binary);
    ++handled;
  }
  for (const std::filesystem::path& p : dropped) handled += std::filesystem::remove(p) ? 1 : 0;
  std::printf("%d\n", handled);
  return 0;
}
