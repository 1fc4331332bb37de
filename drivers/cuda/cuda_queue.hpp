// CudaQueue: HWQueue over a CUDA stream. It builds words in the adapter's command format (cuda_commands.hpp), so
// the HWQueue machinery (symbolic operands, patches, bind, resubmit) works unchanged; submit hands the patched words
// to the device's stream of its kind (cuda_stream.hpp), which issues them as driver calls.
#pragma once

#include <memory>
#include <span>

#include "hcq/hw_queue.hpp"

namespace hcq::cuda {

class CudaDevice;
class CudaStream;

class CudaQueue final : public HWQueue {
 public:
  CudaQueue(CudaDevice& dev, QueueKind kind, CudaStream& stream);
  ~CudaQueue() override;

 protected:
  void encode_wait(Sym signal_addr, Sym value) override;
  void encode_signal(Sym signal_addr, Sym value) override;
  void encode_timestamp(Sym signal_addr) override;
  void encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) override;
  void encode_copy(Sym dst, Sym src, uint64_t size) override;
  void encode_memory_barrier() override;
  void encode_write(Sym addr, Sym value, Width width) override;
  void encode_poll_bit(Sym addr, uint32_t mask, bool set) override;
  // The bound copy is host memory the queue owns: the words are read by the host (the executor), never by the GPU.
  std::byte* bind_words(std::span<const uint32_t> words) override;
  void submit_words(uint64_t completion_addr, uint64_t seq) override;

 private:
  CudaDevice& cuda_;
  CudaStream& stream_;
  std::unique_ptr<uint32_t[]> bound_;
  size_t bound_size_ = 0;
};

}  // namespace hcq::cuda
