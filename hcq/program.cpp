// Program: argument and dim checks shared by every backend, and the eager launch that follows the timeline
// protocol. The eager launch is what `hcq bench` times as launch_us, so it allocates nothing beyond the queue.
#include "hcq/program.hpp"

#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/hw_queue.hpp"

namespace hcq {

namespace {

constexpr const char* kAxis[3] = {"x", "y", "z"};

}  // namespace

Program::Program(Device& dev, std::string name, uint32_t num_bufs, uint32_t num_vals, LaunchLimits limits)
    : dev_(dev),
      keep_open_(dev.weak_from_this().lock()),
      name_(std::move(name)),
      num_bufs_(num_bufs),
      num_vals_(num_vals),
      limits_(limits) {}

void Program::check_launch(size_t nbufs, size_t nvals, const uint32_t global[3], const uint32_t local[3]) const {
  if (nbufs != num_bufs_ || nvals != num_vals_) {
    throw InvalidArgument(cat(dev_.name(), ": program ", name_, " takes ", num_bufs_, " buffers and ", num_vals_,
                              " values, but the launch passed ", nbufs, " buffers and ", nvals, " values"));
  }
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (global[i] < 1 || global[i] > limits_.max_global[i]) {
      throw InvalidArgument(cat(dev_.name(), ": program ", name_, ": global dim ", kAxis[i], " = ", global[i],
                                " is outside [1, ", limits_.max_global[i], "]"));
    }
    if (local[i] < 1 || local[i] > limits_.max_local[i]) {
      throw InvalidArgument(cat(dev_.name(), ": program ", name_, ": local dim ", kAxis[i], " = ", local[i],
                                " is outside [1, ", limits_.max_local[i], "]"));
    }
    threads *= local[i];
  }
  if (threads > limits_.max_threads_per_group) {
    throw InvalidArgument(cat(dev_.name(), ": program ", name_, ": local dims ", local[0], "x", local[1], "x", local[2],
                              " = ", threads, " threads per group, over the limit of ", limits_.max_threads_per_group));
  }
}

namespace {

// Per-thread scratch for the eager launch: its vectors keep their capacity, so steady-state launches do not
// allocate for arguments.
LaunchArgs& scratch_args(std::span<const uint32_t> vals) {
  thread_local LaunchArgs args;
  args.vals.assign(vals.begin(), vals.end());
  return args;
}

Dims dims_of(const std::array<uint32_t, 3>& d) { return Dims{Sym(d[0]), Sym(d[1]), Sym(d[2])}; }

}  // namespace

Completion Program::launch(std::span<const uint64_t> buf_addrs, std::span<const uint32_t> vals,
                           std::array<uint32_t, 3> global, std::array<uint32_t, 3> local) const {
  check_launch(buf_addrs.size(), vals.size(), global.data(), local.data());
  LaunchArgs& args = scratch_args(vals);
  args.bufs.assign(buf_addrs.begin(), buf_addrs.end());
  const Dims g = dims_of(global), l = dims_of(local);
  auto queue = dev_.compute_queue();
  return dev_.submit(*queue, [&](HWQueue& q) { q.exec(*this, args, g, l); });
}

Completion Program::launch(std::span<const Buffer* const> bufs, std::span<const uint32_t> vals,
                           std::array<uint32_t, 3> global, std::array<uint32_t, 3> local) const {
  check_launch(bufs.size(), vals.size(), global.data(), local.data());
  LaunchArgs& args = scratch_args(vals);
  args.bufs.clear();
  for (size_t i = 0; i < bufs.size(); ++i) {
    const Buffer* b = bufs[i];
    if (b == nullptr) throw InvalidArgument(cat(dev_.name(), ": program ", name_, ": buffer argument ", i, " is null"));
    if (&b->device() != &dev_) {
      throw InvalidArgument(cat(dev_.name(), ": program ", name_, ": buffer argument ", i, " lives on ",
                                b->device().name(), " (copy it to ", dev_.name(), " first)"));
    }
    args.bufs.emplace_back(b->va());
  }
  const Dims g = dims_of(global), l = dims_of(local);
  auto queue = dev_.compute_queue();
  return dev_.submit(*queue, [&](HWQueue& q) { q.exec(*this, args, g, l); });
}

std::optional<double> Program::operator()(std::span<const uint64_t> buf_addrs, std::span<const uint32_t> vals,
                                          std::array<uint32_t, 3> global, std::array<uint32_t, 3> local,
                                          bool wait) const {
  if (!wait) {
    launch(buf_addrs, vals, global, local);
    return std::nullopt;
  }
  check_launch(buf_addrs.size(), vals.size(), global.data(), local.data());
  LaunchArgs& args = scratch_args(vals);
  args.bufs.assign(buf_addrs.begin(), buf_addrs.end());
  const Dims g = dims_of(global), l = dims_of(local);

  // The timing signals are shared by this program's timed launches; they are read back before the lock goes.
  std::lock_guard lock(timing_mu_);
  if (!timing_start_->valid()) {
    timing_start_ = OwnedSignal(0, cat(dev_.name(), " ", name_, " start"));
    timing_end_ = OwnedSignal(0, cat(dev_.name(), " ", name_, " end"));
  }
  auto queue = dev_.compute_queue();
  const Completion done = dev_.submit(
      *queue, [&](HWQueue& q) { q.timestamp(timing_start_).exec(*this, args, g, l).timestamp(timing_end_); });
  dev_.wait_signal(dev_.timeline_signal(), done.value());
  const uint64_t start = timing_start_->timestamp();
  const uint64_t end = timing_end_->timestamp();
  return end > start ? dev_.ticks_to_us(end - start) / 1e6 : 0.0;
}

void Program::retire(const std::function<void()>& on_unload) noexcept {
  try {
    dev_.synchronize();
  } catch (...) {
    // A faulted or hung device: what it did not run will not run; the program can go.
  }
  if (!on_unload) return;
  try {
    on_unload();
  } catch (...) {
    // Unregistering must not throw out of a destructor; the image is freed regardless.
  }
}

}  // namespace hcq
