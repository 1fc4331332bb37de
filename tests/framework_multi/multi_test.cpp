// MultiTensor's ops on 2 and 3 shards (even and uneven) against double loops over the host data: elementwise with
// broadcasting and mixed layouts, reductions over the split axis and others, movement, matmul with either operand
// split on each of its axes; and the errors (too few elements, different device lists, unreachable devices).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework_multi/devices.hpp"
#include "hcq/multi.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq::multitest {
namespace {

// Small integers as floats: sums and products of a few stay exact, so results compare exactly whatever the order.
std::vector<float> values(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * 7 + seed * 5) % 11 - 5);
  return v;
}

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << what << " at " << i;
}

// Every device's part of a replicated result holds the whole value.
void expect_replicated(const MultiTensor& m, const std::vector<double>& want, const std::string& what) {
  ASSERT_TRUE(m.is_replicated()) << what;
  for (size_t k = 0; k < m.parts().size(); ++k) {
    EXPECT_EQ(m.parts()[k].device(), m.devices()[k]);
    expect_near_all(m.parts()[k].data<float>(), want, what + " on " + m.devices()[k]);
  }
}

class FrameworkMulti : public ::testing::TestWithParam<int> {
 protected:
  std::vector<std::string> devs() const { return devices(static_cast<size_t>(GetParam())); }
};

TEST_P(FrameworkMulti, ShardSplitsUnevenAxesAndGathersBack) {
  // 5 rows over 2 devices: 3 + 2; over 3: 2 + 2 + 1.
  const std::vector<float> x = values(5 * 4, 1);
  MultiTensor m = Tensor(x, {5, 4}).shard(devs(), 0);
  EXPECT_EQ(m.shape(), (Shape{5, 4}));
  EXPECT_EQ(m.axis(), 0);
  const std::vector<std::pair<int64_t, int64_t>> want2 = {{0, 3}, {3, 5}}, want3 = {{0, 2}, {2, 4}, {4, 5}};
  EXPECT_EQ(m.bounds(), GetParam() == 2 ? want2 : want3);
  for (size_t k = 0; k < m.parts().size(); ++k) {
    EXPECT_EQ(m.parts()[k].device(), open_device(devs()[k]).name());
    const auto [lo, hi] = m.bounds()[k];
    std::vector<double> part;
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t c = 0; c < 4; ++c) part.push_back(x[static_cast<size_t>(r * 4 + c)]);
    expect_near_all(m.parts()[k].data<float>(), part, "part " + std::to_string(k));
  }
  expect_near_all(m.data<float>(), std::vector<double>(x.begin(), x.end()), "gathered");
  // Split on the last axis: 4 columns over 3 devices, 2 + 1 + 1.
  MultiTensor c = Tensor(x, {5, 4}).shard(devs(), -1);
  EXPECT_EQ(c.axis(), 1);
  expect_near_all(c.data<float>(), std::vector<double>(x.begin(), x.end()), "gathered columns");
  expect_replicated(c.to_replicated(), std::vector<double>(x.begin(), x.end()), "allgather");
}

TEST_P(FrameworkMulti, ElementwiseWithBroadcastAndMixedLayouts) {
  const std::vector<float> a = values(5 * 4, 2), b = values(4, 3), c = values(5 * 4, 4);
  MultiTensor as = Tensor(a, {5, 4}).shard(devs(), 0);
  MultiTensor br = Tensor(b, {4}).to(devs());           // replicated, broadcast along the rows
  MultiTensor cs = Tensor(c, {5, 4}).shard(devs(), 1);  // split on the other axis: gathered, then cut
  MultiTensor r = ((as * br + 1.0F) - cs).relu();
  EXPECT_EQ(r.axis(), 0);
  EXPECT_EQ(r.shape(), (Shape{5, 4}));
  std::vector<double> want(20);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) {
      const double v = double(a[i * 4 + j]) * b[j] + 1 - c[i * 4 + j];
      want[static_cast<size_t>(i * 4 + j)] = v > 0 ? v : 0;
    }
  expect_near_all(r.data<float>(), want, "relu(a*b+1-c)");
  // A replicated (5, 1) column against a row-split (5, 4): each device cuts its own rows.
  const std::vector<float> col = values(5, 5);
  MultiTensor w = as.maximum(Tensor(col, {5, 1}).to(devs()));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) want[static_cast<size_t>(i * 4 + j)] = std::max<double>(a[i * 4 + j], col[i]);
  expect_near_all(w.data<float>(), want, "maximum with a column");
  // where with a bool condition split like a.
  MultiTensor sel = as.lt(Tensor::zeros({5, 4}).shard(devs(), 0)).where(as, as * -2.0F);
  for (int i = 0; i < 20; ++i) want[static_cast<size_t>(i)] = a[i] < 0 ? a[i] : -2.0 * a[i];
  expect_near_all(sel.data<float>(), want, "where");
}

TEST_P(FrameworkMulti, ReductionsOverTheSplitAxisAndOthers) {
  const std::vector<float> a = values(7 * 3, 6);
  MultiTensor as = Tensor(a, {7, 3}).shard(devs(), 0);
  std::vector<double> col_sum(3, 0), col_max(3, -1e9), col_min(3, 1e9), row_sum(7, 0);
  double all = 0;
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 3; ++j) {
      const double v = a[static_cast<size_t>(i * 3 + j)];
      col_sum[j] += v, row_sum[i] += v, all += v;
      col_max[j] = std::max(col_max[j], v), col_min[j] = std::min(col_min[j], v);
    }
  expect_replicated(as.sum(0), col_sum, "sum(0)");
  expect_replicated(as.max(0), col_max, "max(0)");
  expect_replicated(as.min(0), col_min, "min(0)");
  std::vector<double> col_mean = col_sum;
  for (double& v : col_mean) v /= 7;
  expect_replicated(as.mean(0), col_mean, "mean(0) over uneven shards");
  expect_replicated(as.sum(), {all}, "sum()");
  MultiTensor k = as.sum(0, true);
  EXPECT_EQ(k.shape(), (Shape{1, 3}));
  // Over the other axis: per device, still split on the rows.
  MultiTensor rs = as.sum(1);
  EXPECT_EQ(rs.axis(), 0);
  EXPECT_EQ(rs.shape(), (Shape{7}));
  expect_near_all(rs.data<float>(), row_sum, "sum(1)");
  // A split axis after a reduced one moves down.
  MultiTensor t = Tensor(a, {7, 3}).shard(devs(), 1);
  MultiTensor ts = t.sum(0);
  EXPECT_EQ(ts.axis(), 0);
  expect_near_all(ts.data<float>(), col_sum, "sum(0) of column shards");
}

TEST_P(FrameworkMulti, MovementKeepsTheSplitAxis) {
  const std::vector<float> a = values(6 * 4, 7);
  MultiTensor as = Tensor(a, {6, 4}).shard(devs(), 0);
  MultiTensor r = as.reshape({6, 2, 2});
  EXPECT_EQ(r.axis(), 0);
  expect_near_all(r.data<float>(), std::vector<double>(a.begin(), a.end()), "reshape");
  MultiTensor p = as.permute({1, 0});  // (4, 6), split on axis 1
  EXPECT_EQ(p.axis(), 1);
  std::vector<double> tr(24);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) tr[static_cast<size_t>(j * 6 + i)] = a[static_cast<size_t>(i * 4 + j)];
  expect_near_all(p.data<float>(), tr, "permute");
  expect_near_all(as.transpose().data<float>(), tr, "transpose");
  MultiTensor e = as.unsqueeze(0).expand({2, 6, 4});
  EXPECT_EQ(e.axis(), 1);
  std::vector<double> twice(a.begin(), a.end());
  twice.insert(twice.end(), a.begin(), a.end());
  expect_near_all(e.data<float>(), twice, "unsqueeze + expand");
  MultiTensor padded = as.pad({{0, 0}, {1, 0}}, 9.0);
  std::vector<double> pw;
  for (int i = 0; i < 6; ++i) {
    pw.push_back(9);
    for (int j = 0; j < 4; ++j) pw.push_back(a[static_cast<size_t>(i * 4 + j)]);
  }
  expect_near_all(padded.data<float>(), pw, "pad on the other axis");
  std::vector<double> sl;
  for (int i = 0; i < 6; ++i)
    for (int j = 1; j < 3; ++j) sl.push_back(a[static_cast<size_t>(i * 4 + j)]);
  expect_near_all(as.slice(1, 1, 3).data<float>(), sl, "slice");
  expect_near_all(as.shrink({{0, 6}, {1, 3}}).data<float>(), sl, "shrink");
  expect_near_all(as.unsqueeze(1).flatten(1, 2).data<float>(), std::vector<double>(a.begin(), a.end()),
                  "flatten after the split axis");
  // Merging the split axis with the one after it would interleave devices' rows: refused, with the shapes.
  try {
    (void)as.reshape({24});
    FAIL() << "reshape merged the split axis";
  } catch (const ShapeError& err) {
    EXPECT_NE(std::string(err.what()).find("(6, 4)"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("(24,)"), std::string::npos) << err.what();
  }
  EXPECT_THROW((void)as.pad({{1, 0}, {0, 0}}), ShapeError);
  EXPECT_THROW((void)as.slice(0, 0, 2), ShapeError);
}

TEST_P(FrameworkMulti, MatmulWithEitherOperandSplitOnEachAxis) {
  const int M = 5, K = 7, N = 4;
  const std::vector<float> a = values(M * K, 8), b = values(K * N, 9);
  std::vector<double> want(M * N, 0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) want[static_cast<size_t>(i * N + j)] += double(a[i * K + k]) * b[k * N + j];
  const Tensor A(a, {M, K}), B(b, {K, N});
  struct Case {
    const char* name;
    int a_axis, b_axis;  // MultiTensor::replicated or the split axis
    int out_axis;
  };
  const int R = MultiTensor::replicated;
  for (const Case& c :
       {Case{"replicated @ replicated", R, R, R}, Case{"rows @ replicated", 0, R, 0},
        Case{"replicated @ columns", R, 1, 1}, Case{"inner @ replicated", 1, R, R}, Case{"replicated @ inner", R, 0, R},
        Case{"inner @ inner", 1, 0, R}, Case{"rows @ columns", 0, 1, 0}, Case{"inner @ columns", 1, 1, R}}) {
    SCOPED_TRACE(c.name);
    MultiTensor x = c.a_axis == R ? A.to(devs()) : A.shard(devs(), c.a_axis);
    MultiTensor y = c.b_axis == R ? B.to(devs()) : B.shard(devs(), c.b_axis);
    MultiTensor z = x.matmul(y);
    EXPECT_EQ(z.shape(), (Shape{M, N}));
    EXPECT_EQ(z.axis(), c.out_axis);
    expect_near_all(z.data<float>(), want, c.name);
  }
  // Batched: a (3, M, K) split on the batch against a replicated (K, N).
  std::vector<float> ab = values(3 * M * K, 10);
  std::vector<double> wb(3 * M * N, 0);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        for (int k = 0; k < K; ++k)
          wb[static_cast<size_t>((t * M + i) * N + j)] += double(ab[(t * M + i) * K + k]) * b[k * N + j];
  MultiTensor zb = Tensor(ab, {3, M, K}).shard(devs(), 0).matmul(B.to(devs()));
  EXPECT_EQ(zb.axis(), 0);
  expect_near_all(zb.data<float>(), wb, "batch-split @ replicated");
}

TEST_P(FrameworkMulti, Errors) {
  // Fewer elements on the axis than devices: refused with the shape.
  try {
    (void)Tensor::ones({1, 4}).shard(devs(), 0);
    FAIL() << "a device was left with nothing";
  } catch (const ShapeError& err) {
    EXPECT_NE(std::string(err.what()).find("(1, 4)"), std::string::npos) << err.what();
  }
  // Operands on different device lists.
  std::vector<std::string> other = devs();
  std::swap(other[0], other[1]);
  EXPECT_THROW((void)(Tensor::ones({4}).to(devs()) + Tensor::ones({4}).to(other)), InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Framework, FrameworkMulti, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "Devices"; });

// Two simulated GPUs of different drivers have no peer mapping: the check names both and says what to do, before
// any kernel runs (so this needs no kernel compiler).
TEST(FrameworkMultiReach, UnreachableDevicesNameBothAndTheWayOut) {
  const std::vector<std::string> sims = simulated_devices();
  auto has = [&](const std::string& d) { return std::find(sims.begin(), sims.end(), d) != sims.end(); };
  if (!has("SIM-AMD:gfx1100") || !has("SIM-NV:hopper")) GTEST_SKIP() << "this build has no SIM-AMD and SIM-NV";
  try {
    check_devices_reach({"SIM-AMD:gfx1100", "SIM-NV:hopper"});
    FAIL() << "an AMD and an NVIDIA GPU reached each other";
  } catch (const InvalidArgument& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("SIM-AMD:gfx1100"), std::string::npos) << msg;
    EXPECT_NE(msg.find("SIM-NV:hopper"), std::string::npos) << msg;
    EXPECT_NE(msg.find("to(\"CPU\")"), std::string::npos) << msg;
  }
  // A GPU and the CPU device reach each other (the GPU maps host memory).
  EXPECT_NO_THROW(check_devices_reach({"SIM-AMD:gfx1100", "CPU:0"}));
}

}  // namespace
}  // namespace hcq::multitest
