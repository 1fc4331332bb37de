// hcq-dump's live-debugging subcommands (record, show, replay); see commands.hpp for the shared conventions.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "commands.hpp"

namespace hcq::dump {

int run_record(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);
int run_show(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);
int run_replay(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

// `show` as a function of the file's text, for tests and the fuzzer: prints everything, never throws.
// Returns kExitOk, or kExitMalformed when some line could not be used.
int show_text(std::string_view text, std::ostream& out);

// replay's exit statuses past the common ones: the words faulted the device, or the wait timed out.
constexpr int kExitFaulted = 5;
constexpr int kExitTimedOut = 6;

}  // namespace hcq::dump
