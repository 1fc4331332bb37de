// Which kernel, and which tensor op, a device fault came from (issue 15: "a kernel that reads out of bounds ends in
// the device's typed DeviceFault, naming the kernel and the tensor op it came from"). A device reports a fault by
// address and queue, not by kernel; the engine remembers what each of its submissions ran, so the first submission
// the device did not finish names the culprit: exactly when it held one kernel, else its kernels in order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hcq/completion.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"

namespace hcq::fw {

// A submission's kernels, each "name (what it computes)", and the timeline point that ends it.
void remember_submission(const Completion& done, std::vector<std::string> kernels);
// The same with a list shared between submissions (a TinyJit replay submits the same kernels every call: it keeps
// the list and passes it without copying the names).
void remember_submission(const Completion& done, std::shared_ptr<const std::vector<std::string>> kernels);

// `e` with the kernels of `dev`'s first unfinished submission appended, as a DeviceFault; `e` itself when the engine
// submitted nothing unfinished there (the fault came from elsewhere).
DeviceFault explain_fault(Device& dev, const DeviceFault& e);

// Runs `fn`; a DeviceFault of `dev` coming out of it is rethrown explained.
template <class Fn>
decltype(auto) explaining_faults(Device& dev, Fn&& fn) {
  try {
    return fn();
  } catch (const DeviceFault& e) {
    throw explain_fault(dev, e);
  }
}

}  // namespace hcq::fw
