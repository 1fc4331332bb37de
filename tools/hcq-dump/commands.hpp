// hcq-dump's subcommands, one file each; main.cpp only dispatches. Each takes the arguments after its name and
// writes to the streams it is given (tests run them in-process), returning the exit status.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace hcq::dump {

// Exit statuses, the same for every subcommand (README "hcq-dump").
constexpr int kExitOk = 0;
constexpr int kExitMalformed = 1;  // decode: some packet is malformed or unknown, or trailing bytes were left over
constexpr int kExitUsage = 2;      // bad command line
constexpr int kExitInput = 3;      // the input cannot be used: unreadable, empty, shorter than one dword
constexpr int kExitTool = 4;       // trace: the shim is not found or the command could not be started

int run_decode(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);
int run_trace(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

extern const char* const kDecodeHelp;
extern const char* const kTraceHelp;

}  // namespace hcq::dump
