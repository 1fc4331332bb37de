// The golden command streams of ../shared/vectors/amd (emitted by tinygrad, an independent implementation) executed
// by the engines over test memory mapped at the addresses each case names: they run without a fault. One known
// doubt is checked as such: tinygrad's HDP-flush wait (function >= with reference 0xffffffff on a DONE register of
// 12 bits) can never be satisfied by a strict engine, which stalls on it; with the kernel's form of the same wait
// (== the requested bits) the stream runs to the end.
#include <set>
#include <thread>

#include "../amd/vectors.hpp"
#include "amd/encode.hpp"
#include "amd/pm4_facts.hpp"
#include "engine_fixture.hpp"

namespace hcq::sim::amd_engine::testing {
namespace {

using amd::testing::VectorCase;

// Index of tinygrad's unsatisfiable HDP wait in a PM4 stream, or -1.
long find_tinygrad_hdp_wait(const std::vector<uint32_t>& w, const amd::Target& t) {
  using namespace amd::pm4;
  for (size_t i = 0; i + 6 < w.size();) {
    const uint32_t h = w[i];
    if (kHdrType.get(h) != 3) return -1;
    const uint32_t n = (kHdrOpcode.get(h) == NOP && kHdrCount.get(h) == kNopCountHeaderOnly) ? 1 : kHdrCount.get(h) + 2;
    if (kHdrOpcode.get(h) == WAIT_REG_MEM && kWaitRegMemMem.find("mem_space")->get(w[i + 1]) == 0 &&
        w[i + 2] == t.hdp_flush_req && w[i + 4] == 0xffffffffu)
      return static_cast<long>(i);
    i += n;
  }
  return -1;
}

struct Outcome {
  RunnerState state;
  std::string describe;
  std::vector<DispatchInfo> dispatches;
};

Outcome run_case(const VectorCase& c, const std::vector<uint32_t>& words, TestHost& host) {
  const amd::Target& t = amd::Target::from_gfx(c.target);
  const amd::testing::Json& addrs = c.json["addresses"];
  std::set<uint64_t> pages;
  uint64_t size = 4096;
  if (const auto* s = addrs.find("size")) size = s->u64();
  for (const auto& [key, v] : addrs.members()) {
    if (!v.is_string() || v.str().rfind("0x", 0) != 0 || key == "size") continue;
    const uint64_t va = v.u64() & ~uint64_t{4095};
    const bool big = key == "src.va_addr" || key == "dst.va_addr";
    if (pages.insert(va).second) host.map(va, big ? std::max<uint64_t>(size, 8192) : 8192);
  }
  // Signals hold a large value so the cases' waits (>=) pass.
  for (const auto& [key, v] : addrs.members())
    if (key.size() > 11 && key.compare(key.size() - 11, 11, ".value_addr") == 0)
      host.set<uint32_t>(v.u64(), 0x7fffffff);
  // The bound IB case: its IB holds a signal of 9 (what tinygrad's mock saw).
  if (c.name == "pm4_bound_ib_submission") {
    std::vector<uint32_t> ib;
    amd::Pm4Encoder(t, ib).signal(addrs["sig.value_addr"].u64(), 9u);
    host.write(addrs["ib.va_addr"].u64(), ib);
  }
  std::mutex mu;
  Outcome out;
  EngineOptions o;
  o.dispatch = [&](const DispatchInfo& d, QueueHost&) {
    std::lock_guard<std::mutex> lk(mu);
    out.dispatches.push_back(d);
    return std::string();
  };
  EngineGroup group(o);
  const bool sdma = c.json["queue"].str() == "sdma";
  TestQueue q(host, group, t, sdma ? SimQueueType::sdma : SimQueueType::compute_pm4, 1 << 16);
  q.submit(words);
  out.state = q.settle();
  out.describe = q.runner().describe();
  std::lock_guard<std::mutex> lk(mu);
  return out;
}

TEST(AmdEngineGolden, VectorsExecuteWithoutFault) {
  const std::optional<std::string> dir = amd::testing::vectors_dir();
  if (!dir) GTEST_SKIP() << "golden vectors not found: set HCQ_VECTORS_DIR to shared/vectors";
  const std::vector<VectorCase> cases = amd::testing::load_amd_cases(*dir);
  ASSERT_FALSE(cases.empty());
  int ran = 0, stalled_on_hdp = 0;
  for (const VectorCase& c : cases) {
    SCOPED_TRACE(c.target + "/" + c.name);
    const amd::Target& t = amd::Target::from_gfx(c.target);
    std::vector<uint32_t> words = c.bin;
    const bool sdma = c.json["queue"].str() == "sdma";
    const long hdp = sdma ? -1 : find_tinygrad_hdp_wait(words, t);
    if (hdp >= 0) {
      TestHost host;
      const Outcome stalled = run_case(c, words, host);
      EXPECT_EQ(stalled.state, RunnerState::waiting) << stalled.describe;
      EXPECT_NE(stalled.describe.find("BIF_BX_PF0_GPU_HDP_FLUSH_DONE"), std::string::npos) << stalled.describe;
      ++stalled_on_hdp;
      // The kernel's form: == the requested bits.
      words[hdp + 1] = (words[hdp + 1] & ~amd::pm4::kWaitRegMemReg.find("function")->place(7)) |
                       amd::pm4::kWaitRegMemReg.find("function")->place(amd::pm4::FN_EQ);
      words[hdp + 4] = t.hdp_flush_mask;
      words[hdp + 5] = t.hdp_flush_mask;
    }
    TestHost host;
    const Outcome r = run_case(c, words, host);
    EXPECT_EQ(r.state, RunnerState::idle) << r.describe;
    EXPECT_TRUE(host.faults().empty()) << (host.faults().empty() ? "" : host.faults()[0].reason);
    const amd::testing::Json& addrs = c.json["addresses"];
    if (c.name == "pm4_exec" || c.name == "pm4_launch_submission") {
      ASSERT_EQ(r.dispatches.size(), 1u);
      const DispatchInfo& d = r.dispatches[0];
      EXPECT_EQ(d.code_addr, addrs["prog_addr"].u64());
      if (addrs.has("kernargs.va_addr")) {
        EXPECT_EQ(d.kernarg_addr, addrs["kernargs.va_addr"].u64());
      }
      EXPECT_EQ(d.groups, (std::array<uint32_t, 3>{2, 1, 1}));
      EXPECT_EQ(d.local, (std::array<uint32_t, 3>{1, 1, 1}));
    }
    if (c.name == "pm4_bound_ib_submission") {
      EXPECT_EQ(host.get<uint32_t>(addrs["sig.value_addr"].u64()), 9u);
    }
    if (c.name.find("copy_8") != std::string::npos) {
      EXPECT_EQ(host.get<uint64_t>(addrs["dst.va_addr"].u64()), host.get<uint64_t>(addrs["src.va_addr"].u64()));
    }
    if (c.name.find("signal_timeline") != std::string::npos || c.name.find("launch") != std::string::npos ||
        c.name.find("copyin") != std::string::npos) {
      EXPECT_EQ(host.interrupts(), std::vector<uint32_t>{static_cast<uint32_t>(addrs["queue_event.event_id"].u64())});
    }
    ++ran;
  }
  EXPECT_GE(ran, 28);
  EXPECT_EQ(stalled_on_hdp, 4) << "pm4_memory_barrier and pm4_launch_submission on both targets";
}

}  // namespace
}  // namespace hcq::sim::amd_engine::testing
