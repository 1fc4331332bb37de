// `hcq-dump replay --device D --queue compute|copy [--timeout-ms N] FILE`: submits FILE's raw little-endian dwords
// on a new queue of D, then a signal of our own, and waits for it. Reports completed, faulted (the device's fault
// report, with its hang bundle) or timed out (with its hang bundle), then whether the device still runs work.
#include <fstream>
#include <sstream>

#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"
#include "live_commands.hpp"
#include "stream_decode.hpp"

namespace hcq::dump {
namespace {

constexpr const char* kUsage =
    "usage: hcq-dump replay --device D --queue compute|copy [--timeout-ms N] FILE\n"
    "submits FILE's raw little-endian dwords on a new queue of D, then a signal, and waits (default\n"
    "HCQ_WAIT_TIMEOUT_MS). exit status: 0 completed, 5 the device faulted, 6 timed out, 2 usage, 3 bad input,\n"
    "4 the device could not be opened or used.\n";

// After a fault or hang: does a plain signal still complete on a fresh queue? Short timeout: this is a probe.
void probe(Device& dev, QueueKind kind, std::ostream& out) {
  try {
    OwnedSignal s(0, "hcq-dump replay probe");
    auto q = dev.new_queue(kind);
    q->signal(s, 1);
    q->submit();
    dev.wait_signal(s, 1, std::chrono::milliseconds(2000));
    out << "device after: usable (a fresh signal completed)\n";
  } catch (const std::exception& e) {
    out << "device after: failed: " << e.what() << "\n";
  }
}

}  // namespace

int run_replay(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  std::string device, file;
  std::optional<QueueKind> kind;
  std::optional<std::chrono::milliseconds> timeout;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    auto value = [&]() -> std::optional<std::string_view> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      out << kUsage;
      return kExitOk;
    } else if (a == "--device") {
      auto v = value();
      if (!v) break;
      device = std::string(*v);
    } else if (a == "--queue") {
      auto v = value();
      if (v == "compute") kind = QueueKind::compute;
      else if (v == "copy") kind = QueueKind::copy;
      else {
        err << "hcq-dump replay: --queue takes compute or copy\n" << kUsage;
        return kExitUsage;
      }
    } else if (a == "--timeout-ms") {
      auto v = value();
      unsigned long ms = 0;
      try {
        ms = v ? std::stoul(std::string(*v)) : 0;
      } catch (...) {
      }
      if (ms == 0) {
        err << "hcq-dump replay: --timeout-ms takes a positive number\n";
        return kExitUsage;
      }
      timeout = std::chrono::milliseconds(ms);
    } else if (!a.starts_with("-") && file.empty()) {
      file = std::string(a);
    } else {
      err << "hcq-dump replay: unexpected '" << a << "'\n" << kUsage;
      return kExitUsage;
    }
  }
  if (device.empty() || !kind || file.empty()) {
    err << "hcq-dump replay: --device, --queue and FILE are required\n" << kUsage;
    return kExitUsage;
  }
  std::ifstream f(file, std::ios::binary);
  if (!f) {
    err << "hcq-dump replay: cannot read " << file << "\n";
    return kExitInput;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  const std::vector<uint32_t> words = dwords_of_bytes(bytes);
  if (words.empty() || bytes.size() % 4 != 0) {
    err << "hcq-dump replay: " << file << " has " << bytes.size() << " bytes: not a whole number of dwords (>= 1)\n";
    return kExitInput;
  }

  Device* dev = nullptr;
  try {
    dev = &open_device(device);
  } catch (const std::exception& e) {
    err << "hcq-dump replay: cannot open " << device << ": " << e.what() << "\n";
    return kExitTool;
  }
  const auto wait_for = timeout.value_or(knobs::wait_timeout());
  out << "replay: " << words.size() << " dwords on " << dev->name() << " " << to_string(*kind) << " queue, wait "
      << wait_for.count() << " ms\n";
  int status = kExitOk;
  try {
    OwnedSignal done(0, "hcq-dump replay");
    auto q = dev->new_queue(*kind);
    q->raw(words).signal(done, 1);
    q->submit();
    dev->wait_signal(done, 1, wait_for);
    out << "completed\n";
    return kExitOk;
  } catch (const DeviceFault& e) {
    out << "faulted: " << e.what() << "\n";
    status = kExitFaulted;
  } catch (const TimeoutError& e) {
    out << "timed out: " << e.what() << "\n";
    status = kExitTimedOut;
  } catch (const std::exception& e) {
    out << "failed: " << e.what() << "\n";
    return kExitTool;
  }
  probe(*dev, *kind, out);
  return status;
}

}  // namespace hcq::dump
