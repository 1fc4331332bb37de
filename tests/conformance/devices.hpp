// Which devices the conformance suite runs on, and what each kind of device needs to run it: the kernels (as
// source for that device's compiler) and the few facts that decide which tests apply. This is the one place a new
// backend extends: add its device names to conformance_devices() and its interface to device_kind().
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hcq::conformance {

struct ConformanceDevice {
  std::string name;                 // as hcq::open_device() takes it, e.g. "CPU:0"
  std::optional<std::string> peer;  // a second device of the same kind for cross-device tests, if there is one
};

// Every device the suite is instantiated on: the CPU and simulated devices, then any real GPUs named in
// HCQ_CONFORMANCE_DEVICES ("NV:0,AMD:0+AMD:1": name[+peer], comma-separated; see devices.cpp and docs/hw-tests.md).
const std::vector<ConformanceDevice>& conformance_devices();
std::vector<std::string> conformance_device_names();
const ConformanceDevice& conformance_device(const std::string& name);

// A kernel as the device's compiler takes it; `name` is the symbol Device::load_program looks up.
struct KernelSource {
  std::string name;
  std::string source;
};

// The kernels the suite needs. Each one's contract (buffers, then 32-bit values):
struct ConformanceKernels {
  KernelSource add_one_f32;    // bufs (out f32*, in f32*), vals (n):    out[i] = in[i] + 1    for i < n, dim 0
  KernelSource add_one_u8;     // bufs (out u8*,  in u8*),  vals (n):    out[i] = in[i] + 1    for i < n, dim 0
  KernelSource add_value_u32;  // bufs (out u32*, in u32*), vals (n, v): out[i] = in[i] + v    for i < n, dim 0
  // bufs (out u32*), vals (cap): every thread of the 3-D grid adds 1 to out[id], id = its row-major global id
  // (x fastest), when id < cap. After a launch on a zeroed buffer, exactly the first
  // prod(global * local) words are 1: each thread ran once, and no other.
  KernelSource mark_threads;
};

struct DeviceKind {
  ConformanceKernels kernels;
  // Signal waits compare all 64 bits (so a timeline may cross 2^32 between synchronizes). False for GPUs whose
  // wait packets compare 32 bits; those rely on the shadow-timeline swap instead.
  bool wide_signal_compares = true;
};

// Keyed by hcq::DeviceInfo::interface. Throws std::out_of_range naming the interface when it is not known here.
const DeviceKind& device_kind(const std::string& interface);

}  // namespace hcq::conformance
