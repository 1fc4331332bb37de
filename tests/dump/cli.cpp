#include "cli.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "../../tools/hcq-dump/commands.hpp"

namespace hcq::dump::testing {

CliResult run_decode_cli(const std::vector<std::string>& args) {
  const std::vector<std::string_view> views(args.begin(), args.end());
  std::ostringstream out, err;
  CliResult r;
  r.status = run_decode(views, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::vector<Json> decode_json(const std::string& format, const std::string& arch, const std::string& file) {
  const CliResult r = run_decode_cli({"--format", format, "--arch", arch, "--json", file});
  EXPECT_EQ(r.status, kExitOk) << file << ": " << r.err;
  std::vector<Json> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    try {
      lines.push_back(Json::parse(line));
    } catch (const std::exception& e) {
      ADD_FAILURE() << file << ": output line is not JSON (" << e.what() << "): " << line;
    }
  }
  return lines;
}

namespace {
struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("hcq-dump-test-" + std::to_string(getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string temp_path(const std::string& name) {
  static TempDir dir;
  return (dir.path / name).string();
}
}  // namespace

std::string write_bytes(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string write_words(const std::string& name, const std::vector<uint32_t>& words) {
  std::string bytes;
  for (uint32_t w : words)
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>(w >> (8 * i)));
  return write_bytes(name, bytes);
}

std::string build_dir() {
  std::filesystem::path dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  for (; dir.has_relative_path(); dir = dir.parent_path())
    if (std::filesystem::exists(dir / "tools" / "hcq-dump" / "hcq-dump")) return dir.string();
  return "";
}

}  // namespace hcq::dump::testing
