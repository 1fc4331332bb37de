// Live capture: the per-device memory of recent submissions and the HCQ_DUMP file (the format itself:
// capture_format.cpp).
#include "hcq/backend/capture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/hw_queue.hpp"
#include "hcq/knobs.hpp"

namespace hcq::capture {
namespace {

// The capture file: opened once, at first use, from HCQ_DUMP. Each event is one write() on an O_APPEND descriptor,
// so lines from threads (and from child processes sharing the path) never interleave.
struct File {
  std::string path;
  int fd = -1;
  File() {
    const std::optional<std::string> v = knobs::dump();
    if (!v) return;
    path = *v == "1" ? cat("hcq-capture-", ::getpid(), ".jsonl") : *v;
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      // The library cannot refuse to run over a debugging aid: say so once and go on without it.
      std::string msg = cat("hcq: HCQ_DUMP: cannot open ", path, ": ", std::strerror(errno), "; capture is off\n");
      (void)!::write(2, msg.data(), msg.size());
      path.clear();
      return;
    }
    std::string h = header_line() + "\n";
    (void)!::write(fd, h.data(), h.size());
  }
  void append(std::string line) const {
    line += '\n';
    // A short write (disk full) loses the tail of one event; the reader reports that line and goes on.
    (void)!::write(fd, line.data(), line.size());
  }
};

const File& file() {
  static const File f;
  return f;
}

}  // namespace

uint64_t Recent::add(const char* format, const char* queue, uint32_t qid, uint64_t ring_end,
                     std::span<const uint32_t> words, std::span<const uint32_t> tail) noexcept {
  const uint64_t n = next_.fetch_add(1, std::memory_order_relaxed) + 1;
  Slot& s = slots_[(n - 1) % kRecent];
  // Claim the slot: even -> odd. Only a writer 32 submissions behind can hold it; then this record is skipped
  // rather than waited for (the hot path never blocks on a debugging aid).
  uint32_t seq = s.seq.load(std::memory_order_relaxed);
  if ((seq & 1) != 0 || !s.seq.compare_exchange_strong(seq, seq + 1, std::memory_order_acquire)) {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return n;
  }
  // The odd sequence number is ordered before the record's stores, for a reader that sees any of them.
  std::atomic_thread_fence(std::memory_order_release);
  constexpr auto r = std::memory_order_relaxed;
  const size_t keep_words = std::min(words.size(), kSlotWords);
  const size_t keep_tail = std::min(tail.size(), kSlotWords - keep_words);
  for (size_t i = 0; i < keep_words; ++i) s.words[i].store(words[i], r);
  for (size_t i = 0; i < keep_tail; ++i) s.words[keep_words + i].store(tail[i], r);
  s.n.store(n, r);
  s.ring_end.store(ring_end, r);
  s.dropped.store(words.size() + tail.size() - keep_words - keep_tail, r);
  s.format.store(format, r);
  s.queue.store(queue, r);
  s.qid.store(qid, r);
  s.count.store(static_cast<uint32_t>(keep_words + keep_tail), r);
  s.seq.store(seq + 2, std::memory_order_release);
  return n;
}

std::vector<Submission> Recent::snapshot() const {
  std::vector<Submission> out;
  out.reserve(kRecent);
  constexpr auto r = std::memory_order_relaxed;
  for (const Slot& s : slots_) {
    const uint32_t before = s.seq.load(std::memory_order_acquire);
    if (before == 0 || (before & 1) != 0) continue;  // never written, or being written now
    Submission sub;
    sub.n = s.n.load(r);
    sub.ring_end = s.ring_end.load(r);
    sub.dropped = s.dropped.load(r);
    const char* format = s.format.load(r);
    const char* queue = s.queue.load(r);
    sub.qid = s.qid.load(r);
    const uint32_t count = std::min<uint32_t>(s.count.load(r), kSlotWords);
    sub.words.resize(count);
    for (uint32_t i = 0; i < count; ++i) sub.words[i] = s.words[i].load(r);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(r) != before) continue;  // overwritten while copied: a torn record is worse than none
    sub.format = format ? format : "";
    sub.queue = queue ? queue : "";
    out.push_back(std::move(sub));
  }
  std::sort(out.begin(), out.end(), [](const Submission& a, const Submission& b) { return a.n < b.n; });
  return out;
}

bool file_enabled() { return file().fd >= 0; }
std::string file_path() { return file().path; }

void on_submit(const HWQueue& q, const char* format, uint64_t ring_end, std::span<const uint32_t> words,
               std::span<const uint32_t> tail) {
  Device& dev = q.device();
  const char* queue = to_string(q.kind());
  const uint64_t n = dev.recent_ring().add(format, queue, q.id(), ring_end, words, tail);
  if (!file_enabled()) [[likely]]
    return;
  // The capture file: slower is fine, it was asked for.
  Submission s;
  s.n = n;
  s.ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
  s.device = dev.name();
  s.arch = dev.capture_arch();
  s.queue = queue;
  s.format = format;
  s.qid = q.id();
  s.ring_end = ring_end;
  const size_t keep_words = std::min(words.size(), kMaxWords);
  const size_t keep_tail = std::min(tail.size(), kMaxWords - keep_words);
  s.words.reserve(keep_words + keep_tail);
  s.words.assign(words.begin(), words.begin() + static_cast<ptrdiff_t>(keep_words));
  s.words.insert(s.words.end(), tail.begin(), tail.begin() + static_cast<ptrdiff_t>(keep_tail));
  s.dropped = words.size() + tail.size() - s.words.size();
  file().append(to_line(s));
}

void on_alloc(const Allocation& a, std::string_view kind) {
  if (!file_enabled()) [[likely]]
    return;
  file().append(
      to_line(AllocEvent{false, a.device ? a.device->name() : std::string(), std::string(kind), a.va, a.size}));
}

void on_free(const Allocation& a, std::string_view kind) {
  if (!file_enabled()) [[likely]]
    return;
  file().append(
      to_line(AllocEvent{true, a.device ? a.device->name() : std::string(), std::string(kind), a.va, a.size}));
}

}  // namespace hcq::capture
