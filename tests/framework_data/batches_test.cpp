// BatchSampler and make_batch: permutations, the last-batch policies, and the pixels and labels of a batch against
// values computed here from the synthetic images.
#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework_data/data_test_util.hpp"
#include "hcq/datasets.hpp"

namespace hcq {
namespace {

using datatest::message_of;

// n images of 2 x 3 whose pixel p of image i is i * 10 + p, label i % 10.
LabelledImages tiny(int64_t n) {
  LabelledImages d;
  d.count = n;
  d.rows = 2;
  d.cols = 3;
  for (int64_t i = 0; i < n; ++i) {
    for (int p = 0; p < 6; ++p) d.pixels.push_back(static_cast<uint8_t>(i * 10 + p));
    d.labels.push_back(static_cast<uint8_t>(i % 10));
  }
  return d;
}

TEST(FrameworkDataBatches, ShuffledIsAPermutationPerEpochAndDropsTheLastPartialBatch) {
  const BatchSampler s(10, 3, /*seed=*/42);
  EXPECT_EQ(s.batches_per_epoch(), 3);  // 10 / 3: one image left over each epoch
  const std::vector<int64_t> p0 = s.permutation(0), p1 = s.permutation(1);
  std::vector<int64_t> sorted = p0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(10);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(p0, p1);                                      // a fresh order each epoch
  EXPECT_EQ(p0, BatchSampler(10, 3, 42).permutation(0));  // a function of (seed, epoch) only
  EXPECT_NE(p0, BatchSampler(10, 3, 43).permutation(0));
  std::set<int64_t> seen;
  for (int64_t i = 0; i < s.batches_per_epoch(); ++i) {
    const std::vector<int64_t> b = s.batch(0, i);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(s.valid(i), 3);
    EXPECT_EQ(b, std::vector<int64_t>(p0.begin() + i * 3, p0.begin() + i * 3 + 3));
    seen.insert(b.begin(), b.end());
  }
  EXPECT_EQ(seen.size(), 9u);  // distinct: no image twice in an epoch
  EXPECT_EQ(seen.count(p0[9]), 0u);
}

// The shuffle is uniform enough that over many epochs each image lands in each position about equally: 4000 epochs
// of 4 images put each in the first slot 1000 +- ~4 sigma (sigma = sqrt(4000 * 1/4 * 3/4) = 27).
TEST(FrameworkDataBatches, ShuffleIsNotBiased) {
  const BatchSampler s(4, 1, 7);
  std::vector<int> first(4);
  for (int e = 0; e < 4000; ++e) ++first[static_cast<size_t>(s.permutation(e)[0])];
  for (int c : first) EXPECT_NEAR(c, 1000, 110);
}

TEST(FrameworkDataBatches, SequentialPadsTheLastBatch) {
  const BatchSampler s(5, 2, 0, BatchSampler::Order::sequential);
  EXPECT_EQ(s.batches_per_epoch(), 3);
  EXPECT_EQ(s.batch(0, 0), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.batch(3, 2), (std::vector<int64_t>{4, 0}));  // padded with image 0; any epoch is the same order
  EXPECT_EQ(s.valid(1), 2);
  EXPECT_EQ(s.valid(2), 1);
}

TEST(FrameworkDataBatches, BadArguments) {
  EXPECT_EQ(message_of<InvalidArgument>([] { BatchSampler(10, 0, 0); }),
            "BatchSampler: batch size 0 must be at least 1");
  EXPECT_EQ(message_of<InvalidArgument>([] { BatchSampler(10, 11, 0); }),
            "BatchSampler: 10 examples make no full batch of 11 (shuffled order drops the last partial batch)");
  EXPECT_EQ(message_of<InvalidArgument>([] { BatchSampler(10, 3, 0).batch(0, 3); }),
            "BatchSampler: batch 3 of an epoch of 3 batches");
  const LabelledImages d = tiny(3);
  const std::vector<int64_t> bad{0, 3};
  EXPECT_EQ(message_of<InvalidArgument>([&] { make_batch(d, bad); }),
            "gather_batch: index 3 (row 1) outside the 3 images");
}

TEST(FrameworkDataBatches, MakeBatchPixelsAndLabels) {
  const LabelledImages d = tiny(12);
  const std::vector<int64_t> idx{11, 2};
  const Batch b = make_batch(d, idx, PixelFormat::unit_float, "CPU");
  EXPECT_EQ(b.images.shape(), (Shape{2, 1, 2, 3}));
  EXPECT_EQ(b.images.dtype(), DType::float32);
  EXPECT_EQ(b.labels.shape(), (Shape{2}));
  EXPECT_EQ(b.labels.dtype(), DType::int32);
  EXPECT_EQ(b.valid, 2);
  const std::vector<float> px = b.images.data<float>();
  for (int p = 0; p < 6; ++p) {
    EXPECT_FLOAT_EQ(px[static_cast<size_t>(p)], static_cast<float>(110 + p) / 255.0f);
    EXPECT_FLOAT_EQ(px[static_cast<size_t>(6 + p)], static_cast<float>(20 + p) / 255.0f);
  }
  EXPECT_EQ(b.labels.data<int32_t>(), (std::vector<int32_t>{1, 2}));

  const Batch raw = make_batch(d, idx, PixelFormat::raw_float, "CPU", 1);
  EXPECT_EQ(raw.valid, 1);
  EXPECT_EQ(raw.images.data<float>()[0], 110.0f);
  const Batch u8 = make_batch(d, idx, PixelFormat::uint8, "CPU");
  EXPECT_EQ(u8.images.dtype(), DType::uint8);
  EXPECT_EQ(u8.images.data<uint8_t>(), (std::vector<uint8_t>{110, 111, 112, 113, 114, 115, 20, 21, 22, 23, 24, 25}));
}

}  // namespace
}  // namespace hcq
