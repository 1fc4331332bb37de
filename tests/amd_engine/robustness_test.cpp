// Random words on a ring give a fault, a completion or a wait, never a crash or an out-of-bounds access (run it
// under ASan). Headers are biased towards the packets the engines execute so that their field checks are reached.
#include <random>

#include "amd/aql_facts.hpp"
#include "amd/encode.hpp"
#include "amd/pm4_facts.hpp"
#include "amd/sdma_facts.hpp"
#include "engine_fixture.hpp"

namespace hcq::sim::amd_engine::testing {
namespace {

uint32_t random_header(std::mt19937& rng, SimQueueType type) {
  std::uniform_int_distribution<uint32_t> any;
  const uint32_t r = any(rng);
  switch (type) {
    case SimQueueType::compute_pm4: {
      static constexpr uint8_t kOps[] = {amd::pm4::NOP,         amd::pm4::RELEASE_MEM,     amd::pm4::ACQUIRE_MEM,
                                         amd::pm4::EVENT_WRITE, amd::pm4::WAIT_REG_MEM,    amd::pm4::WRITE_DATA,
                                         amd::pm4::SET_SH_REG,  amd::pm4::DISPATCH_DIRECT, amd::pm4::INDIRECT_BUFFER};
      if (r % 4 == 0) return r;
      return amd::pm4::header(kOps[(r >> 8) % std::size(kOps)], 1 + (r >> 16) % 9);
    }
    case SimQueueType::sdma:
      if (r % 4 == 0) return r;
      return amd::sdma::kHdrOp.place((r >> 8) % 16) | amd::sdma::kHdrSubOp.place((r >> 12) % 3) |
             (r & 0xffff0000u & ((r & 1) ? 0xffffffffu : 0x000f0000u));
    case SimQueueType::compute_aql: return (r & 0xffff0000u) | amd::aql::kType.place((r >> 4) % 7);
  }
  return r;
}

void fuzz(SimQueueType type, const char* gfx, int iterations, Scheduling scheduling) {
  const amd::Target& t = amd::Target::from_gfx(gfx);
  std::mt19937 rng(1234 + static_cast<int>(type));
  std::uniform_int_distribution<uint32_t> any;
  EngineOptions o;
  o.scheduling = scheduling;
  o.dispatch = [](const DispatchInfo&, QueueHost&) { return std::string(); };
  EngineGroup group(o);
  int faulted = 0, completed = 0, waited = 0;
  for (int it = 0; it < iterations; ++it) {
    TestHost host;
    host.map(kDataVa, 1 << 16);
    TestQueue q(host, group, t, type, 1024);
    const size_t unit_words = type == SimQueueType::compute_aql ? 16 : 1;
    const size_t n = unit_words * (1 + any(rng) % (type == SimQueueType::compute_aql ? 8 : 200));
    std::vector<uint32_t> w(n);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t r = any(rng);
      // Some operands point into mapped memory, so packets get past their address checks.
      w[i] = r % 5 == 0 ? static_cast<uint32_t>(kDataVa + (r >> 8) % 4096 * 4) : r % 5 == 1 ? 0 : r;
    }
    for (size_t i = 0; i < n; i += unit_words * (type == SimQueueType::compute_aql ? 1 : 1 + any(rng) % 8))
      w[i] = random_header(rng, type);
    if (it % 2 && type != SimQueueType::compute_aql) {
      // Mutation: a valid stream with a few words replaced.
      w.clear();
      if (type == SimQueueType::compute_pm4) {
        amd::Pm4Encoder e(t, w);
        e.signal(kDataVa, 1u);
        e.timestamp(kDataVa + 8);
        e.memory_barrier();
        e.write(kDataVa + 16, 2u, false);
      } else {
        amd::SdmaEncoder e(t, w);
        e.copy(kDataVa + 0x1000, kDataVa, 256);
        e.fence(kDataVa, 1u);
        e.timestamp(kDataVa + 8);
      }
      for (int m = 0, k = 1 + static_cast<int>(any(rng) % 3); m < k; ++m) {
        const uint32_t r = any(rng);
        w[r % w.size()] = (r & 8) ? w[r % w.size()] ^ (1u << (r >> 27)) : any(rng);
      }
    }
    q.submit(w);
    ASSERT_TRUE(q.runner().wait_settled(std::chrono::seconds(10))) << q.runner().describe();
    switch (q.runner().state()) {
      case RunnerState::faulted:
        ++faulted;
        EXPECT_FALSE(q.runner().fault().reason.empty());
        EXPECT_EQ(host.faults().size(), 1u);
        break;
      case RunnerState::idle: ++completed; break;
      case RunnerState::waiting: ++waited; break;
      case RunnerState::running: ADD_FAILURE() << "settled while running"; break;
    }
  }
  EXPECT_GT(faulted, 0);
  ::testing::Test::RecordProperty(std::string("outcomes_") + gfx, std::to_string(faulted) + " faulted, " +
                                                                      std::to_string(completed) + " completed, " +
                                                                      std::to_string(waited) + " waiting");
}

TEST(AmdEngineRobustness, RandomPm4Words) {
  fuzz(SimQueueType::compute_pm4, "gfx1100", 300, Scheduling::threaded);
  fuzz(SimQueueType::compute_pm4, "gfx942", 100, Scheduling::deterministic);
}
TEST(AmdEngineRobustness, RandomSdmaWords) {
  fuzz(SimQueueType::sdma, "gfx1201", 300, Scheduling::threaded);
  fuzz(SimQueueType::sdma, "gfx942", 100, Scheduling::deterministic);
}
TEST(AmdEngineRobustness, RandomAqlPackets) { fuzz(SimQueueType::compute_aql, "gfx942", 300, Scheduling::threaded); }

}  // namespace
}  // namespace hcq::sim::amd_engine::testing
