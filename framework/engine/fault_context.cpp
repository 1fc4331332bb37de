#include "framework/engine/fault_context.hpp"

#include <deque>
#include <mutex>
#include <utility>

namespace hcq::fw {
namespace {

struct Submission {
  Completion done;
  std::shared_ptr<const std::vector<std::string>> kernels;
};

std::mutex g_mu;
// Bounded: finished submissions are dropped as new ones come; a device that faulted keeps its first unfinished one
// (a faulted timeline never advances), so at most kMaxRemembered - 1 later ones push out only finished or later
// entries of other devices.
constexpr size_t kMaxRemembered = 512;
std::deque<Submission>& remembered() {
  static auto* q = new std::deque<Submission>();  // never destroyed: faults can be explained during exit
  return *q;
}

}  // namespace

void remember_submission(const Completion& done, std::vector<std::string> kernels) {
  remember_submission(done, std::make_shared<const std::vector<std::string>>(std::move(kernels)));
}

void remember_submission(const Completion& done, std::shared_ptr<const std::vector<std::string>> kernels) {
  std::lock_guard lock(g_mu);
  auto& q = remembered();
  while (!q.empty() && (q.front().done.done() || q.size() >= kMaxRemembered)) q.pop_front();
  q.push_back(Submission{done, std::move(kernels)});
}

DeviceFault explain_fault(Device& dev, const DeviceFault& e) {
  std::vector<std::string> kernels;
  {
    std::lock_guard lock(g_mu);
    for (const Submission& s : remembered())
      if (s.done.device() == &dev && !s.done.done()) {
        kernels = *s.kernels;
        break;
      }
  }
  if (kernels.empty()) return e;
  std::string what = e.what();
  if (kernels.size() == 1) {
    what += "\n  in kernel " + kernels[0];
  } else {
    what += cat("\n  in one of the ", kernels.size(), " kernels of the submission that did not finish, in order:");
    for (const std::string& k : kernels) what += "\n    " + k;
  }
  return DeviceFault(what);
}

}  // namespace hcq::fw
