// The CUDA adapter's device over a fake libcuda whose GPU is the host (tests/fake_libcuda/host_gpu.c: memory,
// streams and stream memory operations as the driver API documents them, no kernels): memory at the unified VA,
// copies, signal waits and writes, timestamps, and the refusals of the stream executor. Kernels need a GPU
// (hw-tests/nv).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>
#include <vector>

#include "cuda/cuda_api.hpp"
#include "cuda/cuda_device.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/graph.hpp"
#include "hcq/hw_queue.hpp"
#include "nv_cubin/nv_kernels.hpp"

namespace hcq::cuda {
namespace {

using ::testing::HasSubstr;

std::string host_gpu_library() {
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  return dir.substr(0, dir.rfind('/')) + "/fake_libcuda/libfake_cuda_host_gpu.so";
}

// The fake's stream threads write these words atomically; the test reads them the same way.
uint32_t load32(const Allocation& a, size_t index = 0) {
  return std::atomic_ref<uint32_t>(static_cast<uint32_t*>(a.host_ptr())[index]).load(std::memory_order_acquire);
}

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

class CudaDeviceOnHostGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string lib = host_gpu_library();
    if (access(lib.c_str(), R_OK) != 0) FAIL() << lib << " is missing (meson test builds it for hcq-tests)";
    api_ = load_cuda_api(LoadOptions{{lib}});
    dev_ = open_cuda_device("CUDA:0", 0, api_);
  }
  void TearDown() override { dev_.reset(); }

  Allocation host(uint64_t size) {
    BufferSpec s;
    s.cpu_access = true;
    return dev_->alloc_memory(size, s);
  }

  std::shared_ptr<const CudaApi> api_;
  std::unique_ptr<Device> dev_;
};

TEST_F(CudaDeviceOnHostGpu, InfoIsWhatTheDriverReports) {
  const DeviceInfo i = dev_->info();
  EXPECT_EQ(i.name, "CUDA:0");
  EXPECT_EQ(i.interface, "cuda");
  EXPECT_EQ(i.arch, "sm_90");  // compute capability 9.0 in the fake's attribute table
  EXPECT_EQ(i.memory_bytes, uint64_t{1} << 30);
  EXPECT_EQ(i.compute_units, 2u);
  EXPECT_EQ(i.wave_size, 32u);
  EXPECT_EQ(i.shared_memory_bytes, 49152u);
  EXPECT_EQ(i.launch_limits.max_threads_per_group, 1024u);
  EXPECT_EQ(i.launch_limits.max_local[2], 64u);
  EXPECT_EQ(i.launch_limits.max_global[0], 2147483647u);
  EXPECT_EQ(i.launch_limits.max_global[1], 65535u);
  EXPECT_TRUE(i.copies_on_compute);
  ASSERT_TRUE(i.uuid.has_value());
  for (size_t b = 0; b < 16; ++b) EXPECT_EQ((*i.uuid)[b], 0xc0 + b);
  EXPECT_EQ(i.driver_version,
            "CUDA driver 12.8 (" + api_->path +
                "); hcq fake CUDA device (host memory, no kernels), 2 SMs; timestamps: host CLOCK_MONOTONIC (the "
                "timestamp kernel's PTX: cuModuleLoadData failed: CUDA_ERROR_JIT_COMPILER_NOT_FOUND (221): PTX JIT "
                "compiler library not found)");
}

TEST_F(CudaDeviceOnHostGpu, DeviceMemoryIsMappedAtTheUnifiedVa) {
  const uint64_t before = dev_->bytes_in_use();
  const Allocation a = dev_->alloc_memory(3u << 20, BufferSpec{});
  EXPECT_TRUE(process().va.contains(a.va));
  EXPECT_EQ(a.va % (2u << 20), 0u);  // the fake's 2 MiB granularity
  EXPECT_FALSE(a.host_mapped);
  EXPECT_EQ(dev_->bytes_in_use() - before, 4u << 20);  // 3 MiB rounded up to the granularity
  dev_->free_memory(a);
  EXPECT_EQ(dev_->bytes_in_use(), before);
  // The range went back to the VA space and can be mapped again.
  const Allocation b = dev_->alloc_memory(2u << 20, BufferSpec{});
  EXPECT_TRUE(process().va.contains(b.va));
  dev_->free_memory(b);
}

TEST_F(CudaDeviceOnHostGpu, CopiesGoThroughDeviceMemoryAndBack) {
  constexpr uint64_t n = 100000;
  const Allocation src = host(n), dst = host(n);
  const Allocation vram = dev_->alloc_memory(n, BufferSpec{});
  auto* s = static_cast<uint8_t*>(src.host_ptr());
  for (uint64_t i = 0; i < n; ++i) s[i] = static_cast<uint8_t>(i * 7 + 3);
  std::memset(dst.host_ptr(), 0, n);
  auto q = dev_->copy_queue();
  dev_->submit(*q, [&](HWQueue& q) {
    q.copy(vram.va, src.va, n);
    q.copy(dst.va, vram.va, n);
  });
  dev_->synchronize();
  const auto* d = static_cast<const uint8_t*>(dst.host_ptr());
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(d[i], static_cast<uint8_t>(i * 7 + 3)) << i;
  q.reset();
  dev_->free_memory(vram);
  dev_->free_memory(src);
  dev_->free_memory(dst);
}

TEST_F(CudaDeviceOnHostGpu, AQueueWaitsForASignalTheHostSets) {
  const Allocation out = host(4096);
  OwnedSignal gate(0, "gate");
  auto q = dev_->compute_queue();
  const Completion c = dev_->submit(*q, [&](HWQueue& q) {
    q.wait(gate, 5);
    q.write(out.va, 0xabcu, Width::b32);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(load32(out), 0u);  // the stream is held at the wait
  EXPECT_FALSE(c.done());
  gate->set_value(4);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(load32(out), 0u);  // 4 < 5
  const uint64_t t0 = monotonic_ns();
  gate->set_value(5);
  dev_->synchronize();
  EXPECT_EQ(load32(out), 0xabcu);
  // The timeline's signal was written after the wait passed, with the host clock (no timestamp kernel here).
  EXPECT_GE(dev_->timeline_signal().timestamp(), t0);
  EXPECT_LE(dev_->timeline_signal().timestamp(), monotonic_ns());
  q.reset();
  dev_->free_memory(out);
}

TEST_F(CudaDeviceOnHostGpu, SignalsWriteTheirValueAndTimestamp) {
  OwnedSignal s(0, "s");
  const Allocation out = host(4096);
  const uint64_t t0 = monotonic_ns();
  auto q = dev_->compute_queue();
  dev_->submit(*q, [&](HWQueue& q) {
    q.signal(s, 42);
    q.write(out.va, 0x1122334455667788u, Width::b64);
    q.timestamp(s);
  });
  dev_->synchronize();
  const uint64_t t1 = monotonic_ns();
  EXPECT_EQ(s->value(), 42u);
  EXPECT_GE(s->timestamp(), t0);
  EXPECT_LE(s->timestamp(), t1);
  EXPECT_EQ(std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(out.host_ptr())).load(), 0x1122334455667788u);
  q.reset();
  dev_->free_memory(out);
}

TEST_F(CudaDeviceOnHostGpu, ABoundQueueIsPatchedAndResubmitted) {
  const Allocation out = host(4096);
  auto q = dev_->compute_queue();
  const Var addr{0}, value{1};
  q->write(Sym(addr), Sym(value), Width::b32).bind();
  for (uint32_t v : {7u, 9u, 1234u}) {
    q->submit(std::vector<uint64_t>{out.va + 8, v});
    dev_->synchronize();  // not on the timeline: wait for the stream through a timeline submission behind it
    auto fence = dev_->compute_queue();
    dev_->submit(*fence, [](HWQueue&) {});
    dev_->synchronize();
    EXPECT_EQ(load32(out, 2), v);
  }
  q.reset();
  dev_->free_memory(out);
}

// Graph replay on CUDA is the patchable-queue path (docs/cuda.md): built once into bound queues, each replay patches
// the new addresses into the words the stream executor issues.
TEST_F(CudaDeviceOnHostGpu, GraphReplayPatchesNewAddressesEachTime) {
  constexpr uint64_t n = 4096;
  const Allocation a = host(n), b = host(n), out = host(n);
  const Allocation vram = dev_->alloc_memory(n, BufferSpec{});
  std::memset(a.host_ptr(), 0x11, n);
  std::memset(b.host_ptr(), 0x22, n);
  const Var input{0};
  std::vector<GraphCall> calls{CopyCall{dev_.get(), Sym(vram.va), Sym(input), n},
                               CopyCall{dev_.get(), Sym(out.va), Sym(vram.va), n}};
  {
    Graph graph(calls);
    for (const auto& [src, byte] : {std::pair{a.va, 0x11}, std::pair{b.va, 0x22}, std::pair{a.va, 0x11}}) {
      graph.replay(std::vector<uint64_t>{src});
      graph.wait();
      const auto* o = static_cast<const uint8_t*>(out.host_ptr());
      for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(o[i], byte) << i;
    }
  }
  dev_->synchronize();
  for (const Allocation& x : {a, b, out, vram}) dev_->free_memory(x);
}

TEST_F(CudaDeviceOnHostGpu, PollBitWaitsForEveryBitOfTheMask) {
  const Allocation flags = host(4096), out = host(4096);
  std::atomic_ref<uint32_t> f(*static_cast<uint32_t*>(flags.host_ptr()));
  f.store(0x1);
  auto q = dev_->compute_queue();
  EXPECT_THROW(q->poll_bit(flags.va, 0, true), InvalidArgument);
  dev_->submit(*q, [&](HWQueue& q) {
    q.poll_bit(flags.va, 0x14, true);  // until bits 2 and 4 are set
    q.poll_bit(flags.va, 0x3, false);  // and bits 0 and 1 clear
    q.write(out.va, 1, Width::b32);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(load32(out), 0u);
  f.store(0x5);  // bit 2 set, bit 4 not yet
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(load32(out), 0u);
  f.store(0x17);  // bits 2 and 4 set, bits 0 and 1 set
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(load32(out), 0u);
  f.store(0x16);  // bit 0 clear, bit 1 still set
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(load32(out), 0u);
  f.store(0x14);
  dev_->synchronize();
  EXPECT_EQ(load32(out), 1u);
  q.reset();
  dev_->free_memory(flags);
  dev_->free_memory(out);
}

TEST_F(CudaDeviceOnHostGpu, MemoryTheDeviceHasNotMappedIsRefusedBeforeTheDriverSeesIt) {
  const Allocation src = host(4096);
  auto q = dev_->copy_queue();
  try {
    dev_->submit(*q, [&](HWQueue& q) { q.copy(0x1000, src.va, 16); });
    FAIL() << "a copy to 0x1000 was submitted";
  } catch (const DeviceFault& e) {
    EXPECT_THAT(e.what(), HasSubstr("COPY of 16 bytes at 0x1000: memory this device has not mapped"));
  }
  EXPECT_THROW(dev_->synchronize(), DeviceFault);  // sticky
  q.reset();
  dev_->free_memory(src);
}

TEST_F(CudaDeviceOnHostGpu, RawWordsThatAreNotCommandsAreAStickyFault) {
  auto q = dev_->compute_queue();
  const uint32_t junk[] = {0xdeadbeef};
  try {
    dev_->submit(*q, [&](HWQueue& q) { q.raw(junk); });
    FAIL();
  } catch (const DeviceFault& e) {
    EXPECT_THAT(e.what(), HasSubstr("CUDA:0 compute stream: bad command at word"));
  }
  EXPECT_THROW(dev_->synchronize(), DeviceFault);
}

// The fake models a GPU MMU fault: a stream write to memory unmapped before it ran is CUDA_ERROR_ILLEGAL_ADDRESS,
// sticky. The adapter must see it while waiting (cuStreamQuery) and keep it as the device's DeviceFault.
TEST_F(CudaDeviceOnHostGpu, AnIllegalAddressIsTheDevicesStickyFault) {
  const Allocation out = host(4096);
  OwnedSignal gate(0, "gate");
  auto q = dev_->compute_queue();
  dev_->submit(*q, [&](HWQueue& q) {
    q.wait(gate, 1);
    q.write(out.va, 1, Width::b32);
  });
  dev_->free_memory(out);  // gone while the stream still waits: the write will fault
  gate->set_value(1);
  const std::string expected =
      "CUDA:0: cuStreamQuery (the compute stream) failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access "
      "was encountered";
  try {
    dev_->synchronize();
    FAIL() << "the fault was not seen";
  } catch (const DeviceFault& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith(expected));
  }
  EXPECT_TRUE(dev_->has_error());
  try {
    dev_->synchronize();  // sticky: the same fault again
    FAIL();
  } catch (const DeviceFault& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith(expected));
  }
  // A later call returns the sticky code, and the device reports the first fault for it.
  auto q2 = dev_->compute_queue();
  try {
    dev_->submit(*q2, [&](HWQueue& q) { q.signal(gate, 2); });
    FAIL();
  } catch (const DeviceFault& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith(expected));
  }
}

TEST_F(CudaDeviceOnHostGpu, ProgramsNeedACubinAndADriverThatLoadsIt) {
  const std::vector<uint8_t> not_a_cubin(64, 0);
  EXPECT_THROW(dev_->load_program("k", not_a_cubin), CompileError);
}

// Programs are the NV compiler's cubins for the device's sm_XY; what hcq checks before CUDA sees them, and the
// driver's refusal as a CompileError (the fake has no kernel images it can run).
TEST_F(CudaDeviceOnHostGpu, ProgramsAreTheNvCompilersCubins) {
  EXPECT_EQ(dev_->compiler().target(), "sm_90");
  REQUIRE_NVRTC();
  const std::vector<uint8_t>& sm90 = nv::test::cubin_for("sm_90", nv::test::kAxpbSource);
  try {
    dev_->load_program("nope", sm90);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "CUDA:0: kernel 'nope' is not in the cubin (it defines: axpb)");
  }
  try {
    dev_->load_program("axpb", nv::test::cubin_for("sm_80", nv::test::kAxpbSource));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "CUDA:0: kernel 'axpb': the cubin is for sm_80, this GPU is sm_90");
  }
  try {
    dev_->load_program("axpb", sm90);
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(),
                 "CUDA:0: cuModuleLoadData (kernel 'axpb') failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209): no kernel "
                 "image is available for execution on the device");
  }
}

}  // namespace
}  // namespace hcq::cuda
