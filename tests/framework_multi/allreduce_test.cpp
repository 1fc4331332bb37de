// allreduce over 2 and 3 devices, both algorithms and the automatic choice, from 1 element to 4 MiB (64 MiB with the
// automatic choice), against the sum computed on the host; the copies each algorithm makes
// (direct: N(N-1), ring: 2N(N-1), fewer where a device is listed twice); the other ops; errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "framework_multi/devices.hpp"
#include "hcq/jit.hpp"
#include "hcq/multi.hpp"
#include "hcq/tensor.hpp"

namespace hcq::multitest {
namespace {

// Device k's element i: small integers, so every summation order gives the same float.
float value(int64_t i, size_t k) { return static_cast<float>((i * 31 + static_cast<int64_t>(k) * 7) % 17 - 8); }

std::vector<Tensor> inputs(const std::vector<std::string>& devs, int64_t n) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < devs.size(); ++k) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value(i, k);
    out.emplace_back(v, Shape{n}, devs[k]);
  }
  for (Tensor& t : out) t.realize();
  return out;
}

const char* name(AllreduceAlgo a) {
  switch (a) {
    case AllreduceAlgo::automatic: return "automatic";
    case AllreduceAlgo::direct: return "direct";
    case AllreduceAlgo::ring: return "ring";
  }
  return "?";
}

class FrameworkMultiAllreduce : public ::testing::TestWithParam<int> {};

TEST_P(FrameworkMultiAllreduce, SumsFromOneElementToMebibytes) {
  const std::vector<std::string> devs = devices(static_cast<size_t>(GetParam()));
  std::vector<int64_t> sizes = {1, 2, 3, 17, 1000, 65536 + 3};
  sizes.push_back(int64_t{1} << 20);  // 4 MiB (on the simulated GPUs too)
  for (int64_t n : sizes) {
    for (AllreduceAlgo algo : {AllreduceAlgo::automatic, AllreduceAlgo::direct, AllreduceAlgo::ring}) {
      if (algo == AllreduceAlgo::ring && n < static_cast<int64_t>(devs.size())) continue;
      SCOPED_TRACE(std::to_string(n) + " elements, " + name(algo));
      const std::vector<Tensor> in = inputs(devs, n);
      std::vector<Tensor> out = allreduce(in, ReduceOp::sum, algo);
      Tensor::realize(out);
      ASSERT_EQ(out.size(), devs.size());
      for (size_t k = 0; k < out.size(); ++k) {
        EXPECT_EQ(out[k].device(), in[k].device());
        ASSERT_EQ(out[k].shape(), (Shape{n}));
        const std::vector<float> got = out[k].data<float>();
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          float want = 0;
          for (size_t d = 0; d < devs.size(); ++d) want += value(i, d);
          if (got[static_cast<size_t>(i)] != want && bad++ < 3)
            ADD_FAILURE() << devs[k] << " element " << i << ": " << got[static_cast<size_t>(i)] << ", want " << want;
        }
        EXPECT_EQ(bad, 0) << devs[k];
      }
    }
  }
}

// The largest size, 64 MiB a device, with the automatic choice (a few seconds on the simulated GPUs since
// their L2 model writes back runs of pages; it took about 16 s an allreduce before).
TEST_P(FrameworkMultiAllreduce, SumsSixtyFourMebibytes) {
  const std::vector<std::string> devs = devices(static_cast<size_t>(GetParam()));
  const int64_t n = int64_t{16} << 20;
  std::vector<Tensor> out = allreduce(inputs(devs, n), ReduceOp::sum);
  Tensor::realize(out);
  for (size_t k = 0; k < out.size(); ++k) {
    const std::vector<float> got = out[k].data<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      float want = 0;
      for (size_t d = 0; d < devs.size(); ++d) want += value(i, d);
      bad += got[static_cast<size_t>(i)] != want;
    }
    EXPECT_EQ(bad, 0) << devs[k] << ": elements that differ from the host's sum";
  }
}

TEST_P(FrameworkMultiAllreduce, CopiesPerAlgorithm) {
  const std::vector<std::string> devs = devices(static_cast<size_t>(GetParam()));
  const uint64_t N = devs.size();
  for (AllreduceAlgo algo : {AllreduceAlgo::direct, AllreduceAlgo::ring}) {
    SCOPED_TRACE(name(algo));
    const std::vector<Tensor> in = inputs(devs, 100);
    const uint64_t before = framework_counters().copies;
    Tensor::realize(allreduce(in, ReduceOp::sum, algo));
    const uint64_t copies = framework_counters().copies - before;
    // Direct: N(N-1), one per ordered pair; ring: 2(N-1) steps of N sends. A device listed twice copies nothing to
    // itself (Tensor::to of its own device is the tensor), and its two direct sums are one graph (one copy of each
    // other tensor into it).
    std::set<std::pair<size_t, std::string>> pairs;  // (source tensor, destination device)
    uint64_t ring_links = 0;
    for (size_t i = 0; i < N; ++i) {
      for (size_t j = 0; j < N; ++j)
        if (in[i].device() != in[j].device()) pairs.emplace(i, in[j].device());
      ring_links += in[i].device() != in[(i + 1) % N].device() ? 1 : 0;
    }
    EXPECT_EQ(copies, algo == AllreduceAlgo::direct ? pairs.size() : 2 * (N - 1) * ring_links);
    if (devs[0] != devs.back()) {
      EXPECT_EQ(copies, algo == AllreduceAlgo::direct ? N * (N - 1) : 2 * N * (N - 1));
    }
  }
}

TEST_P(FrameworkMultiAllreduce, ProductMaxMinAndIntegers) {
  const std::vector<std::string> devs = devices(static_cast<size_t>(GetParam()));
  for (AllreduceAlgo algo : {AllreduceAlgo::direct, AllreduceAlgo::ring}) {
    SCOPED_TRACE(name(algo));
    const std::vector<Tensor> in = inputs(devs, 10);
    for (ReduceOp op : {ReduceOp::prod, ReduceOp::max, ReduceOp::min}) {
      std::vector<Tensor> out = allreduce(in, op, algo);
      const std::vector<float> got = out.back().data<float>();
      for (int64_t i = 0; i < 10; ++i) {
        float want = value(i, 0);
        for (size_t d = 1; d < devs.size(); ++d) {
          const float v = value(i, d);
          want = op == ReduceOp::prod ? want * v : op == ReduceOp::max ? std::max(want, v) : std::min(want, v);
        }
        EXPECT_EQ(got[static_cast<size_t>(i)], want) << "op " << static_cast<int>(op) << " element " << i;
      }
    }
    std::vector<Tensor> ints;
    for (size_t k = 0; k < devs.size(); ++k)
      ints.push_back(Tensor(std::vector<int32_t>{1000000, -3, static_cast<int32_t>(k)}, {3}, devs[k]));
    const std::vector<int32_t> got = allreduce(ints, ReduceOp::sum, algo).front().data<int32_t>();
    const auto N = static_cast<int32_t>(devs.size());
    EXPECT_EQ(got, (std::vector<int32_t>{1000000 * N, -3 * N, N * (N - 1) / 2}));
  }
}

TEST_P(FrameworkMultiAllreduce, Errors) {
  const std::vector<std::string> devs = devices(static_cast<size_t>(GetParam()));
  std::vector<Tensor> in = inputs(devs, 4);
  in.back() = Tensor::ones({5}, dtypes::float32, devs.back());
  EXPECT_THROW((void)allreduce(in), ShapeError);
  in.back() = Tensor::ones({4}, dtypes::int32, devs.back());
  EXPECT_THROW((void)allreduce(in), DTypeError);
  EXPECT_THROW((void)allreduce({}), InvalidArgument);
  // A ring needs one chunk per device.
  EXPECT_THROW((void)allreduce(inputs(devs, 1), ReduceOp::sum, AllreduceAlgo::ring), ShapeError);
}

// A TinyJit of a function that allreduces its inputs (on different devices) captures the kernels and the
// cross-device copies and replays them: each call's inputs give their own sums.
TEST_P(FrameworkMultiAllreduce, TinyJitReplaysAnAllreduceAcrossDevices) {
  const std::vector<std::string> devs = devices(static_cast<size_t>(GetParam()));
  for (AllreduceAlgo algo : {AllreduceAlgo::direct, AllreduceAlgo::ring}) {
    SCOPED_TRACE(name(algo));
    TinyJit f([algo](const std::vector<Tensor>& in) { return allreduce(in, ReduceOp::sum, algo); });
    uint64_t schedules_at_call_2 = 0;
    for (int call = 0; call < 5; ++call) {
      const FrameworkCounters c = framework_counters();
      if (call == 2) schedules_at_call_2 = c.schedule_misses + c.schedule_hits;
      std::vector<Tensor> in;
      for (size_t k = 0; k < devs.size(); ++k)
        in.push_back(Tensor(std::vector<float>(6, static_cast<float>(call * 10 + k)), {6}, devs[k]).realize());
      const std::vector<Tensor> out = f(in);
      ASSERT_EQ(out.size(), devs.size());
      float want = 0;
      for (size_t k = 0; k < devs.size(); ++k) want += static_cast<float>(call * 10 + k);
      for (size_t k = 0; k < out.size(); ++k) {
        EXPECT_EQ(out[k].device(), in[k].device()) << "call " << call;
        EXPECT_EQ(out[k].data<float>(), std::vector<float>(6, want)) << "call " << call << " on " << devs[k];
      }
    }
    // Calls 2 to 4 replayed: nothing was scheduled (realizing the inputs is a buffer already, no schedule either).
    const FrameworkCounters c = framework_counters();
    EXPECT_EQ(c.schedule_misses + c.schedule_hits, schedules_at_call_2);
  }
}

INSTANTIATE_TEST_SUITE_P(Framework, FrameworkMultiAllreduce, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "Devices"; });

}  // namespace
}  // namespace hcq::multitest
