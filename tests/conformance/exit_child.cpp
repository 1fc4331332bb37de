// hcq-exit-child MODE DEVICE...: opens each device, leaves work in flight on it (a kernel, then a kernel behind a wait
// on a signal nobody writes, which blocks the device's timeline, then a copy behind that), and leaves the process:
//   MODE "return": returns from main; the work's owners (queues, buffers, programs, the signal) go first, then the
//                  statics, among them the device registry, which synchronizes every device (timing out) and closes it;
//   MODE "exit":   calls exit() with all of that still alive; only the statics are destroyed.
// Prints kExitingMarker just before it leaves, and exits 0 unless something failed before that (then 1; usage: 2).
//
// A program of its own, not a test of hcq-tests re-run with a filter: gtest builds its parameterized tests' device
// and target lists (Target::known(), ...) before main's work starts, which would make every vendor table outlive the
// registry and hide the exit-time use-after-free this checks (exit_test.cpp runs it). Here, as in a user's program
// or the hcq tool, the registry is the first static made.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/devices.hpp"
#include "conformance/exit_child.hpp"
#include "hcq/hcq.hpp"

namespace {

using namespace hcq;

constexpr uint32_t kCount = 64;

// One device's work, and what it runs on.
class InFlight {
 public:
  explicit InFlight(Device& dev) : dev_(dev) {}
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  ~InFlight() {
    // Queues first (the API's order: a queue does not keep its device open), then the memory and the program.
    done_.reset();
    blocked_.reset();
    behind_.reset();
    for (const Allocation& a : memory_) dev_.allocator().free(a);
  }

  void submit(const Signal& never) {
    const conformance::KernelSource& k = conformance::device_kind(dev_.info().interface).kernels.add_one_f32;
    add_one_ = dev_.load_program(k.name, dev_.compiler().compile_cached(k.source));
    const Allocation in = alloc();
    const Allocation out = alloc();
    const Allocation copy_dst = alloc();
    const std::vector<float> ones(kCount, 1.5f);
    dev_.allocator().copyin(in, 0, std::as_bytes(std::span<const float>(ones)));
    const LaunchArgs args{{out.va, in.va}, {kCount}};
    const Dims global{1u, 1u, 1u}, local{kCount, 1u, 1u};

    done_ = dev_.compute_queue();
    dev_.submit(*done_, [&](HWQueue& q) { q.exec(*add_one_, args, global, local); });
    blocked_ = dev_.compute_queue();
    dev_.submit(*blocked_, [&](HWQueue& q) {
      q.wait(never, 1);
      q.exec(*add_one_, args, global, local);
    });
    behind_ = dev_.info().copy_queues > 0 ? dev_.copy_queue() : dev_.compute_queue();
    dev_.submit(*behind_, [&](HWQueue& q) { q.copy(copy_dst.va, out.va, kCount * sizeof(float)); });
  }

 private:
  Allocation alloc() { return memory_.emplace_back(dev_.allocator().alloc(kCount * sizeof(float), {})); }

  Device& dev_;
  std::unique_ptr<Program> add_one_;
  std::vector<Allocation> memory_;
  std::unique_ptr<HWQueue> done_, blocked_, behind_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (argc < 3 || (mode != "exit" && mode != "return")) {
    std::cerr << "usage: hcq-exit-child exit|return DEVICE...\n";
    return 2;
  }
  try {
    OwnedSignal never(0, "exit test: never written");
    std::vector<std::unique_ptr<InFlight>> work;
    for (int i = 2; i < argc; ++i) {
      work.push_back(std::make_unique<InFlight>(open_device(argv[i])));
      work.back()->submit(never);
      std::cerr << argv[i] << ": a queue is blocked on a signal nobody writes\n";
    }
    if (mode == "exit") {
      std::cerr << hcq::conformance::kExitingMarker << " (exit)\n" << std::flush;
      std::exit(0);
    }
  } catch (const std::exception& e) {
    std::cerr << "hcq-exit-child: " << e.what() << "\n";
    return 1;
  }
  std::cerr << hcq::conformance::kExitingMarker << " (return)\n" << std::flush;
  return 0;
}
