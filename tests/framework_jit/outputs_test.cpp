// TinyJit's per-call outputs: each call's are tensors the caller may keep; the memory of outputs the caller has let go
// of is taken over by the next call (framework/jit/replay.cpp, Replay::fresh_output) instead of freed and allocated
// again. Expected values are worked by hand (2x + 1 on small integers, exact in float32).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "framework/engine/realize.hpp"
#include "hcq/buffer.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

// The device address of a realized tensor's memory.
uint64_t address_of(const Tensor& t) {
  fw::Node n = t.node();
  while (fw::Node done = n->realized()) n = done;
  if (n->op == fw::Op::RESHAPE) n = n->src[0];
  EXPECT_EQ(n->op, fw::Op::BUFFER);
  EXPECT_TRUE(n->payload);
  return n->payload ? n->payload->va() : 0;
}

Tensor input(float base) { return Tensor(std::vector<float>{base, base + 1, base + 2, base + 3}, {4}).realize(); }
std::vector<float> twice_plus_one(float base) { return {2 * base + 1, 2 * base + 3, 2 * base + 5, 2 * base + 7}; }

TEST(FrameworkJitOutputs, DroppedOutputsAreReusedKeptOnesAreNot) {
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2 + 1}; });
  for (float b : {0.0f, 10.0f}) EXPECT_EQ(jit({input(b)})[0].data<float>(), twice_plus_one(b));  // run, capture

  // Dropped: the next call writes the same memory.
  uint64_t dropped = 0;
  {
    std::vector<Tensor> out = jit({input(20)});
    EXPECT_EQ(out[0].data<float>(), twice_plus_one(20));
    dropped = address_of(out[0]);
  }
  std::vector<Tensor> kept = jit({input(30)});
  EXPECT_EQ(address_of(kept[0]), dropped) << "the memory of the output the caller dropped was not reused";
  EXPECT_EQ(kept[0].data<float>(), twice_plus_one(30));

  // Kept: the next call gets other memory, and the kept tensor keeps its values.
  std::vector<Tensor> next = jit({input(40)});
  EXPECT_NE(address_of(next[0]), address_of(kept[0]));
  EXPECT_EQ(next[0].data<float>(), twice_plus_one(40));
  EXPECT_EQ(kept[0].data<float>(), twice_plus_one(30)) << "a kept output was overwritten by a later call";

  // Held only by a lazy tensor built on it (the output tensor itself dropped): still in use, not reused.
  const uint64_t under_lazy = address_of(next[0]);
  Tensor lazy = next[0] * 10;
  next.clear();
  std::vector<Tensor> after = jit({input(50)});
  EXPECT_NE(address_of(after[0]), under_lazy);
  EXPECT_EQ(after[0].data<float>(), twice_plus_one(50));
  std::vector<float> want;
  for (float v : twice_plus_one(40)) want.push_back(v * 10);
  EXPECT_EQ(lazy.data<float>(), want) << "the output under a lazy tensor was overwritten by a later call";
}

// A view of a returned tensor (a reshape the caller keeps, the tensor itself dropped) holds the memory too.
TEST(FrameworkJitOutputs, AKeptReshapeHoldsTheMemory) {
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2 + 1}; });
  for (float b : {0.0f, 10.0f}) (void)jit({input(b)});
  Tensor square = jit({input(20)})[0].reshape({2, 2});
  std::vector<Tensor> out = jit({input(30)});
  EXPECT_EQ(out[0].data<float>(), twice_plus_one(30));
  EXPECT_EQ(square.data<float>(), twice_plus_one(20));
}

}  // namespace
}  // namespace hcq
