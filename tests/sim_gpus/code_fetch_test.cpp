// The simulated GPUs fetch a kernel's code from the GPU memory the backend uploaded it to, as the hardware does: code
// overwritten after the upload (here one flipped byte of the first instructions) is not the kernel that was loaded,
// and its dispatch is the device's DeviceFault naming the difference, where before the host twin ran regardless.
// Issue 14, second item.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "amd/kfd/amd_program.hpp"
#include "common/timeline.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "nv/rm/nv_program.hpp"
#include "sim_gpus/sim_gpus.hpp"

namespace hcq {
namespace {

using test::SimGpu;

class SimCodeFetch : public ::testing::TestWithParam<SimGpu> {};

// Runs poke(buf, 0, 7) and synchronizes: the DeviceFault's message, or "" when the kernel ran.
std::string run(Device& dev, Program& prog, const Allocation& buf) {
  auto q = dev.compute_queue();
  q->exec(prog, LaunchArgs{{Sym(buf.va)}, {Sym(uint64_t{0}), Sym(uint64_t{7})}}, Dims{1u, 1u, 1u}, Dims{32u, 1u, 1u});
  q->signal(dev.timeline_signal(), test::take_timeline_value(dev));
  q->submit();
  try {
    dev.synchronize();
  } catch (const DeviceFault& e) {
    return e.what();
  }
  return {};
}

TEST_P(SimCodeFetch, ACorruptedUploadFaults) {
  std::unique_ptr<Device> dev = test::open_machine(GetParam());
  if (dev->compiler().identity().find("unavailable") != std::string::npos)
    GTEST_SKIP() << "no compiler here: " << dev->compiler().identity();
  auto prog = dev->load_program("poke_u32", dev->compiler().compile(test::kPokeSource));
  const Allocation buf = dev->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
  ASSERT_EQ(run(*dev, *prog, buf), "");
  ASSERT_EQ(*static_cast<const uint32_t*>(buf.host_ptr()), 7u);

  // The code image is host-visible GPU memory at its GPU VA (the unified VA): flip a byte of the first instructions.
  const uint64_t code_va = GetParam().amd() ? static_cast<const amd::AmdProgram&>(*prog).code_va()
                                            : static_cast<const nv::NvProgram&>(*prog).code_va();
  auto* byte = reinterpret_cast<uint8_t*>(code_va + 8);
  *byte = static_cast<uint8_t>(*byte ^ 0xff);
  const std::string msg = run(*dev, *prog, buf);
  if (GetParam().amd()) {
    // KFD reports the queue's fault as a hardware exception at the dispatch (real garbled code is an illegal
    // instruction); the simulator's reason is in the queue's fault record, which KFD does not pass on.
    EXPECT_NE(msg.find("GPU hardware exception"), std::string::npos) << msg;
    EXPECT_NE(msg.find(GetParam().aql() ? "at rptr: KERNEL_DISPATCH" : "at rptr: DISPATCH_DIRECT"), std::string::npos)
        << msg;
  } else {
    // RM's notifier names a graphics exception; the simulated GPU's own reason rides along in the report.
    EXPECT_NE(msg.find("the code in GPU memory differs from the code object loaded at "), std::string::npos) << msg;
    EXPECT_NE(msg.find("a corrupt or overwritten upload"), std::string::npos) << msg;
  }
  prog.reset();
  dev->free_memory(buf);
}

INSTANTIATE_TEST_SUITE_P(Gpus, SimCodeFetch, test::all_sim_gpus(), test::sim_gpu_test_name);

}  // namespace
}  // namespace hcq
