// A program as a user writes it, against the installed tree only (<hcq/hcq.hpp> and pkg-config): opens CPU:0,
// copies a buffer in, runs a kernel on it, copies it out and checks every element. Exit status 0 on success.
//
// usage: consumer [--expect-not-linked DEVICE]
//   --expect-not-linked: also checks that opening DEVICE fails with the registry's "not linked" message (a program
//   built from hcq-cpu.pc has no AMD backend).
#include <hcq/hcq.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

// The CPU device's kernel language: C with the HCQ_* macros its compiler prepends.
constexpr std::string_view kAddValue = R"(
HCQ_KERNEL(add_value, 2, 2) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(uint32_t, 0)[i] = HCQ_BUF(uint32_t, 1)[i] + HCQ_VAL(1);
  }
}
)";

int run_kernel() {
  hcq::Device& dev = hcq::open_device("CPU:0");
  constexpr uint32_t n = 1000;
  constexpr uint32_t add = 7;
  std::vector<uint32_t> in(n), out(n, 0);
  for (uint32_t i = 0; i < n; i++) in[i] = i * 3;

  hcq::Buffer src(dev, n * sizeof(uint32_t));
  hcq::Buffer dst(dev, n * sizeof(uint32_t));
  src.copyin(std::span<const uint32_t>(in));

  const std::vector<uint8_t> binary = dev.compiler().compile_cached(kAddValue);
  const std::unique_ptr<hcq::Program> program = dev.load_program("add_value", binary);
  const std::array<uint64_t, 2> bufs = {dst.va(), src.va()};
  const std::array<uint32_t, 2> vals = {n, add};
  (*program)(bufs, vals, {(n + 63) / 64, 1, 1}, {64, 1, 1}, /*wait=*/true);
  dst.copyout(std::span<uint32_t>(out));

  for (uint32_t i = 0; i < n; i++) {
    if (out[i] != in[i] + add) {
      std::fprintf(stderr, "consumer: element %u is %u, expected %u\n", i, out[i], in[i] + add);
      return 1;
    }
  }
  std::printf("consumer: %s ran add_value on %u elements\n", dev.name().c_str(), n);
  return 0;
}

// A device whose backend is not linked must fail to open with a message that says so.
int check_not_linked(const std::string& device) {
  try {
    hcq::open_device(device);
  } catch (const hcq::UnsupportedDriver& e) {
    if (std::string_view(e.what()).find("backend is not linked into this program") != std::string_view::npos) {
      std::printf("consumer: %s: %s\n", device.c_str(), e.what());
      return 0;
    }
    std::fprintf(stderr, "consumer: %s failed for another reason: %s\n", device.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "consumer: %s opened, but its backend should not be linked\n", device.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    int status = run_kernel();
    if (status == 0 && argc == 3 && std::string_view(argv[1]) == "--expect-not-linked")
      status = check_not_linked(argv[2]);
    hcq::close_all_devices();
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
