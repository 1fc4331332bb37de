#include "vectors.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace hcq::amd::testing {

std::optional<std::string> vectors_dir() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("HCQ_VECTORS_DIR")) candidates.emplace_back(env);
#ifdef HCQ_AMD_VECTORS_DIR
  candidates.emplace_back(HCQ_AMD_VECTORS_DIR);
#endif
  // This file is tests/amd/vectors.cpp in a checkout that sits next to shared/.
  candidates.push_back(fs::path(__FILE__).parent_path() / ".." / ".." / ".." / "shared" / "vectors");
  candidates.emplace_back("../shared/vectors");
  candidates.emplace_back("../../shared/vectors");
  candidates.emplace_back("../../../shared/vectors");
  for (const fs::path& p : candidates) {
    std::error_code ec;
    if (fs::is_directory(p / "amd", ec)) return fs::weakly_canonical(p, ec).string();
  }
  return std::nullopt;
}

std::vector<uint32_t> dwords_of(const Json& array) {
  std::vector<uint32_t> out;
  for (const Json& v : array.items()) out.push_back(static_cast<uint32_t>(v.u64()));
  return out;
}

std::vector<VectorCase> load_amd_cases(const std::string& dir) {
  std::vector<VectorCase> cases;
  for (const auto& target : fs::directory_iterator(fs::path(dir) / "amd")) {
    if (!target.is_directory()) continue;
    for (const auto& e : fs::directory_iterator(target.path())) {
      if (e.path().extension() != ".json") continue;
      VectorCase c;
      c.target = target.path().filename().string();
      c.name = e.path().stem().string();
      c.json_path = e.path().string();
      c.json = Json::parse_file(c.json_path);
      fs::path bin = e.path();
      bin.replace_extension(".bin");
      std::ifstream f(bin, std::ios::binary);
      if (!f) throw std::runtime_error("missing " + bin.string());
      std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      c.bin.resize(bytes.size() / 4);
      for (size_t i = 0; i < c.bin.size(); ++i)
        c.bin[i] = static_cast<uint32_t>(static_cast<uint8_t>(bytes[4 * i])) |
                   static_cast<uint32_t>(static_cast<uint8_t>(bytes[4 * i + 1])) << 8 |
                   static_cast<uint32_t>(static_cast<uint8_t>(bytes[4 * i + 2])) << 16 |
                   static_cast<uint32_t>(static_cast<uint8_t>(bytes[4 * i + 3])) << 24;
      cases.push_back(std::move(c));
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const VectorCase& a, const VectorCase& b) { return a.target + a.name < b.target + b.name; });
  return cases;
}

}  // namespace hcq::amd::testing
