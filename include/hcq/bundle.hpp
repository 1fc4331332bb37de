// Hang bundle: when a wait on a device times out or the device faults, everything a person needs to see why, in one
// directory named in the error message.
//
// Where: $HCQ_BUNDLE_DIR (default ${TMPDIR:-/tmp}/hcq-bundles), one directory per event,
// <device>-<pid>-<n>-<reason>/ holding bundle.jsonl: a header line
//   {"hcq_bundle":1,"reason":"timeout"|"fault","device":D,"arch":A,"interface":I,"driver_version":V,"error":E,
//    "state":<describe_state()>,"pid":N}
// then one {"t":"signal","label":L,"addr":N,"value":N,"expected":N} line per signal of interest (the one waited
// for, the device timeline), then the device's last submissions as capture events (include/hcq/backend/capture.hpp) in
// the order they were made, then one {"t":"ring",...} line per hardware ring (and per segment a ring points at)
// holding its words from read to write pointer (Device::pending_rings). `hcq-dump show DIR` reads it. HCQ_BUNDLE_DIR=off writes none; at most
// HCQ_BUNDLE_MAX (default 16) per process, so a test suite of timeouts cannot fill the disk.
// Ownership: a bundle is a directory on disk the caller may keep or delete; nothing here holds on to it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace hcq {

class Device;

namespace bundle {

struct SignalState {
  std::string label;
  uint64_t addr = 0, value = 0, expected = 0;
};

struct Result {
  std::string dir;   // the bundle written; empty when none was
  std::string note;  // why none was written (empty when off on purpose)
  // What to append to the error message: "; hang bundle: DIR", "; hang bundle not written: WHY", or "".
  std::string suffix() const;
};

// Never throws: a failure to write becomes the note. Re-entrant calls on the same thread (a backend's
// describe_state that records a fault) write nothing.
Result write(const Device& dev, std::string_view reason, std::string_view error,
             std::span<const SignalState> signals) noexcept;

// The file inside a bundle directory that holds it.
constexpr const char* kFileName = "bundle.jsonl";

}  // namespace bundle
}  // namespace hcq
