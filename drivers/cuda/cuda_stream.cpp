#include "cuda/cuda_stream.hpp"

#include <time.h>

#include <atomic>
#include <bit>
#include <optional>

#include "cuda/cuda_commands.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/cuda_errors.hpp"
#include "hcq/error.hpp"

namespace hcq::cuda {
namespace {

// The timestamp without the timestamp kernel: a host function in stream order (CUDA runs it once everything before
// it finished, and starts nothing after it until it returned) stores CLOCK_MONOTONIC nanoseconds at the signal's +8.
void write_host_clock(void* signal) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  std::atomic_ref<uint64_t>(static_cast<uint64_t*>(signal)[1]).store(ns, std::memory_order_release);
}

}  // namespace

CudaStream::CudaStream(CudaDevice& dev, std::string what) : dev_(dev), what_(std::move(what)) {
  dev_.bind_context();
  // Non-blocking: no implicit ordering with the legacy default stream, which hcq never uses.
  dev_.check(dev_.api().stream_create(&stream_, kStreamNonBlocking), "cuStreamCreate");
}

CudaStream::~CudaStream() {
  // The device synchronized before its streams go; a faulted stream is destroyed all the same.
  dev_.bind_context();
  dev_.api().stream_destroy(stream_);
}

CUresult CudaStream::query() const {
  dev_.bind_context();
  return dev_.api().stream_query(stream_);
}

std::string CudaStream::state() const {
  const CUresult rc = query();
  if (rc == kSuccess) return "idle";
  if (rc == kNotReady) return "busy";
  const CuResultInfo* info = cu_result_info(rc);
  return cat(info ? info->name : "unknown CUresult", " (", rc, ")");
}

void CudaStream::validate(std::span<const uint32_t> words) const {
  const auto fault = [&](size_t at, const std::string& why) {
    auto e = std::make_exception_ptr(DeviceFault(
        cat(dev_.name(), " ", what_, " stream: bad command at word ", at, " of ", words.size(), ": ", why)));
    dev_.record_error(e);
    std::rethrow_exception(e);
  };
  for (size_t i = 0; i < words.size();) {
    const uint32_t h = words[i];
    const CommandInfo* info = command_info(header_opcode(h));
    if (!info) fault(i, cat("unknown opcode ", header_opcode(h)));
    if (header_reserved(h) != 0) fault(i, "reserved header bits set");
    const uint32_t len = header_length(h);
    if (info->op == Opcode::exec ? len < 1u + info->payload : len != 1u + info->payload)
      fault(i, cat(info->name, " of ", len, " dwords"));
    if (len > words.size() - i) fault(i, cat(info->name, " runs past the end of the words"));
    const uint32_t* p = &words[i + 1];
    const auto addr_ok = [&](uint64_t addr, uint64_t bytes) {
      if (!dev_.knows_range(addr, bytes))
        fault(i, cat(info->name, " of ", bytes, " bytes at ", hex(addr), ": memory this device has not mapped"));
    };
    switch (info->op) {
      case Opcode::wait:
      case Opcode::write64: addr_ok(join64(p[0], p[1]), 8); break;
      case Opcode::signal: addr_ok(join64(p[0], p[1]), 16); break;
      case Opcode::timestamp: addr_ok(join64(p[0], p[1]) + 8, 8); break;
      case Opcode::write32: addr_ok(join64(p[0], p[1]), 4); break;
      case Opcode::wait_bit:
        addr_ok(join64(p[0], p[1]), 4);
        if (std::popcount(p[2]) != 1) fault(i, cat("WAIT_BIT mask ", hex(p[2]), " is not one bit"));
        break;
      case Opcode::copy: {
        const uint64_t size = join64(p[4], p[5]);
        addr_ok(join64(p[0], p[1]), size);
        addr_ok(join64(p[2], p[3]), size);
        break;
      }
      case Opcode::exec: {
        const std::optional<CudaKernelRef> k = dev_.kernel(join64(p[0], p[1]));
        if (!k) fault(i, cat("EXEC of program ", join64(p[0], p[1]), ", which is not loaded on this device"));
        if ((len - 1u - info->payload) * 4u < k->param_bytes)
          fault(i, cat("EXEC with ", (len - 1u - info->payload) * 4u, " parameter bytes; the kernel takes ",
                       k->param_bytes));
        break;
      }
      case Opcode::barrier: break;
    }
    i += len;
  }
}

void CudaStream::run(std::span<const uint32_t> words, uint64_t completion_addr, uint64_t seq) {
  const CudaApi& cu = dev_.api();
  std::lock_guard lock(mu_);
  dev_.bind_context();
  validate(words);
  for (size_t i = 0; i < words.size();) {
    const uint32_t h = words[i];
    const uint32_t len = header_length(h);
    const uint32_t* p = &words[i + 1];
    const uint64_t a = join64(p[0], p[1]);
    switch (static_cast<Opcode>(header_opcode(h))) {
      case Opcode::wait:
        dev_.check(cu.stream_wait_value64(stream_, a, join64(p[2], p[3]), kWaitValueGeq), "cuStreamWaitValue64");
        break;
      case Opcode::timestamp:
      case Opcode::signal: {
        // %globaltimer at +8, in stream order after everything before it; then the value, after a memory barrier
        // (CU_STREAM_WRITE_VALUE_DEFAULT), so a host that sees the value also sees the timestamp.
        uint64_t addr = a;
        void* params[] = {&addr};
        if (CUfunction ts = dev_.timestamp_kernel())
          dev_.check(cu.launch_kernel(ts, 1, 1, 1, 1, 1, 1, 0, stream_, params, nullptr), "cuLaunchKernel (timestamp)");
        else
          dev_.check(cu.launch_host_func(stream_, &write_host_clock, reinterpret_cast<void*>(a)),
                     "cuLaunchHostFunc (timestamp)");
        if (static_cast<Opcode>(header_opcode(h)) == Opcode::signal)
          dev_.check(cu.stream_write_value64(stream_, a, join64(p[2], p[3]), kWriteValueDefault),
                     "cuStreamWriteValue64");
        break;
      }
      case Opcode::exec: {
        const CudaKernelRef k = *dev_.kernel(a);  // validated above
        // The kernel's one parameter is the hcq argument block, which the words hold in place; CUDA copies
        // param_bytes from it when the launch is enqueued.
        void* params[] = {const_cast<uint32_t*>(p + 8)};
        dev_.check(cu.launch_kernel(k.function, p[2], p[3], p[4], p[5], p[6], p[7], 0, stream_, params, nullptr),
                   "cuLaunchKernel");
        break;
      }
      case Opcode::copy:
        dev_.check(cu.memcpy_async(a, join64(p[2], p[3]), join64(p[4], p[5]), stream_), "cuMemcpyAsync");
        break;
      case Opcode::barrier: break;
      case Opcode::write32:
        dev_.check(cu.stream_write_value32(stream_, a, p[2], kWriteValueDefault), "cuStreamWriteValue32");
        break;
      case Opcode::write64:
        dev_.check(cu.stream_write_value64(stream_, a, join64(p[2], p[3]), kWriteValueDefault), "cuStreamWriteValue64");
        break;
      case Opcode::wait_bit:
        // AND: until (*addr & bit) != 0. NOR with ~bit: until ~(*addr | ~bit) != 0, i.e. until the bit is clear.
        dev_.check(p[3] ? cu.stream_wait_value32(stream_, a, p[2], kWaitValueAnd)
                        : cu.stream_wait_value32(stream_, a, ~p[2], kWaitValueNor),
                   "cuStreamWaitValue32");
        break;
    }
    i += len;
  }
  // Only a queue that must know when a submission finished reading its memory (bound, or with side memory) has a
  // completion signal; HWQueue passes 0 otherwise.
  if (completion_addr != 0)
    dev_.check(cu.stream_write_value64(stream_, completion_addr, seq, kWriteValueDefault),
               "cuStreamWriteValue64 (queue completion)");
}

}  // namespace hcq::cuda
