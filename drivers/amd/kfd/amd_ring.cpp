// AmdRing: a KFD queue's ring buffer as the host writes it: room, wrap-around filling, publishing the write pointer and
// ringing the doorbell, and what the GPU has consumed.
#include "amd/kfd/amd_queue.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "amd/decode.hpp"
#include "amd/kfd/amd_device.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

namespace hcq::amd {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t load_ptr(volatile uint64_t* p) { return __atomic_load_n(const_cast<uint64_t*>(p), __ATOMIC_ACQUIRE); }

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// AmdRing

AmdRing::AmdRing(KfdGpu& gpu, const Target& target, KfdQueue::Type type, uint32_t ring_bytes, std::string device_name)
    : gpu_(gpu), target_(target), device_name_(std::move(device_name)) {
  queue_ = gpu_.create_queue(type, ring_bytes);
  scratch_ = std::make_unique<AmdScratch>(gpu_, target_, queue_->amd_queue(),
                                          cat(device_name_, ": ", kind_name(), " queue ", queue_->queue_id()));
  ring_words_ = ring_bytes / 4;
  ring_ = static_cast<uint32_t*>(queue_->ring());
  if (aql()) {
    // Every slot starts INVALID: the packet processor stops at the first slot whose header is not published.
    for (uint32_t i = 0; i < ring_words_; i += aql::kPacketWords)
      ring_[i] = aql::header(aql::INVALID, false, aql::SCOPE_NONE, aql::SCOPE_NONE);
  }
}

const char* AmdRing::units_name() const {
  switch (queue_->type()) {
    case KfdQueue::Type::compute_pm4: return "dwords";
    case KfdQueue::Type::sdma: return "bytes";
    case KfdQueue::Type::compute_aql: return "packets";
  }
  return "?";
}

uint64_t AmdRing::to_units(uint64_t words) const {
  switch (queue_->type()) {
    case KfdQueue::Type::sdma: return words * 4;
    case KfdQueue::Type::compute_aql: return words / aql::kPacketWords;
    case KfdQueue::Type::compute_pm4: break;
  }
  return words;
}

uint64_t AmdRing::to_words(uint64_t units) const {
  switch (queue_->type()) {
    case KfdQueue::Type::sdma: return units / 4;
    case KfdQueue::Type::compute_aql: return units * aql::kPacketWords;
    case KfdQueue::Type::compute_pm4: break;
  }
  return units;
}

const char* AmdRing::kind_name() const {
  switch (queue_->type()) {
    case KfdQueue::Type::compute_pm4: return "PM4 compute";
    case KfdQueue::Type::sdma: return "SDMA";
    case KfdQueue::Type::compute_aql: return "AQL compute";
  }
  return "?";
}

uint64_t AmdRing::read_words() const { return to_words(load_ptr(queue_->read_ptr())); }

void AmdRing::publish(uint64_t pos_words) {
  if (pos_words == published_words_) return;
  queue_->submit(to_units(pos_words));
  published_words_ = pos_words;
}

bool AmdRing::drained() const { return load_ptr(queue_->read_ptr()) >= load_ptr(queue_->write_ptr()); }

std::string AmdRing::describe() const {
  // No lock: the pointers are read atomically, and a submitter waiting for room must not block a hang report.
  const uint64_t r = load_ptr(queue_->read_ptr()), w = load_ptr(queue_->write_ptr());
  std::string s = cat(kind_name(), " queue ", queue_->queue_id(), ": rptr ", r, " wptr ", w, " (", units_name(),
                      ", ring of ", queue_->ring_bytes(), " bytes)");
  if (r >= w) return s + ", idle";
  // The packet the GPU stopped at: up to 64 dwords from the read pointer (wrapping), decoded with the target's
  // tables. A garbled ring decodes as an error packet rather than failing the report.
  const uint64_t from = to_words(r);
  const uint64_t n = std::min<uint64_t>({to_words(w) - from, 64, ring_words_});
  std::vector<uint32_t> words(n);
  for (uint64_t i = 0; i < n; ++i) words[i] = __atomic_load_n(ring_ + (from + i) % ring_words_, __ATOMIC_RELAXED);
  std::vector<DecodedPacket> pkts;
  switch (queue_->type()) {
    case KfdQueue::Type::compute_pm4: pkts = decode_pm4(words, target_); break;
    case KfdQueue::Type::sdma: pkts = decode_sdma(words, target_); break;
    case KfdQueue::Type::compute_aql: pkts = decode_aql(words, target_); break;
  }
  if (pkts.empty()) return s;
  const DecodedPacket& p = pkts.front();
  s += cat(", at rptr: ", p.op);
  for (const DecodedField& f : p.fields) s += cat(" ", f.name, "=", f.text.empty() ? hex(f.value) : f.text);
  if (!p.ok()) s += cat(" [", p.error, "]");
  return s;
}

capture::RingDump AmdRing::pending() const {
  capture::RingDump d;
  d.queue = cat(kind_name(), " queue ", queue_->queue_id());
  switch (queue_->type()) {
    case KfdQueue::Type::compute_pm4: d.format = "pm4"; break;
    case KfdQueue::Type::sdma: d.format = "sdma"; break;
    case KfdQueue::Type::compute_aql: d.format = "aql"; break;
  }
  d.read = load_ptr(queue_->read_ptr());
  d.write = load_ptr(queue_->write_ptr());
  const uint64_t from = to_words(d.read);
  const uint64_t pending = d.write > d.read ? to_words(d.write) - from : 0;
  const uint64_t n = std::min<uint64_t>({pending, ring_words_, capture::kMaxWords});
  d.words.resize(n);
  for (uint64_t i = 0; i < n; ++i) d.words[i] = __atomic_load_n(ring_ + (from + i) % ring_words_, __ATOMIC_RELAXED);
  d.dropped = pending - n;
  return d;
}

void AmdRing::wait_room(uint64_t pos, uint64_t need) {
  // The read pointer lives on a line the GPU keeps writing: load it only when the room seen last is not enough
  // (an AQL submit asks once per 64-byte packet).
  if (pos + need - read_seen_words_ <= ring_words_) [[likely]]
    return;
  read_seen_words_ = read_words();
  if (pos + need - read_seen_words_ <= ring_words_) return;
  publish(pos);  // what is already written must reach the GPU, or it never frees room
  const auto limit = knobs::wait_timeout();
  uint64_t seen = read_words();
  auto moved_at = Clock::now();
  auto sleep = std::chrono::microseconds(1);
  for (;;) {
    const uint64_t r = read_words();
    if (pos + need - r <= ring_words_) {
      read_seen_words_ = r;
      return;
    }
    if (check_) check_();
    const auto now = Clock::now();
    if (r != seen) {
      seen = r;
      moved_at = now;
      sleep = std::chrono::microseconds(1);
    } else if (now - moved_at >= limit) {
      throw TimeoutError(cat(device_name_, ": ", kind_name(), " queue ", queue_->queue_id(), ": no room for ", need,
                             " dwords in the ring of ", queue_->ring_bytes(), " bytes after ", limit.count(),
                             " ms: the GPU's read pointer stays at rptr ", to_units(r), ", wptr ", to_units(pos), " (",
                             units_name(), "); ", describe()));
    }
    if (sleep.count() < 4) std::this_thread::yield();
    else std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(200));
  }
}

void AmdRing::fill(uint32_t n, uint64_t& pos) {
  // Only ever up to the ring end, so the filler itself never wraps.
  wait_room(pos, n);
  filler_.clear();
  const bool sdma = queue_->type() == KfdQueue::Type::sdma;
  const uint32_t max_packet = sdma ? target_.sdma->nop->find("count")->mask() + 1 : pm4::kNopCountHeaderOnly + 1;
  for (uint32_t left = n; left > 0;) {
    const uint32_t k = std::min(left, max_packet);
    if (sdma) SdmaEncoder(target_, filler_).nop(k);
    else Pm4Encoder(target_, filler_).nop(k);
    left -= k;
  }
  std::memcpy(ring_ + pos % ring_words_, filler_.data(), filler_.size() * 4);
  pos += n;
}

void AmdRing::put(std::span<const uint32_t> group, uint64_t& pos) {
  const uint64_t n = group.size();
  if (n == 0) return;
  if (n > ring_words_)
    throw InvalidArgument(cat(device_name_, ": ", kind_name(), " queue ", queue_->queue_id(), ": a packet group of ", n,
                              " dwords does not fit the ring of ", ring_words_, " dwords"));
  if (aql()) {
    // Packet by packet: the body first, then the header dword with release order, which publishes the packet.
    if (n % aql::kPacketWords)
      throw InvalidArgument(
          cat(device_name_, ": AQL queue ", queue_->queue_id(), ": ", n, " dwords are not whole 64-byte packets"));
    for (uint64_t i = 0; i < n; i += aql::kPacketWords) {
      wait_room(pos, aql::kPacketWords);
      uint32_t* slot = ring_ + pos % ring_words_;  // slots never straddle the end: the ring is whole packets
      std::memcpy(slot + 1, group.data() + i + 1, (aql::kPacketWords - 1) * 4);
      __atomic_store_n(slot, group[i], __ATOMIC_RELEASE);
      pos += aql::kPacketWords;
    }
    return;
  }
  const uint64_t off = pos % ring_words_;
  if (off + n > ring_words_) fill(static_cast<uint32_t>(ring_words_ - off), pos);
  wait_room(pos, n);
  std::memcpy(ring_ + pos % ring_words_, group.data(), n * 4);
  pos += n;
}

uint64_t AmdRing::submit(std::span<const uint32_t> words, std::span<const uint32_t> starts,
                         std::span<const uint32_t> tail) {
  std::lock_guard lock(mu_);
  uint64_t pos = wptr_words_;
  try {
    if (starts.empty()) {
      put(words, pos);
    } else {
      for (size_t i = 0; i < starts.size(); ++i) {
        const size_t b = starts[i], e = i + 1 < starts.size() ? starts[i + 1] : words.size();
        put(words.subspan(b, e - b), pos);
      }
    }
    put(tail, pos);
  } catch (...) {
    // Part of the submission may already be published; what is written stays (the GPU may be reading it), so
    // the ring stays consistent: the next submission continues after it.
    wptr_words_ = pos;
    publish(pos);
    throw;
  }
  wptr_words_ = pos;
  publish(pos);
  return pos;
}

bool AmdRing::wait_consumed(uint64_t end_words, std::chrono::milliseconds timeout) const {
  const auto until = Clock::now() + timeout;
  auto sleep = std::chrono::microseconds(1);
  while (read_words() < end_words) {
    if (Clock::now() >= until) return false;
    if (check_) {
      try {
        check_();
      } catch (const Error&) {
        return false;
      }
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(500));
  }
  return true;
}

}  // namespace hcq::amd
