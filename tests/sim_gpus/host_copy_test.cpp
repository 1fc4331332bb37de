// Copies between the CPU device and GPU memory the host does not map (VRAM without cpu_access): the CPU device cannot
// reach it, so it refuses to map it (it used to map it and its worker died of SIGSEGV on the first byte), and the
// allocator lets the GPU's copy engine move the bytes, which reaches host memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"
#include "sim_gpus/sim_gpus.hpp"

namespace hcq {
namespace {

using test::SimGpu;

class SimHostCopy : public ::testing::TestWithParam<SimGpu> {};

std::vector<uint32_t> read_back(Buffer& b, size_t n) {
  std::vector<uint32_t> out(n);
  b.copyout(std::as_writable_bytes(std::span<uint32_t>(out)));
  return out;
}

TEST_P(SimHostCopy, CpuToUnmappedGpuMemoryAndBack) {
  std::unique_ptr<Device> gpu = test::open_machine(GetParam());
  Device& cpu = open_device("CPU:0");
  constexpr size_t kWords = 3000;
  std::vector<uint32_t> data(kWords);
  for (size_t i = 0; i < kWords; ++i) data[i] = static_cast<uint32_t>(i * 2654435761u);

  Buffer host(cpu, kWords * 4), vram(*gpu, kWords * 4), back(cpu, kWords * 4);
  host.copyin(std::as_bytes(std::span<const uint32_t>(data)));
  vram.copy_from(host);  // the CPU cannot write VRAM the host does not map: the GPU's copy engine pulls it
  back.copy_from(vram);  // and pushes it back into host memory
  EXPECT_EQ(read_back(back, kWords), data);
  EXPECT_EQ(read_back(vram, kWords), data);
  gpu->synchronize();
  cpu.synchronize();
}

TEST_P(SimHostCopy, TheCpuDeviceRefusesToMapMemoryTheHostCannotReach) {
  std::unique_ptr<Device> gpu = test::open_machine(GetParam());
  Device& cpu = open_device("CPU:0");
  const Allocation vram = gpu->alloc_memory(8192, BufferSpec{});
  ASSERT_FALSE(vram.host_mapped);
  try {
    cpu.map_memory(vram);
    ADD_FAILURE() << "mapped VRAM the host does not map";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), cat(cpu.name(), ": cannot map 8192 bytes at ", hex(vram.va), " of ", gpu->name(),
                                         ": the host does not map that memory, so the CPU cannot reach it (let that "
                                         "device's copy queue move it, or allocate it with cpu_access)"));
  }
  gpu->free_memory(vram);
}

INSTANTIATE_TEST_SUITE_P(Gpus, SimHostCopy, test::all_sim_gpus(), test::sim_gpu_test_name);

}  // namespace
}  // namespace hcq
