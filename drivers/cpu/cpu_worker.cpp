#include "cpu_worker.hpp"

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "cpu_commands.hpp"
#include "cpu_limits.hpp"
#include "cpu_thread_pool.hpp"
#include "hcq/backend/cpu_relax.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "host_kernel.hpp"

namespace hcq::cpu {
namespace {

// An idle worker spins this long before sleeping on the doorbell: a launch that follows within it is picked up
// without a futex wake (about 0.25 us instead of 1.4 us on a 2-core machine).
constexpr auto kIdleSpin = std::chrono::microseconds(50);
// WAIT and POLL_BIT spin this long, then poll with naps doubling up to kMaxNap. POLL_BIT's memory is written with a
// plain store by the host or another device, with no wake-up to sleep on: its naps start short (kFirstNap). A WAIT's
// signal, when a CPU device's worker writes it, ends the nap at once (CpuSignalWake, one for all CPU devices), so its
// naps start long (kFirstSignalNap): each nap that times out costs ~12 us of a core on a small VM, taken from
// whatever runs there (the pool's helper, in the middle of a step's matmul), while the copy queue waits out a step for
// its loss. A signal the host or a GPU writes is seen a nap late, at most kMaxNap.
constexpr auto kWaitSpin = std::chrono::microseconds(50);
constexpr auto kFirstNap = std::chrono::microseconds(5);
constexpr auto kFirstSignalNap = std::chrono::microseconds(200);
constexpr auto kMaxNap = std::chrono::microseconds(500);

template <class T>
T load_acquire(uint64_t addr) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(addr)).load(std::memory_order_acquire);
}
template <class T>
void store(uint64_t addr, T value, std::memory_order order) {
  std::atomic_ref<T>(*reinterpret_cast<T*>(addr)).store(value, order);
}

std::string range_text(uint64_t addr, uint64_t size) { return cat(hex(addr), " (+", size, " bytes)"); }

}  // namespace

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

CpuWorker::CpuWorker(Device& device, std::string queue, CpuRing& ring, const CpuMappings& mappings,
                     const CpuSignalWake& wake, CpuThreadPool* pool)
    : device_(device), queue_(std::move(queue)), ring_(ring), mappings_(mappings), wake_(wake), pool_(pool) {
  thread_ = std::thread([this] { run(); });
  // Thread names show up in debuggers and top; the kernel keeps 15 characters.
  const std::string name = (device_.name() + "/" + queue_).substr(0, 15);
  pthread_setname_np(thread_.native_handle(), name.c_str());
}

CpuWorker::~CpuWorker() {
  stop_.store(true, std::memory_order_seq_cst);
  ring_.ring_doorbell();
  thread_.join();
}

std::string CpuWorker::describe() const {
  std::string s = cat(queue_, " queue: read pointer ", ring_.read_pointer(), ", write pointer ", ring_.write_pointer(),
                      " (ring of ", ring_.capacity(), " dwords)");
  if (faulted()) {
    std::lock_guard lock(fault_mu_);
    s += ", FAULTED: " + fault_message_;
  }
  return s;
}

void CpuWorker::fault(const Where& at, uint32_t header, const std::string& what) {
  std::string where = cat("ring dword ", at.ring_pos, " (slot ", at.ring_pos & (ring_.capacity() - 1), ")");
  if (at.indirect_va != 0)
    where = cat("dword ", at.indirect_pos, " of the INDIRECT buffer at ", hex(at.indirect_va), ", called from ", where);
  const std::string msg = cat(device_.name(), " ", queue_, " queue faulted at ", where, ", opcode ",
                              opcode_name(header_opcode(header)), " (header ", hex(header), "): ", what);
  {
    std::lock_guard lock(fault_mu_);
    fault_message_ = msg;
  }
  faulted_.store(true, std::memory_order_release);
  device_.record_error(std::make_exception_ptr(DeviceFault(msg)));
}

void CpuWorker::run() {
  uint64_t r = ring_.read_pointer();
  bool busy = false;  // whether the last look found commands: the pool's helpers linger less once it finds none
  while (!stop_.load(std::memory_order_relaxed)) {
    const uint64_t w = ring_.write_pointer();
    if (r == w) {
      if (busy && pool_) pool_->queue_idle();
      busy = false;
      ring_.wait_for_work(r, stop_, kIdleSpin);
      continue;
    }
    busy = true;
    if (faulted()) {  // a faulted queue runs nothing more; drop what arrives so producers never block
      r = w;
      ring_.set_read_pointer(r);
      continue;
    }
    while (r != w) {
      const uint32_t* cmd = ring_.slot(r);
      const uint32_t header = cmd[0];
      const uint64_t to_end = ring_.room_to_end(r);
      if (auto why = check_header(header, std::min<uint64_t>(w - r, to_end))) {
        fault({r}, header, *why);
        break;
      }
      if (header_opcode(header) == static_cast<uint32_t>(Opcode::skip)) {
        if (to_end > w - r) {
          fault({r}, header, "SKIP past the write pointer");
          break;
        }
        r += to_end;
        ring_.set_read_pointer(r);
        continue;
      }
      if (!execute(cmd, {r})) break;
      r += header_length(header);
      // Released after the command ran: until then its words stay readable, and a hang shows the stuck command
      // at the read pointer.
      ring_.set_read_pointer(r);
    }
  }
}

template <class T, class Done, class Nap>
bool CpuWorker::poll(uint64_t addr, const Where& at, uint32_t header, Done done, Nap nap_for,
                     std::chrono::microseconds first_nap) {
  const auto check_and_test = [&](bool& ok) {
    auto view = mappings_.read();  // held only per look: the host may allocate while the queue waits on it
    if (!view.contains(addr, sizeof(T))) {
      ok = false;
      return true;
    }
    return done(load_acquire<T>(addr));
  };
  bool ok = true;
  const auto spin_until = std::chrono::steady_clock::now() + kWaitSpin;
  unsigned polls = 0;
  for (;;) {
    if (check_and_test(ok)) break;
    if (stop_.load(std::memory_order_relaxed)) return false;
    cpu_relax();
    if ((++polls & 63) == 0 && std::chrono::steady_clock::now() >= spin_until) break;
  }
  auto nap = first_nap;
  while (ok && !check_and_test(ok)) {
    if (stop_.load(std::memory_order_relaxed)) return false;
    nap_for(nap);
    nap = std::min(nap * 2, kMaxNap);
  }
  if (!ok) fault(at, header, cat("address ", range_text(addr, sizeof(T)), " is not mapped on this device"));
  return ok;
}

bool CpuWorker::execute(const uint32_t* cmd, const Where& at) {
  const uint32_t header = cmd[0];
  const auto op = static_cast<Opcode>(header_opcode(header));
  const CommandInfo& info = command_info(op);
  // A private copy of the payload: what is checked is what is used, even if the words change meanwhile.
  uint32_t p[kMaxPayload] = {};
  if (info.payload != kVariableLength) std::memcpy(p, cmd + 1, info.payload * sizeof(uint32_t));

  const auto unmapped = [&](const char* what, uint64_t addr, uint64_t size) {
    fault(at, header, cat(what, " ", range_text(addr, size), " is not mapped on this device"));
    return false;
  };
  const auto misaligned = [&](uint64_t addr, uint64_t align) {
    fault(at, header, cat("address ", hex(addr), " is not ", align, "-byte aligned"));
    return false;
  };

  switch (op) {
    case Opcode::nop:
    case Opcode::skip:  // handled by the ring walk; inside an INDIRECT buffer it is refused before we get here
      return true;
    case Opcode::barrier: std::atomic_thread_fence(std::memory_order_seq_cst); return true;
    case Opcode::wait: {
      const uint64_t addr = join64(p[0], p[1]), value = join64(p[2], p[3]);
      if (addr % 8) return misaligned(addr, 8);
      return poll<uint64_t>(
          addr, at, header, [value](uint64_t v) { return v >= value; },
          [&](std::chrono::microseconds nap) { wake_.sleep(reinterpret_cast<uint64_t*>(addr), value, nap); },
          kFirstSignalNap);
    }
    case Opcode::poll_bit: {
      const uint64_t addr = join64(p[0], p[1]);
      const uint32_t mask = p[2], want = p[3] ? p[2] : 0;
      if (addr % 4) return misaligned(addr, 4);
      return poll<uint32_t>(
          addr, at, header, [mask, want](uint32_t v) { return (v & mask) == want; },
          [](std::chrono::microseconds nap) { std::this_thread::sleep_for(nap); }, kFirstNap);
    }
    case Opcode::signal:
    case Opcode::timestamp: {
      const uint64_t addr = join64(p[0], p[1]);
      if (addr % 8) return misaligned(addr, 8);
      auto view = mappings_.read();
      if (op == Opcode::timestamp) {
        if (!view.contains(addr + 8, 8)) return unmapped("timestamp", addr + 8, 8);
        store<uint64_t>(addr + 8, monotonic_ns(), std::memory_order_relaxed);
        return true;
      }
      if (!view.contains(addr, 16)) return unmapped("signal", addr, 16);
      // Every earlier command has finished (they run in order on this thread, EXEC joins its helpers): write the
      // clock, then publish the value with release so a reader that sees it also sees the clock and all results.
      store<uint64_t>(addr + 8, monotonic_ns(), std::memory_order_relaxed);
      store<uint64_t>(addr, join64(p[2], p[3]), std::memory_order_release);
      wake_.wake(reinterpret_cast<uint64_t*>(addr));
      return true;
    }
    case Opcode::write32:
    case Opcode::write64: {
      const uint64_t addr = join64(p[0], p[1]);
      const uint64_t size = op == Opcode::write32 ? 4 : 8;
      if (addr % size) return misaligned(addr, size);
      auto view = mappings_.read();
      if (!view.contains(addr, size)) return unmapped("write to", addr, size);
      if (op == Opcode::write32) store<uint32_t>(addr, p[2], std::memory_order_release);
      else store<uint64_t>(addr, join64(p[2], p[3]), std::memory_order_release);
      return true;
    }
    case Opcode::copy: {
      const uint64_t dst = join64(p[0], p[1]), src = join64(p[2], p[3]), size = join64(p[4], p[5]);
      auto view = mappings_.read();  // held for the copy: the buffers cannot be freed under it
      if (!view.contains(src, size)) return unmapped("copy source", src, size);
      if (!view.contains(dst, size)) return unmapped("copy destination", dst, size);
      if (size) std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), size);
      return true;
    }
    case Opcode::exec: return exec_kernel(p, at, header);
    case Opcode::indirect: {
      if (at.indirect_va != 0) {
        fault(at, header, "INDIRECT inside an INDIRECT buffer");
        return false;
      }
      return run_indirect(join64(p[0], p[1]), p[2], at);
    }
  }
  fault(at, header, "unknown opcode");
  return false;
}

bool CpuWorker::run_indirect(uint64_t va, uint32_t ndwords, const Where& at) {
  const uint32_t header = make_header(Opcode::indirect, command_length(Opcode::indirect));
  if (va % 4) {
    fault(at, header, cat("buffer address ", hex(va), " is not 4-byte aligned"));
    return false;
  }
  if (!mappings_.read().contains(va, uint64_t{ndwords} * 4)) {
    fault(at, header, cat("buffer ", range_text(va, uint64_t{ndwords} * 4), " is not mapped on this device"));
    return false;
  }
  // The buffer is a bound queue's side memory: the device keeps it until the timeline passes this submission.
  const auto* words = reinterpret_cast<const uint32_t*>(va);
  for (uint32_t i = 0; i < ndwords;) {
    const Where inner{at.ring_pos, va, i};
    const uint32_t h = words[i];
    if (auto why = check_header(h, ndwords - i)) {
      fault(inner, h, *why);
      return false;
    }
    if (header_opcode(h) == static_cast<uint32_t>(Opcode::skip)) {
      fault(inner, h, "SKIP inside an INDIRECT buffer");
      return false;
    }
    if (!execute(words + i, inner)) return false;
    i += header_length(h);
  }
  return true;
}

bool CpuWorker::exec_kernel(const uint32_t* p, const Where& at, uint32_t header) {
  const uint64_t handle = join64(p[0], p[1]), kernargs = join64(p[2], p[3]);
  const uint64_t global64[3] = {join64(p[4], p[5]), join64(p[6], p[7]), join64(p[8], p[9])};
  const uint64_t local64[3] = {join64(p[10], p[11]), join64(p[12], p[13]), join64(p[14], p[15])};

  const LaunchLimits& lim = kCpuLaunchLimits;
  uint64_t threads = 1;
  uint32_t global[3], local[3];
  for (int d = 0; d < 3; ++d) {
    if (global64[d] == 0 || global64[d] > lim.max_global[d] || local64[d] == 0 || local64[d] > lim.max_local[d]) {
      fault(at, header,
            cat("launch dims global {", global64[0], ",", global64[1], ",", global64[2], "} local {", local64[0], ",",
                local64[1], ",", local64[2], "} outside the device limits"));
      return false;
    }
    global[d] = static_cast<uint32_t>(global64[d]);
    local[d] = static_cast<uint32_t>(local64[d]);
    threads *= local[d];
  }
  if (threads > lim.max_threads_per_group) {
    fault(at, header, cat("workgroup of ", threads, " threads exceeds ", lim.max_threads_per_group));
    return false;
  }

  // Held for the whole launch: neither the program nor the buffers can go away under the kernel.
  auto view = mappings_.read();
  const KernelEntry* kernel = view.program(handle);
  if (!kernel) {
    fault(at, header, cat("program handle ", hex(handle), " is not loaded on this device"));
    return false;
  }
  const uint64_t kernarg_bytes = uint64_t{kernel->nbufs} * 8 + uint64_t{kernel->nvals} * 4;
  if (kernarg_bytes && kernargs % 8) {
    fault(at, header, cat("kernarg address ", hex(kernargs), " is not 8-byte aligned"));
    return false;
  }
  if (!view.contains(kernargs, kernarg_bytes)) {
    fault(at, header, cat("kernargs ", range_text(kernargs, kernarg_bytes), " are not mapped on this device"));
    return false;
  }
  // The kernel itself is not checked access by access (it is native code), but every buffer it is given must at
  // least start in mapped memory: a freed or bogus buffer faults the queue instead of crashing the process.
  const auto* bufs = reinterpret_cast<const uint64_t*>(kernargs);
  for (uint32_t i = 0; i < kernel->nbufs; ++i) {
    if (!view.contains(bufs[i], 1)) {
      fault(at, header, cat("kernel buffer argument ", i, " at ", hex(bufs[i]), " is not mapped on this device"));
      return false;
    }
  }

  hcq_dispatch base{};
  base.kernargs = reinterpret_cast<const unsigned char*>(kernargs);
  base.vals = reinterpret_cast<const uint32_t*>(kernargs + uint64_t{kernel->nbufs} * 8);
  for (int d = 0; d < 3; ++d) {
    base.num_groups[d] = global[d];
    base.local_size[d] = local[d];
  }
  uint64_t seed = 0;
  try {
    seed = knobs::sim_thread_seed();
  } catch (const Error& e) {
    fault(at, header, e.what());
    return false;
  }
  GridJob job(kernel->fn, base, seed);
  const uint64_t groups = uint64_t{global[0]} * global[1] * global[2];
  if (groups == 1 || !pool_) {
    GridJob::run_workgroups(&job, 0, groups);  // the common small launch runs inline: no hand-off to other threads
  } else {
    pool_->parallel_for(groups, GridJob::run_workgroups, &job);
  }
  if (std::string why = job.error(); !why.empty()) {
    fault(at, header, "kernel: " + why);
    return false;
  }
  return true;
}

}  // namespace hcq::cpu
