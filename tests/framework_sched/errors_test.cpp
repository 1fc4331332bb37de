// The framework's errors: each typed, each message with its context, asserted exactly.
#include <gtest/gtest.h>

#include <cstdlib>

#include "framework/codegen/target.hpp"
#include "framework/engine/compile.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(FrameworkErrors, ShapeMismatchNamesTheOpAndBothShapes) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4});
  EXPECT_EQ(message_of<ShapeError>([&] { (void)(a + b); }), "add: shapes (2, 3) and (4,) cannot be broadcast together");
  EXPECT_EQ(message_of<ShapeError>([&] { (void)a.matmul(b); }), "matmul: shapes (2, 3) and (4,) do not align (3 != 4)");
}

TEST(FrameworkErrors, BadAxis) {
  Tensor a = Tensor::zeros({2, 3});
  EXPECT_EQ(message_of<InvalidArgument>([&] { (void)a.sum(2); }),
            "sum: axis 2 is out of range for a tensor of 2 dimensions");
  EXPECT_EQ(message_of<InvalidArgument>([&] { (void)a.permute({0, 0}); }), "permute: axis 0 is given twice");
}

TEST(FrameworkErrors, ImpossibleReshape) {
  Tensor a = Tensor::zeros({2, 3});
  EXPECT_EQ(message_of<ShapeError>([&] { (void)a.reshape({4, 2}); }),
            "reshape: cannot reshape (2, 3) (6 elements) to (4, 2) (8 elements)");
  EXPECT_EQ(message_of<ShapeError>([&] { (void)a.reshape({-1, 4}); }),
            "reshape: cannot reshape (2, 3) (6 elements) to (-1, 4)");
}

TEST(FrameworkErrors, DtypeErrors) {
  Tensor f = Tensor::zeros({2}), i = Tensor::zeros({2}, dtypes::int32);
  EXPECT_EQ(message_of<DTypeError>([&] { (void)f.idiv(i); }),
            "idiv: needs integer operands, got float32 and int32 (use div for floats)");
  EXPECT_EQ(message_of<DTypeError>([&] { (void)f.bitcast(dtypes::int64); }),
            "bitcast: float32 (4 bytes) to int64 (8 bytes): the sizes differ");
  EXPECT_EQ(message_of<DTypeError>([&] { (void)f.data<int32_t>(); }),
            "data: the tensor is float32, not int32 (cast it, or use tolist())");
}

// The code generator is chosen by the interface the device reports; one it does not know is refused by name (no
// such device opens here, so its report is made up).
TEST(FrameworkErrors, DeviceWithoutCodeGeneratorIsRefusedByName) {
  DeviceInfo info;
  info.name = "METAL:0";
  info.interface = "metal";
  EXPECT_EQ(message_of<InvalidArgument>([&] { (void)fw::target_facts(info, 1, true); }),
            "framework: no kernel code generator for METAL:0 (metal) yet: the framework runs on the CPU, AMD, NV and "
            "CUDA devices; move tensors to one of them with to()");
}

TEST(FrameworkErrors, OutOfMemoryNamesDeviceSizeAndBytesInUse) {
  // 2^45 floats: 128 TiB, more than any CPU device can map.
  Tensor huge = Tensor::zeros({int64_t{1} << 45});
  const std::string msg = message_of<OutOfMemory>([&] { huge.realize(); });
  // The bytes in use vary with what earlier tests left in the allocator's cache: the message's fixed parts.
  EXPECT_EQ(msg.substr(0, 54), "CPU:0: out of memory allocating 140737488355328 bytes ") << msg;
  EXPECT_NE(msg.find(" bytes in use, "), std::string::npos) << msg;
}

// A device fault is sticky: reading a tensor of that device rethrows it (with the device's own context) instead of
// returning whatever is in memory. CPU:7, a device no other test uses, so theirs stay healthy.
TEST(FrameworkErrors, ReadingATensorOfAFaultedDeviceRethrowsTheFault) {
  // A process writes at most HCQ_BUNDLE_MAX (16) bundles: faults of the tests before this one may have used them.
  struct BundleQuota {
    BundleQuota() { ::setenv("HCQ_BUNDLE_MAX", "1000000", 1); }
    ~BundleQuota() { ::unsetenv("HCQ_BUNDLE_MAX"); }
  } quota;
  Tensor t = (Tensor::arange(8, 16, 1, "CPU:7") * 2).realize();
  EXPECT_EQ(t.data<int32_t>()[0], 16);
  open_device("CPU:7").record_error(std::make_exception_ptr(DeviceFault("CPU:7: kernel E_8 faulted (test)")));
  // The device appends where it wrote the hang bundle (a temporary directory under hcq-tests).
  const std::string want = "CPU:7: kernel E_8 faulted (test); hang bundle: ";
  EXPECT_EQ(message_of<DeviceFault>([&] { (void)t.data<int32_t>(); }).substr(0, want.size()), want);
  EXPECT_EQ(message_of<DeviceFault>([&] { (void)(t + 1).data<int32_t>(); }).substr(0, want.size()), want);
}

TEST(FrameworkErrors, EmptyTensor) {
  Tensor t;
  EXPECT_EQ(message_of<InvalidArgument>([&] { (void)t.shape(); }), "tensor: the tensor is empty (default-constructed)");
}

// A kernel that does not compile: the engine's error names the kernel and device, shows the source with line
// numbers, then the compiler's own message (which points at kernel.c's lines).
TEST(FrameworkErrors, CompileErrorShowsNumberedSourceBesideTheCompilerMessage) {
  fw::RenderedKernel rk;
  rk.name = "E_broken";
  rk.source = "HCQ_KERNEL(E_broken, 1, 0) {\n  this is not C;\n}\n";
  rk.num_bufs = 1;
  const std::string msg = message_of<CompileError>([&] { fw::compile_kernels({fw::KernelRequest{"CPU:0", rk}}); });
  const std::string head =
      "kernel E_broken on CPU:0 failed to compile. Its source:\n"
      "   1 | HCQ_KERNEL(E_broken, 1, 0) {\n"
      "   2 |   this is not C;\n"
      "   3 | }\n"
      "The compiler said:\n";
  EXPECT_EQ(msg.substr(0, head.size()), head) << msg;
  EXPECT_NE(msg.find("kernel.c:2:"), std::string::npos) << msg;  // the compiler points at line 2
}

}  // namespace
}  // namespace hcq
