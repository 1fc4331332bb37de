// `hcq-dump replay --device D --queue compute|copy [--timeout-ms N] FILE`: submits FILE's raw little-endian dwords
// on a new queue of D, then a signal of our own, and waits for it. Reports completed, faulted (the device's fault
// report, with its hang bundle) or timed out (with its hang bundle), then whether the device still runs work.
// A signal a stuck queue was given is quarantined, never reused (see CompletionSignal).
#include <charconv>
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
    "HCQ_WAIT_TIMEOUT_MS; N in 1..86400000). After a timeout or fault the signal is quarantined: it never returns\n"
    "to the pool, since the stuck queue may still write it. exit status: 0 completed, 5 the device faulted,\n"
    "6 timed out, 2 usage (a bad option or HCQ_WAIT_TIMEOUT_MS), 3 bad input, 4 the device could not be opened or\n"
    "used.\n";

// A completion signal handed to a queue. It goes back to the process's signal pool only once its queue is known to
// be done with it. After a timeout or a fault the queue may still write it later (the hung wait is released, the
// GPU resumes), and the pool hands out the most recently freed slot first: the next signal created (the probe's,
// or any later one in a process that runs the replay in-process) would sit at the same address and could see its
// wait "complete" by the old queue's write. Such a signal is quarantined instead: kept out of the pool for the rest
// of the process, at a cost of 16 bytes.
class CompletionSignal {
 public:
  explicit CompletionSignal(std::string label) : sig_(Signal::create(0, std::move(label))) {}
  CompletionSignal(const CompletionSignal&) = delete;
  CompletionSignal& operator=(const CompletionSignal&) = delete;
  ~CompletionSignal() {
    if (quarantined_) return;
    try {
      sig_.release();
    } catch (const Error&) {
      // Only a slot already released elsewhere throws; there is then nothing to give back.
    }
  }

  const Signal& get() const { return sig_; }
  uint64_t addr() const { return sig_.addr(); }
  // From here on a queue holds the signal's address: a failure before completion quarantines it.
  void handed_to_queue() { handed_ = true; }
  // After a failed wait: keeps the slot out of the pool if a queue may still write it, and says so.
  void quarantine_if_handed(std::ostream& out) {
    if (!handed_ || quarantined_) return;
    quarantined_ = true;
    const std::string label = sig_.label();
    sig_.set_label(label + " (quarantined)");
    out << "quarantined: signal " << hex(sig_.addr()) << " (\"" << label
        << "\") never returns to the pool: the stuck queue may still write it\n";
  }

 private:
  Signal sig_;
  bool handed_ = false;
  bool quarantined_ = false;
};

// After a fault or hang: does a plain signal still complete on a fresh queue? Short timeout: this is a probe.
void probe(Device& dev, QueueKind kind, std::ostream& out) {
  std::optional<CompletionSignal> s;
  try {
    s.emplace("hcq-dump replay probe");
    out << "probe: signal " << hex(s->addr()) << "\n";
    auto q = dev.new_queue(kind);
    q->signal(s->get(), 1);
    s->handed_to_queue();
    q->submit();
    dev.wait_signal(s->get(), 1, std::chrono::milliseconds(2000));
    out << "device after: usable (a fresh signal completed)\n";
  } catch (const std::exception& e) {
    out << "device after: failed: " << e.what() << "\n";
    if (s) s->quarantine_if_handed(out);
  }
}

// --timeout-ms's value: a whole number of milliseconds in 1..the knob's maximum, nullopt for anything else.
std::optional<std::chrono::milliseconds> parse_timeout_ms(std::optional<std::string_view> text) {
  if (!text) return std::nullopt;
  uint64_t ms = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, ms);
  if (ec != std::errc() || ptr != end || ms == 0 || ms > knobs::kMaxWaitTimeoutMs) return std::nullopt;
  return std::chrono::milliseconds(ms);
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
      timeout = parse_timeout_ms(value());
      if (!timeout) {
        err << "hcq-dump replay: --timeout-ms takes a whole number of milliseconds in 1.." << knobs::kMaxWaitTimeoutMs
            << "\n";
        return kExitUsage;
      }
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

  // Read before anything else: the knob also bounds the waits inside the device and its queues (even with
  // --timeout-ms), so a bad value is this command's error, not one thrown from deep inside a wait.
  std::chrono::milliseconds knob_timeout{};
  try {
    knob_timeout = knobs::wait_timeout();
  } catch (const InvalidArgument& e) {
    err << "hcq-dump replay: " << e.what() << "\n";
    return kExitUsage;
  }

  Device* dev = nullptr;
  try {
    dev = &open_device(device);
  } catch (const std::exception& e) {
    err << "hcq-dump replay: cannot open " << device << ": " << e.what() << "\n";
    return kExitTool;
  }
  const auto wait_for = timeout.value_or(knob_timeout);
  int status = kExitOk;
  std::optional<CompletionSignal> done;
  try {
    done.emplace("hcq-dump replay");
    out << "replay: " << words.size() << " dwords on " << dev->name() << " " << to_string(*kind) << " queue, wait "
        << wait_for.count() << " ms, signal " << hex(done->addr()) << "\n";
    auto q = dev->new_queue(*kind);
    q->raw(words).signal(done->get(), 1);
    done->handed_to_queue();
    q->submit();
    dev->wait_signal(done->get(), 1, wait_for);
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
    if (done) done->quarantine_if_handed(out);
    return kExitTool;
  }
  if (done) done->quarantine_if_handed(out);
  probe(*dev, *kind, out);
  return status;
}

}  // namespace hcq::dump
