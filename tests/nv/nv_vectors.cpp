#include "nv_vectors.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace hcq::nv::testing {

std::optional<std::string> nv_vectors_dir() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("HCQ_VECTORS_DIR")) candidates.push_back(fs::path(env) / "nv");
#ifdef HCQ_NV_VECTORS_DIR
  candidates.emplace_back(HCQ_NV_VECTORS_DIR);
#endif
  // This file is tests/nv/nv_vectors.cpp in a checkout that sits next to shared/.
  candidates.push_back(fs::path(__FILE__).parent_path() / ".." / ".." / ".." / "shared" / "vectors" / "nv");
  candidates.emplace_back("../shared/vectors/nv");
  candidates.emplace_back("../../shared/vectors/nv");
  for (const fs::path& p : candidates) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return std::nullopt;
}

std::vector<uint32_t> hex_dwords(const Json& array) {
  std::vector<uint32_t> out;
  for (const Json& v : array.items()) out.push_back(static_cast<uint32_t>(v.u64()));
  return out;
}

std::vector<NvCase> load_nv_cases(const std::string& dir) {
  std::vector<NvCase> cases;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    NvCase c;
    c.name = entry.path().stem().string();
    c.json = Json::parse_file(entry.path().string());
    fs::path bin = entry.path();
    bin.replace_extension(".bin");
    std::ifstream f(bin, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + bin.string());
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.size() % 4) throw std::runtime_error(bin.string() + " is not a whole number of dwords");
    c.bin.resize(bytes.size() / 4);
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(c.bin.data()));
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(), [](const NvCase& a, const NvCase& b) { return a.name < b.name; });
  return cases;
}

}  // namespace hcq::nv::testing
