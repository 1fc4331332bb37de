// A simulated GPU's page tables made real for its kernels: a mirror of the process's unified VA range in which exactly
// the memory mapped on that GPU is mapped, with that GPU's permissions, at the same offset. A kernel's host twin runs
// on mirror addresses, so its every load, store and atomic is checked by the CPU's MMU against this GPU's mappings:
// memory another GPU maps, memory the host maps and unmapped VA all fault (guarded_run.hpp turns the SIGSEGV into the
// GPU's page fault with the address and the access), a store to a page mapped read-only faults as a write.
//
// How: one PROT_NONE reservation the size of the unified VA (address space only), and for each mapping an mmap of
// the memory's memfd (MemfdBacking) at the mirror address, MAP_SHARED: the very bytes the host and the engines see.
// Memory without an fd (userptr / OS-descriptor host pages) cannot be mapped twice and is not mirrored; twins reach it
// through the driver's translate(), checked at its first byte only (docs/architecture.md, "The simulated GPUs' MMU").
//
// Cost: one mmap per GPU mapping made or removed; nothing per access (a twin runs at native speed); 32 GiB of address
// space (no memory, guards included) per simulated GPU.
//
// The GPU's L2 as a write-back cache (when enabled): a kernel's writes reach memory — what the host, the copy and
// packet engines and other GPUs read — only when a command writes the cache back (QueueHost::caches, kCacheWriteback)
// or the cache evicts the line, so a missing RELEASE_MEM writeback or NV L2 flush leaves stale data in memory, as on
// hardware. Kernels of the same GPU see each other's writes at once (one L2 per GPU). How: GPU-writable pages are
// mapped read-only while clean; a kernel's first write to one faults (GuardedRun's handler calls cache_fill), which
// copies the page into a slot of the cache's own memfd, keeps a snapshot of it and maps the slot in its place: the
// "line" (other kernels writing the page meanwhile wait for the fill, so no write falls between copy and map); the
// fault fills the clean pages beside it in its 64 KiB block too (one mmap), lines with no changed bytes yet. A
// writeback compares each line with its snapshot and stores only the bytes that changed into memory (so the host's
// own writes to the rest of the page survive, as a cache's byte masks keep them), then maps the page clean again; it
// works a run of adjacent lines at a time (two system calls a run, none a byte), storing into memory where the
// simulator maps it (Range::memory). A writeback of a few lines (kKeepLines) keeps them instead: their changed bytes
// go to memory and into their snapshots, and the pages stay lines, writable. Each remap costs every CPU running the
// process a TLB shootdown; a kernel's fill and writeback cost three, so the host thread submitting the next call ran
// with its TLB flushed (TinyJit's replay of one kernel: 2.2 us of host time per call, 1.0 - 1.4 without the cache
// model). Lines
// are pages; the cache holds kLines of them and writes its kEvictLines oldest back to make room when full; bytes of a
// line no kernel changed follow memory (refresh_clean_bytes, before each kernel), as the untouched lines of a real
// cache would. Not modelled: stale clean lines (reads see memory, memory as of the kernel's start in a line, or the
// GPU's own dirty bytes), so a missing invalidate goes unnoticed.
//
// Thread-safe: mappings change under a lock while kernels run on other mappings; a kernel touching memory that is
// being unmapped faults, as it would on hardware. The lock is a spin lock because the SIGSEGV handler takes it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace hcq::sim {

class GpuView {
 public:
  // One GPU mapping: [va, va + size) shows `fd` from `offset` on.
  struct Range {
    uint64_t va = 0, size = 0;
    int fd = -1;
    uint64_t offset = 0;
    bool writable = true, executable = false;
    // The simulator's own mapping of the same bytes (of `fd` at `offset`): the cache reads and writes memory there
    // (a window mapped for the moment would cost system calls and a TLB shootdown of every CPU running the process).
    // A range without it is not mirrored. `keep` holds that mapping while the view shows the range (a driver whose
    // memory may go before its GPU mapping is removed; null where that cannot happen).
    std::byte* memory = nullptr;
    std::shared_ptr<const void> keep;
    bool operator==(const Range&) const = default;
  };

  // A mirror of GPU VA [base, base + size), nothing mapped yet. Throws OutOfMemory when the address space is refused.
  GpuView(uint64_t base, uint64_t size);
  // A mirror of the process's unified VA range (hcq::process().va), where the backends place GPU memory: its first
  // kMaxMirrorBytes. The VA space hands out its lowest free range first, so that is where a process's buffers are;
  // memory beyond it is not mirrored (twins reach it through the driver's translate(), as memory without an fd).
  // The cap keeps every simulated GPU of a process (32 GiB of address space each, with the guards) within
  // ThreadSanitizer's 1.5 TiB application ranges (a test process holds some twenty simulated GPUs open).
  static constexpr uint64_t kMaxMirrorBytes = uint64_t{16} << 30;
  // Inaccessible address space around the mirror, so that a kernel indexing far past its last buffer (a 32-bit index
  // of 4-byte elements reaches 16 GiB) or a little before its first faults in the guard instead of leaving it.
  static constexpr uint64_t kGuardBefore = uint64_t{1} << 20, kGuardAfter = uint64_t{16} << 30;
  static std::unique_ptr<GpuView> of_unified_va();
  ~GpuView();
  GpuView(const GpuView&) = delete;
  GpuView& operator=(const GpuView&) = delete;

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  bool covers(uint64_t va, uint64_t bytes) const {
    return va >= base_ && bytes <= size_ && va - base_ <= size_ - bytes;
  }
  // The mirror address of `va` (covers(va, 1) must hold), and back.
  std::byte* at(uint64_t va) const { return mirror_ + (va - base_); }
  // Whether `p` lies in the mirror or its guards (va_of then names the GPU VA it stands for, outside [base, base +
  // size) in a guard).
  bool in_mirror(const void* p) const {
    const auto a = reinterpret_cast<uintptr_t>(p), lo = reinterpret_cast<uintptr_t>(mirror_) - kGuardBefore;
    return a >= lo && a - lo < kGuardBefore + size_ + kGuardAfter;
  }
  uint64_t va_of(const void* p) const {
    return base_ + (reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(mirror_));
  }

  // Shows `r`, replacing whatever the mirror showed there. A range not covered, not page aligned, or without an fd or
  // the simulator's mapping is not mirrored (false); so is one the OS refuses to map.
  bool map(const Range& r);
  // Stops showing [va, va + size) (page aligned; what lies outside the mirror is ignored).
  void unmap(uint64_t va, uint64_t size);
  // Makes the mirror show exactly `ranges`, remapping only what differs from what it shows now (a driver whose GPU
  // mappings change in many places re-derives the whole list after each change). Overlapping ranges: the later wins
  // where they start at the same VA; a range overlapping an earlier one otherwise is left out.
  void show(const std::vector<Range>& ranges);

  // The mapping that holds `va`, if the mirror shows one.
  std::optional<Range> find(uint64_t va) const;

  // ---- the write-back cache
  static constexpr size_t kLines = 4096;  // 16 MiB of 4 KiB lines: a GPU's L2
  // A write fault fills the line it hit and the clean pages next to it within its aligned 64 KiB block and its mapping
  // at once (one fault and one mmap for up to 16 lines): a kernel writing a buffer writes its neighbours next.
  static constexpr size_t kBlockLines = 16;
  static constexpr size_t kBlocks = kLines / kBlockLines;
  // A full cache writes back its oldest lines, this many at once (256 KiB), to make room: one system call per run of
  // adjacent pages rather than per page, as a GPU writing a large buffer evicts in streams.
  static constexpr size_t kEvictLines = 64;
  // Turns the cache on (before anything is mapped): from then on a kernel's writes wait in it for a writeback.
  void enable_cache();
  bool cache_enabled() const { return cache_; }
  // For GuardedRun's SIGSEGV handler (async-signal-safe): a kernel's write faulted at mirror address `host`. True
  // when that was a clean GPU-writable page, now a dirty line the write may retry into; false when the GPU refuses
  // the write (not mapped, or mapped read-only): the kernel's fault.
  bool cache_fill(uintptr_t host);
  // A writeback that finds at most this many lines (one block: a small kernel's output and the pages filled beside it)
  // cleans them in place and keeps them; more are written back and dropped, so that the refresh before each kernel,
  // which reads every line, stays short.
  static constexpr size_t kKeepLines = kBlockLines;
  // Writes every dirty line's changed bytes to memory; the lines are clean afterwards.
  void writeback();
  // The lines the cache holds, dirty or clean.
  size_t lines() const;
  // Before a kernel runs: the bytes of each line that no kernel changed take memory's current values. A cache line
  // is 64-128 bytes on hardware, a line here a page: without this, another engine's write to a different part of
  // the page would be hidden behind the line. (A byte a kernel rewrote with its old value counts as unchanged.)
  void refresh_clean_bytes();
  // The lines holding bytes a kernel changed (a line filled beside a written one holds none until it is written).
  size_t dirty_lines() const;

 private:
  struct Line {
    uint64_t va = 0;  // the page
    int fd = -1;
    uint64_t offset = 0;          // of the page in fd
    std::byte* memory = nullptr;  // the page in the simulator's own mapping (Range::memory)
    uint32_t slot = 0;            // its page in the cache's memfd (and its snapshot's)
  };
  class Lock {  // the spin lock, as a guard
   public:
    explicit Lock(const GpuView& v) : v_(v) {
      while (v_.lock_.test_and_set(std::memory_order_acquire)) {
      }
    }
    ~Lock() { v_.lock_.clear(std::memory_order_release); }

   private:
    const GpuView& v_;
  };

  bool map_locked(const Range& r);
  void unmap_locked(uint64_t va, uint64_t size);
  const Range* find_locked(uint64_t va) const;
  // Writes back the lines_[i] for which pick(i) holds and drops them (the others keep their order: oldest first).
  template <class Pick>
  void writeback_locked(Pick pick);
  void writeback_range_locked(uint64_t va, uint64_t size);
  // Puts lines_[order_[0, n)] in VA order and calls fn(first, count) for each run of them that shows adjacent pages
  // of one memfd at adjacent offsets (order_[first, first + count)): what one mapping covers.
  template <class Fn>
  void for_each_run_locked(size_t n, Fn fn);
  std::byte* slot_bytes(const Line& l) const { return pool_ + uint64_t{l.slot} * 4096; }
  std::byte* snapshot(const Line& l) const { return snapshots_ + uint64_t{l.slot} * 4096; }

  uint64_t base_ = 0, size_ = 0;
  std::byte* mirror_ = nullptr;
  mutable std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
  std::map<uint64_t, Range> shown_;  // va -> what the mirror maps there
  bool cache_ = false;
  std::array<Line, kLines> lines_{};
  size_t nlines_ = 0;
  // The slots, kBlockLines to a block: the blocks no line holds are free_blocks_[0, nfree_blocks_); a line of the page
  // at block offset k of a block b has slot b * kBlockLines + k, so a fill's lines are adjacent in the pool.
  std::array<uint32_t, kBlocks> free_blocks_{};
  size_t nfree_blocks_ = 0;
  std::array<uint32_t, kBlocks> block_lines_{};  // how many lines each block holds
  std::array<uint32_t, kLines> order_{};  // scratch for for_each_run_locked (no allocation in the SIGSEGV handler)
  std::vector<uint64_t> is_line_;         // a bit per page of the mirror: whether a line holds it
  bool is_line(uint64_t va) const { return is_line_[(va - base_) / 4096 / 64] >> ((va - base_) / 4096 % 64) & 1; }
  void set_line(uint64_t va, bool on) {
    const uint64_t bit = uint64_t{1} << ((va - base_) / 4096 % 64);
    uint64_t& word = is_line_[(va - base_) / 4096 / 64];
    word = on ? word | bit : word & ~bit;
  }
  int pool_fd_ = -1;                // the lines' bytes: kLines pages
  std::byte* pool_ = nullptr;       // the simulator's own mapping of them
  std::byte* snapshots_ = nullptr;  // kLines pages: each slot's bytes when its line was filled
};

}  // namespace hcq::sim
