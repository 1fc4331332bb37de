// `hcq`: the command-line face of the stack. This file only dispatches; each subcommand lives in its own file.
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "hcq/error.hpp"

namespace hcq::tool {
namespace {

constexpr const char* kHelp =
    "usage: hcq <command> [options]\n"
    "\n"
    "commands:\n"
    "  info [--json]                          list every device that opens, and why the others do not\n"
    "  bench [--device D] [--json] [--quick]  launch latency, enqueue cost and copy bandwidth per device\n"
    "  train [--model mlp|cnn] [--device D]   train on Fashion-MNIST ('hcq help train' for the options)\n"
    "  help [command]                         this text, or a command's own\n"
    "\n"
    "exit status: 0 success, 1 a device failed or nothing could be done, 2 bad command line.\n"
    "environment: HCQ_DEVICE, HCQ_WAIT_TIMEOUT_MS, HCQ_CACHE_DIR, ... (see docs/knobs.md)\n";

int dispatch(std::string_view command, std::span<const std::string_view> rest) {
  if (command == "info") return run_info(rest);
  if (command == "bench") return run_bench(rest);
#if HCQ_TOOL_FRAMEWORK
  if (command == "train") return run_train(rest);
#else
  if (command == "train") {
    std::fputs("hcq: this hcq is built without the framework (the hw-tests bundle's); use build/tools/hcq\n", stderr);
    return kExitFailure;
  }
#endif
  return usage_error(std::string("unknown command '") + std::string(command) + "'", "");
}

}  // namespace

int usage_error(std::string_view message, std::string_view command) {
  std::fprintf(stderr, "hcq: %.*s\nrun 'hcq help%s%.*s' for usage\n", static_cast<int>(message.size()), message.data(),
               command.empty() ? "" : " ", static_cast<int>(command.size()), command.data());
  return kExitUsage;
}

}  // namespace hcq::tool

int main(int argc, char** argv) {
  using namespace hcq::tool;
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kHelp, stderr);
    return kExitUsage;
  }
  const std::string_view command = args[0];
  const std::span<const std::string_view> rest = std::span(args).subspan(1);

  if (command == "help" || command == "--help" || command == "-h") {
    if (command == "help" && !rest.empty()) {
      const std::string_view help_flag[] = {"--help"};
      return dispatch(rest[0], help_flag);
    }
    std::fputs(kHelp, stdout);
    return kExitOk;
  }

  // Errors that escape a subcommand are the stack's typed errors with their context; say which command failed.
  try {
    return dispatch(command, rest);
  } catch (const hcq::Error& e) {
    std::fprintf(stderr, "hcq %.*s: %s\n", static_cast<int>(command.size()), command.data(), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hcq %.*s: unexpected error: %s\n", static_cast<int>(command.size()), command.data(),
                 e.what());
  }
  return kExitFailure;
}
