// `hcq-dump record -- CMD` end to end: the real command runs a child (`hcq-dump replay`, which opens a device and
// submits), the capture file it leaves holds the child's submission, and `show` prints it decoded.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../../tools/hcq-dump/live_commands.hpp"
#include "../dump/cli.hpp"

namespace hcq {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DumpRecord, CapturesAChildProgramsSubmissions) {
  const std::string build = dump::testing::build_dir();
  ASSERT_FALSE(build.empty()) << "tools/hcq-dump/hcq-dump not built next to the tests";
  const std::string tool = build + "/tools/hcq-dump/hcq-dump";
  // One PM4 NOP (type-3, opcode 0x10, no payload): a stream the simulated GPU runs to completion.
  const std::string words = dump::testing::write_words("nop.bin", {0xc0001000u, 0u});
  const std::string capture = dump::testing::write_bytes("capture.jsonl", "");
  const std::string command = "'" + tool + "' record -o '" + capture + "' -- '" + tool +
                              "' replay --device SIM-AMD:gfx1100 --queue compute '" + words + "' > /dev/null 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << command;
  const std::string text = read_file(capture);
  ASSERT_NE(text.find("\"hcq_capture\":1"), std::string::npos) << "no capture header:\n" << text;
  EXPECT_NE(text.find("\"t\":\"submit\""), std::string::npos) << "the child's submission was not recorded:\n" << text;
  EXPECT_NE(text.find("\"dev\":\"SIM-AMD:gfx1100\""), std::string::npos) << text;

  std::ostringstream shown;
  dump::show_text(text, shown);
  EXPECT_NE(shown.str().find("submit #1  SIM-AMD:gfx1100 compute"), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("RELEASE_MEM"), std::string::npos) << "replay's own signal, decoded:\n" << shown.str();
}

}  // namespace
}  // namespace hcq
