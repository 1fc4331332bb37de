// The golden NV pushbuffers of ../shared/vectors/nv (emitted by tinygrad, an independent implementation, for Ada's
// classes C56F/C9C0/C7B5) executed by the engine over test memory mapped at the addresses each case names, QMDs
// included: every case runs without a fault and leaves what tinygrad's mock saw (signal values, copied bytes,
// timestamps); the exec cases launch their QMD once with the grid tinygrad asked for.
#include <set>

#include "../amd/vectors.hpp"
#include "engine_fixture.hpp"

namespace hcq::sim::nv_engine::testing {
namespace {

using amd::testing::Json;

struct NvCase {
  std::string name;
  Json json;
  std::vector<uint32_t> words;
};

std::vector<NvCase> load_cases(const std::string& dir) {
  std::vector<NvCase> out;
  for (const char* name :
       {"nv_compute_signal", "nv_compute_wait", "nv_compute_timestamp", "nv_compute_memory_barrier", "nv_compute_exec",
        "nv_compute_exec_signal", "nv_copy_8", "nv_copy_signal", "nv_copy_wait"}) {
    NvCase c{name, Json::parse_file(dir + "/nv/" + name + ".json"), {}};
    c.words = amd::testing::dwords_of(c.json["dwords"]);
    out.push_back(std::move(c));
  }
  return out;
}

TEST(NvEngineGolden, VectorsExecuteAsTheMockSaw) {
  const std::optional<std::string> dir = amd::testing::vectors_dir();
  if (!dir) GTEST_SKIP() << "golden vectors not found (set HCQ_VECTORS_DIR)";
  const nv::NvArchInfo& ada = nv::arch_info(nv::NvArch::ada);
  for (const NvCase& c : load_cases(*dir)) {
    SCOPED_TRACE(c.name);
    const Json& dev = c.json["device"];
    ASSERT_EQ(dev["compute_class"].u64(), ada.classes.compute);
    ASSERT_EQ(dev["dma_class"].u64(), ada.classes.copy);
    ASSERT_EQ(dev["gpfifo_class"].u64(), ada.classes.gpfifo);

    TestHost host;
    host.allow_classes({ada.classes.compute, ada.classes.copy});
    // Memory at the case's own addresses (1 MiB blocks around each, so constant banks and QMDs fit).
    std::vector<uint64_t> addrs;
    for (const auto& [key, v] : c.json["addresses"].members()) addrs.push_back(v.u64());
    if (const Json* q = c.json.find("qmd")) addrs.push_back((*q)["va"].u64());
    if (const Json* p = c.json.find("program")) addrs.push_back((*p)["lib_gpu_va"].u64());
    std::set<uint64_t> blocks;
    for (uint64_t a : addrs)
      for (uint64_t b = a >> 20; b <= (a + 0x2000) >> 20; ++b) blocks.insert(b);
    for (uint64_t b : blocks) host.map(b << 20, 1 << 20);
    const Json& check = c.json["mock_check"];
    const Json& addresses = c.json["addresses"];
    if (check.has("precondition")) host.set<uint64_t>(addresses["sig.value_addr"].u64(), 7);
    if (c.name == "nv_copy_8")
      for (uint32_t i = 0; i < 8; ++i)
        host.set<uint8_t>(addresses["src.va_addr"].u64() + i, static_cast<uint8_t>(i + 1));
    if (const Json* q = c.json.find("qmd")) host.write((*q)["va"].u64(), amd::testing::dwords_of((*q)["raw_dwords"]));

    std::mutex mu;
    std::vector<Launch> launches;
    EngineOptions o;
    o.launch = [&](const Launch& l, ChannelHost&) {
      std::lock_guard<std::mutex> lk(mu);
      launches.push_back(l);
      return std::string();
    };
    EngineGroup group(o);
    const bool copy = c.json["queue"].str() == "dma";
    TestChannel ch(host, group, nv::NvArch::ada, copy ? NvEngineKind::copy : NvEngineKind::compute, 64);
    // tinygrad binds its classes once when it creates the channel: compute on subchannel 1, copy on 4.
    Push bind;
    bind.set_object(copy ? nv::pb::kCopySubchannel : nv::pb::kComputeSubchannel,
                    copy ? ada.classes.copy : ada.classes.compute);
    ch.submit(bind.w, false);
    ch.submit(c.words);
    ASSERT_EQ(ch.settle(), RunnerState::idle) << ch.runner().describe();
    EXPECT_TRUE(host.faults().empty()) << host.faults()[0].reason;
    EXPECT_EQ(ch.gpget(), 2u);

    if (check.has("sig.value_after")) {
      EXPECT_EQ(host.get<uint64_t>(addresses["sig.value_addr"].u64()), check["sig.value_after"].u64());
    }
    if (check.has("timestamp_written_nonzero")) {
      EXPECT_NE(host.get<uint64_t>(addresses["sig.timestamp_addr"].u64()), 0u);
    }
    if (c.name == "nv_copy_8") {
      for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(host.get<uint8_t>(addresses["dst.va_addr"].u64() + i), i + 1);
    }
    if (c.json.has("qmd")) {
      std::lock_guard<std::mutex> lk(mu);
      ASSERT_EQ(launches.size(), 1u);
      EXPECT_EQ(launches[0].qmd_va, c.json["qmd"]["va"].u64());
      EXPECT_EQ(launches[0].program_va, c.json["program"]["lib_gpu_va"].u64());
      EXPECT_EQ(launches[0].cbank0_va, c.json["kernargs"]["va"].u64());
      EXPECT_EQ(launches[0].groups, (std::array<uint32_t, 3>{2, 1, 1}));
      EXPECT_EQ(launches[0].local, (std::array<uint32_t, 3>{1, 1, 1}));
    }
  }
}

}  // namespace
}  // namespace hcq::sim::nv_engine::testing
