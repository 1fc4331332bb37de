#include "framework/engine/submit.hpp"

#include <deque>
#include <mutex>

#include "framework/engine/fault_context.hpp"
#include "hcq/hw_queue.hpp"

namespace hcq::fw {
namespace {

// Submitted queues the device may still be running: each is destroyed once its completion is done. The device is
// kept open meanwhile (a queue must not outlive its device).
struct InFlight {
  std::shared_ptr<Device> keep;
  Completion done;
  std::unique_ptr<HWQueue> queue;
};
std::mutex g_mu;
// Made at the first submission, after the registry (which opened the device), so it is destroyed before the
// registry at exit: what is still in flight is waited for and its queues are destroyed while the devices live.
struct InFlightList {
  std::deque<InFlight> q;
  ~InFlightList() {
    for (InFlight& f : q) {
      try {
        f.done.wait();
      } catch (...) {
      }
    }
  }
};
std::deque<InFlight>& in_flight() {
  static InFlightList list;
  return list.q;
}
constexpr size_t kMaxInFlight = 256;

void hold(Device& dev, Completion done, std::unique_ptr<HWQueue> queue) {
  std::shared_ptr<Device> keep;
  try {
    keep = dev.shared_from_this();
  } catch (const std::bad_weak_ptr&) {
    // A device made outside the registry is its owner's to keep open: wait for the queue now.
    done.wait();
    return;
  }
  std::deque<InFlight> finished;
  {
    std::lock_guard lock(g_mu);
    auto& q = in_flight();
    while (!q.empty() && (q.front().done.done() || q.size() >= kMaxInFlight)) {
      finished.push_back(std::move(q.front()));
      q.pop_front();
    }
    q.push_back(InFlight{std::move(keep), done, std::move(queue)});
  }
  // Destroyed outside the lock: a queue over the limit waits for its device here.
}

}  // namespace

KernelBatch::KernelBatch(Device& dev) : dev_(dev) {}

KernelBatch::~KernelBatch() {
  try {
    submit();
  } catch (...) {
  }
}

void KernelBatch::add(const Program& program, std::span<const uint64_t> bufs, std::span<const uint32_t> vals,
                      std::array<uint32_t, 3> global, std::array<uint32_t, 3> local, std::string what) {
  Launch l{&program, {}, {}, {}, std::move(what)};
  l.args.bufs.assign(bufs.begin(), bufs.end());
  l.args.vals.assign(vals.begin(), vals.end());
  for (size_t d = 0; d < 3; ++d) {
    l.global[d] = Sym(global[d]);
    l.local[d] = Sym(local[d]);
  }
  program.check_launch(bufs.size(), vals.size(), global.data(), local.data());
  launches_.push_back(std::move(l));
}

void KernelBatch::submit() {
  if (launches_.empty()) return;
  std::unique_ptr<HWQueue> queue = dev_.compute_queue();
  // Every device runs a queue's kernels one after another (the GPUs' exec waits for the dispatch's waves before what
  // follows), so a kernel sees its predecessors' writes.
  Completion done = explaining_faults(dev_, [&] {
    return dev_.submit(*queue, [&](HWQueue& q) {
      for (const Launch& l : launches_) q.exec(*l.program, l.args, l.global, l.local);
    });
  });
  std::vector<std::string> kernels;
  kernels.reserve(launches_.size());
  for (Launch& l : launches_) kernels.push_back(std::move(l.what));
  launches_.clear();
  remember_submission(done, std::move(kernels));
  hold(dev_, done, std::move(queue));
}

}  // namespace hcq::fw
