// Hang bundles: written on the error path, so every step is guarded and nothing escapes as an exception.
#include "hcq/bundle.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "hcq/backend/capture.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "json_text.hpp"

namespace hcq::bundle {
namespace {

std::atomic<unsigned> g_written{0};
thread_local bool t_writing = false;

// mkdir -p; false with errno set on failure.
bool make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    std::string part = path.substr(0, i);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string safe_name(std::string_view s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out;
}

// "key":"value", escaped as the capture writer escapes.
std::string str_member(std::string_view key, std::string_view value) {
  std::string out;
  json_text::append_string(out, key);
  out += ':';
  json_text::append_string(out, value);
  return out;
}

std::string num_member(std::string_view key, uint64_t v) { return cat("\"", key, "\":", v); }

}  // namespace

std::string Result::suffix() const {
  if (!dir.empty()) return cat("; hang bundle: ", dir);
  if (!note.empty()) return cat("; hang bundle not written: ", note);
  return {};
}

Result write(const Device& dev, std::string_view reason, std::string_view error,
             std::span<const SignalState> signals) noexcept {
  if (t_writing) return {};
  t_writing = true;
  Result r;
  try {
    const std::string root = knobs::bundle_dir();
    if (root == "off") {
      t_writing = false;
      return r;
    }
    const unsigned max = knobs::bundle_max();  // a malformed value throws InvalidArgument: it becomes the note
    const unsigned n = g_written.fetch_add(1);
    if (n >= max) {
      r.note = cat("HCQ_BUNDLE_MAX (", max, ") bundles already written by this process");
      t_writing = false;
      return r;
    }
    const std::string dir = cat(root, "/", safe_name(dev.name()), "-", ::getpid(), "-", n, "-", reason);
    if (!make_dirs(dir)) {
      r.note = cat("cannot create ", dir, ": ", std::strerror(errno));
      t_writing = false;
      return r;
    }
    // Each part is asked for separately: a backend that fails to describe itself still gets the rest written.
    DeviceInfo info;
    try {
      info = dev.info();
    } catch (const std::exception& e) {
      info.driver_version = cat("(info failed: ", e.what(), ")");
    }
    std::string state;
    try {
      state = dev.describe_state();
    } catch (const std::exception& e) {
      state = cat("(describe_state failed: ", e.what(), ")");
    }
    // The rings go last (what the hardware had still to read when it stopped); a backend that cannot list them
    // says why in the header.
    std::string rings, rings_error;
    try {
      for (capture::RingDump& rd : dev.pending_rings()) {
        rd.device = dev.name();
        rd.arch = dev.capture_arch();
        rings += capture::to_line(rd) + "\n";
      }
    } catch (const std::exception& e) {
      rings_error = e.what();
    }
    std::string out = "{" + num_member("hcq_bundle", 1) + "," + str_member("reason", reason) + "," +
                      str_member("device", dev.name()) + "," + str_member("arch", info.arch) + "," +
                      str_member("interface", info.interface) + "," +
                      str_member("driver_version", info.driver_version) + "," + str_member("error", error) + "," +
                      str_member("state", state) + "," +
                      (rings_error.empty() ? std::string() : str_member("rings_error", rings_error) + ",") +
                      num_member("pid", static_cast<uint64_t>(::getpid())) + "}\n";
    for (const SignalState& s : signals)  // appended piece by piece: GCC 12 warns falsely on "{" + std::string
      out += cat("{", str_member("t", "signal"), ",", str_member("label", s.label), ",", num_member("addr", s.addr),
                 ",", num_member("value", s.value), ",", num_member("expected", s.expected), "}\n");
    for (const capture::Submission& s : dev.recent_submissions()) out += capture::to_line(s) + "\n";
    out += rings;
    const std::string path = cat(dir, "/", kFileName);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << out;
    f.close();
    if (!f) {
      r.note = cat("cannot write ", path);
    } else {
      r.dir = dir;
    }
  } catch (const std::exception& e) {
    r.note = e.what();
  } catch (...) {
    r.note = "unknown error";
  }
  t_writing = false;
  return r;
}

}  // namespace hcq::bundle
