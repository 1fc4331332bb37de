// Runs clang through drivers/common/subprocess (memfds for stdin, stdout and stderr: nothing touches the disk).
#include "cpu_compiler.hpp"

#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "common/kernel_abi_text.hpp"
#include "common/subprocess.hpp"
#include "hcq/backend/os.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

namespace hcq::cpu {
namespace {

std::string missing_compiler_message(const std::string& cc, int err) {
  return cat("CPU compiler '", cc, "' could not run (", std::strerror(err),
             "): install it with `apt-get install clang-19`, or point HCQ_CC at a clang");
}

// The value of "<key>\t: value" in /proc/cpuinfo's first processor block.
std::string cpuinfo_field(const std::string& text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = std::min(text.find('\n', pos), text.size());
    std::string_view line(text.data() + pos, eol - pos);
    if (line.substr(0, key.size()) == key) {
      const size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        std::string_view v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
        return std::string(v);
      }
    }
    pos = eol + 1;
  }
  return {};
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string host_target(Os& os) {
  const std::string info = os.read_file("/proc/cpuinfo").value_or("");
  std::string model = cpuinfo_field(info, "model name");
  for (char& c : model)
    if (c == ' ' || c == '\t') c = '_';
  if (model.empty()) model = "unknown";
  return cat("x86_64-", model, "-", hex(fnv1a(cpuinfo_field(info, "flags"))));
}

}  // namespace

const std::vector<std::string>& cpu_compile_flags() {
  static const std::vector<std::string> flags = {"-x",
                                                 "c",
                                                 "-std=c11",
                                                 "-O2",
                                                 "-march=native",
                                                 "-fno-math-errno",
                                                 "-mprefer-vector-width=512",
                                                 "-ffreestanding",
                                                 "-fPIC",
                                                 "-fno-common",
                                                 "-fno-stack-protector",
                                                 "-fno-asynchronous-unwind-tables",
                                                 "-fvisibility=hidden"};
  return flags;
}

CpuCompiler::CpuCompiler(Os& os) : cc_(knobs::cpu_cc()), target_(host_target(os)) {}

std::string CpuCompiler::options() const {
  std::string s;
  for (const std::string& f : cpu_compile_flags()) s += (s.empty() ? "" : " ") + f;
  // The prelude is part of every kernel: a changed ABI must never be served a binary cached for the old one.
  return s + "\nprelude:\n" + drivers::kKernelAbiText;
}

std::string CpuCompiler::identity() const {
  std::call_once(identity_once_, [this] {
    try {
      const drivers::ToolResult r = drivers::run_tool({cc_, "--version"}, {});
      if (r.spawn_error != 0) {
        identity_ = cc_ + " (unavailable)";
        return;
      }
      const std::string text(r.out.begin(), r.out.end());
      identity_ = cc_ + " " + text.substr(0, text.find('\n'));
    } catch (const Error&) {
      identity_ = cc_ + " (unavailable)";
    }
  });
  return identity_;
}

std::vector<uint8_t> CpuCompiler::compile(std::string_view source) {
  std::vector<std::string> args{cc_};
  for (const std::string& f : cpu_compile_flags()) args.push_back(f);
  args.insert(args.end(), {"-c", "-", "-o", "-"});

  // #line keeps diagnostics pointing at the user's own lines, not at the prepended ABI.
  std::string text = drivers::kKernelAbiText;
  text += "\n#line 1 \"kernel.c\"\n";
  text += source;

  const drivers::ToolResult r = drivers::run_tool(args, text);
  if (r.spawn_error != 0) throw CompileError(missing_compiler_message(cc_, r.spawn_error));
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
    // posix_spawnp may report a missing program as the child's exit status 127.
    if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127 && r.out.empty() && r.err.empty())
      throw CompileError(missing_compiler_message(cc_, ENOENT));
    throw CompileError(cat("CPU kernel compile failed (", cc_, ", ", r.describe(), "):\n", r.err));
  }
  if (r.out.empty()) throw CompileError(cat("CPU kernel compile produced no object (", cc_, "):\n", r.err));
  return r.out;
}

}  // namespace hcq::cpu
