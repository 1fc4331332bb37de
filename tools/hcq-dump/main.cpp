// `hcq-dump`: see every command the GPU is given. This file only dispatches; each subcommand lives in its own file.
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "live_commands.hpp"

namespace {

constexpr const char* kHelp =
    "usage: hcq-dump <command> [options]\n"
    "\n"
    "commands:\n"
    "  decode --format F [--arch A] [--json] FILE   decode raw command words (PM4, SDMA, AQL, NV GPFIFO, methods, QMD)\n"
    "  trace [-o LOG] -- CMD...                     run CMD, logging its KFD, RM and UVM ioctls decoded\n"
    "  record [-o FILE] -- CMD...                   run CMD capturing every submission (HCQ_DUMP)\n"
    "  show CAPTURE|BUNDLE                          print a capture or hang bundle, decoded and annotated\n"
    "  replay --device D --queue compute|copy FILE  submit raw words, then a signal; report what happened\n"
    "  help [command]                               this text, or a command's own\n"
    "\n"
    "exit status: 0 success, 1 malformed input found, 2 bad command line, 3 input unusable, 4 tool failure\n"
    "(trace: the command's own status).\n";

int dispatch(std::string_view command, std::span<const std::string_view> rest) {
  if (command == "decode") return hcq::dump::run_decode(rest, std::cout, std::cerr);
  if (command == "trace") return hcq::dump::run_trace(rest, std::cout, std::cerr);
  if (command == "record") return hcq::dump::run_record(rest, std::cout, std::cerr);
  if (command == "show") return hcq::dump::run_show(rest, std::cout, std::cerr);
  if (command == "replay") return hcq::dump::run_replay(rest, std::cout, std::cerr);
  std::cerr << "hcq-dump: unknown command '" << command << "'\nrun 'hcq-dump help' for usage\n";
  return hcq::dump::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kHelp;
    return hcq::dump::kExitUsage;
  }
  const std::span<const std::string_view> rest = std::span(args).subspan(1);
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    if (args[0] == "help" && !rest.empty()) {
      const std::string_view help_flag[] = {"--help"};
      return dispatch(rest[0], help_flag);
    }
    std::cout << kHelp;
    return hcq::dump::kExitOk;
  }
  return dispatch(args[0], rest);
}
