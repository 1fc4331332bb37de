// Live capture: what every queue handed to the hardware, and where the memory it points at came from.
//
// Each backend calls on_submit() right after it rings the doorbell; the allocator calls on_alloc()/on_free(). Two
// consumers:
//   - HCQ_DUMP=1 (file ./hcq-capture-<pid>.jsonl) or HCQ_DUMP=PATH appends every event to a capture file
//     (`hcq-dump show` reads it). Off by default: then the file path costs one predictable branch.
//   - Always on: each device keeps its last kRecent submissions in memory (Recent), so a hang bundle can show them
//     without HCQ_DUMP. This runs on every submission, so it allocates nothing, takes no lock and reads no clock:
//     a fixed array of slots, a claimed index (one atomic add) and a per-slot sequence number (seqlock) so that a
//     bundle written while queues submit sees whole records or skips them. Device name and arch are filled in
//     when a bundle is written.
//
// Capture format, version 1: JSON lines, one object per line, appended with one write() each (thread- and
// process-safe). The first line of a file is {"hcq_capture":1,...}. Events:
//   {"t":"alloc"|"free","dev":D,"va":N,"size":N,"kind":"buffer"|"side"}
//   {"t":"submit","n":N,"ns":N,"dev":D,"arch":A,"queue":"compute"|"copy","qid":N,"format":F,"ring_end":N,
//    "words":"<8 hex digits per dword, little-endian value order>","dropped":N}
//   {"t":"ring","dev":D,"arch":A,"queue":Q,"format":F,"read":N,"write":N,"va":N,"words":"<hex>","dropped":N}
// n counts the submissions of one device (1, 2, ...); ns (steady clock) is written by the capture file only.
// F is an hcq-dump decode format ("pm4", "sdma", "aql", "nv-push") or "cpu" (hcq's CPU queue words, shown raw).
// ring_end is the queue's ring write position (dwords; NV: GPFIFO entries) just past this submission.
// Ownership: each Device owns its Recent ring; the capture file is owned by the process (opened once, appended to).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hcq/memory.hpp"

namespace hcq {

class HWQueue;
class Device;

namespace capture {

struct Submission {
  uint64_t n = 0;   // this submission's number on its device (1, 2, ...)
  uint64_t ns = 0;  // steady-clock time, nanoseconds (capture file only; 0 when not known)
  std::string device, arch, queue, format;
  uint32_t qid = 0;  // HWQueue::id()
  uint64_t ring_end = 0;
  std::vector<uint32_t> words;
  uint64_t dropped = 0;  // words not kept (a submission over kMaxWords)
};

struct AllocEvent {
  bool freed = false;
  std::string device, kind;
  uint64_t va = 0, size = 0;
};

// A signal's value when a hang bundle was written: {"t":"signal","label":L,"addr":N,"value":N,"expected":N}.
struct SignalEvent {
  std::string label;
  uint64_t addr = 0, value = 0, expected = 0;
};

// What a hardware ring held between its read and write pointers when a bundle was written (Device::pending_rings).
// A ring whose entries point elsewhere (NV GPFIFO) adds one RingDump per segment it points at, with `va` set.
struct RingDump {
  std::string device, arch;
  std::string queue;             // which hardware queue: "compute", "copy", or a backend's name for it
  std::string format;            // an hcq-dump decode format: "pm4", "sdma", "aql", "nv-gpfifo", "nv-push", "cpu"
  uint64_t read = 0, write = 0;  // the ring's pointers, in its own unit (dwords; AQL and GPFIFO: entries)
  uint64_t va = 0;               // a pointed-at segment's GPU address (0 for the ring itself)
  std::vector<uint32_t> words;   // from `read` to `write` (at most kMaxWords)
  uint64_t dropped = 0;          // words not kept
};

// One event, in file order: exactly one member is set.
struct Event {
  std::optional<Submission> submit;
  std::optional<AllocEvent> alloc;
  std::optional<SignalEvent> signal;
  std::optional<RingDump> ring;
};

constexpr size_t kRecent = 32;         // submissions each device remembers
constexpr size_t kSlotWords = 128;     // dwords of each remembered submission (the rest are counted in `dropped`)
constexpr size_t kMaxWords = 1 << 16;  // dwords the capture file and a ring dump keep of one submission or ring

// One device's last kRecent submissions, kept on every submission. add() is wait-free for the common case and never
// allocates; snapshot() may run concurrently and returns only records that were whole while it copied them.
class Recent {
 public:
  // Returns this submission's number on the device. `format` and `queue` must be string literals (kept as pointers).
  uint64_t add(const char* format, const char* queue, uint32_t qid, uint64_t ring_end, std::span<const uint32_t> words,
               std::span<const uint32_t> tail) noexcept;
  // Oldest first; device and arch are the caller's to fill in.
  std::vector<Submission> snapshot() const;
  // Submissions not remembered because their slot was being written by a submission 32 earlier still in progress.
  uint64_t skipped() const { return skipped_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint32_t> seq{0};  // odd while being written; 0: never written
    std::atomic<uint64_t> n{0}, ring_end{0}, dropped{0};
    std::atomic<const char*> format{nullptr}, queue{nullptr};
    std::atomic<uint32_t> qid{0}, count{0};
    std::array<std::atomic<uint32_t>, kSlotWords> words{};
  };
  std::atomic<uint64_t> next_{0};
  std::atomic<uint64_t> skipped_{0};
  std::array<Slot, kRecent> slots_;
};

// True when HCQ_DUMP asked for a capture file (read once, at first use).
bool file_enabled();
// The capture file's path, or empty when off.
std::string file_path();

// Backends: after ringing the doorbell for `q`. `words` then `tail` are the dwords of this submission as the
// queue built them (patched); `format` how to decode them.
// `format` must be a string literal.
void on_submit(const HWQueue& q, const char* format, uint64_t ring_end, std::span<const uint32_t> words,
               std::span<const uint32_t> tail = {});
// The allocator: a buffer or side chunk handed out, or given back.
void on_alloc(const Allocation& a, std::string_view kind);
void on_free(const Allocation& a, std::string_view kind);

// Serialization shared by the capture file and the hang bundle.
std::string header_line();
std::string to_line(const Submission& s);
std::string to_line(const AllocEvent& a);
std::string to_line(const RingDump& r);

// A flat JSON object as read from one line: string and number members (numbers as uint64). Nested values and
// arrays are rejected. Returns nullopt (and why in *error) for a malformed line.
struct FlatObject {
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::pair<std::string, uint64_t>> numbers;
  const std::string* str(std::string_view key) const;
  std::optional<uint64_t> num(std::string_view key) const;
};
std::optional<FlatObject> parse_flat_object(std::string_view line, std::string* error);

// Reads a capture (or the event lines of a bundle). Never throws for bad content: a line that is not a valid event
// is skipped with a note in `problems` ("line 7: ...").
struct Capture {
  std::optional<FlatObject> header;  // the {"hcq_capture":...} or {"hcq_bundle":...} line
  std::vector<Event> events;
  std::vector<std::string> problems;
};
Capture parse(std::string_view text);

}  // namespace capture
}  // namespace hcq
