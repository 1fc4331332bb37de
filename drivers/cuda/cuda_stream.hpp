// CudaStream: one CUDA stream of a CudaDevice and the executor that turns a queue's words (cuda_commands.hpp) into
// the driver calls they name, in order, on that stream. A submission's calls go to the stream together (the stream
// lock is held across them), as a hardware ring takes one submission's commands together: another thread's
// submission cannot land between a queue's wait and the work behind it.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>

#include "cuda/cuda_api.hpp"

namespace hcq::cuda {

class CudaDevice;

class CudaStream {
 public:
  // `what`: "compute" or "copy", for messages.
  CudaStream(CudaDevice& dev, std::string what);
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  // Issues every command of `words`, then cuStreamWriteValue64(completion_addr, seq) when
  // completion_addr is not 0. Words that are not a valid
  // command stream (raw() can hand in anything) are a DeviceFault, recorded on the device, before anything of them
  // is issued; a failing call throws its typed error (a sticky one also becomes the device's fault).
  void run(std::span<const uint32_t> words, uint64_t completion_addr, uint64_t seq);

  // cuStreamQuery: kSuccess (idle), kNotReady (busy) or the stream's error.
  CUresult query() const;
  const std::string& what() const { return what_; }
  // "idle", "busy" or the error, for describe_state.
  std::string state() const;

 private:
  // Throws DeviceFault naming the command at `index` when the words do not decode; returns nothing otherwise.
  void validate(std::span<const uint32_t> words) const;
  CudaDevice& dev_;
  std::string what_;
  CUstream stream_ = nullptr;
  std::mutex mu_;
};

}  // namespace hcq::cuda
