#include "graph/graph_fixture.hpp"
#include "common/timeline.hpp"

#include <cctype>
#include <map>
#include <mutex>
#include <random>

namespace hcq::graph_test {

std::vector<std::string> graph_device_sets() {
  std::vector<std::string> sets;
  for (const auto& d : conformance::conformance_devices()) {
    sets.push_back(d.name);
    if (d.peer) sets.push_back(d.name + "+" + *d.peer);
  }
  return sets;
}

std::string device_set_param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  return name;
}

void run_eager(const std::vector<GraphCall>& calls, std::span<const uint64_t> vars) {
  for (const GraphCall& call : calls) {
    if (const auto* k = std::get_if<KernelCall>(&call)) {
      std::vector<uint64_t> addrs;
      std::vector<uint32_t> vals;
      for (const BufferUse& b : k->bufs) addrs.push_back(b.addr.eval(vars));
      for (const Sym& v : k->vals) vals.push_back(static_cast<uint32_t>(v.eval(vars)));
      std::array<uint32_t, 3> g{}, l{};
      for (int i = 0; i < 3; ++i) {
        g[i] = static_cast<uint32_t>(k->global[i].eval(vars));
        l[i] = static_cast<uint32_t>(k->local[i].eval(vars));
      }
      (*k->program)(addrs, vals, g, l);
      k->program->device().synchronize();
    } else {
      const auto& c = std::get<CopyCall>(call);
      Device& d = *c.device;
      auto q = d.info().copy_queues > 0 ? d.copy_queue() : d.compute_queue();
      q->wait(d.timeline_signal(), d.timeline_value() - 1);
      q->copy(c.dst.eval(vars), c.src.eval(vars), c.size);
      q->signal(d.timeline_signal(), d.timeline_value());
      q->submit();
      hcq::test::take_timeline_value(d);
      d.synchronize();
    }
  }
}

void GraphFixture::SetUp() {
  std::string rest = GetParam();
  while (!rest.empty()) {
    const size_t plus = rest.find('+');
    devs_.push_back(&open_device(rest.substr(0, plus)));
    rest = plus == std::string::npos ? "" : rest.substr(plus + 1);
  }
  for (Device* d : devs_) d->synchronize();
}

void GraphFixture::TearDown() {
  mem_.clear();
  for (Device* d : devs_) {
    EXPECT_NO_THROW(d->synchronize()) << d->name() << " after the test";
    EXPECT_FALSE(d->has_error()) << d->name() << " has a sticky error after the test";
  }
}

const conformance::ConformanceKernels& GraphFixture::kernels(Device& d) const {
  return conformance::device_kind(d.info().interface).kernels;
}

std::unique_ptr<Program> GraphFixture::load(Device& d, const conformance::KernelSource& k) const {
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, std::vector<uint8_t>> binaries;
  Compiler& compiler = d.compiler();
  std::pair<std::string, std::string> key{compiler.identity() + "/" + compiler.target() + "/" + compiler.options(),
                                          k.source};
  std::vector<uint8_t> binary;
  {
    std::lock_guard lock(mu);
    auto it = binaries.find(key);
    if (it == binaries.end()) it = binaries.emplace(key, compiler.compile_cached(k.source)).first;
    binary = it->second;
  }
  return d.load_program(k.name, binary);
}

conformance::DeviceMemory& GraphFixture::memory(size_t owner, uint64_t size) {
  Device& d = dev(owner);
  mem_.push_back(std::make_unique<conformance::DeviceMemory>(d, size, BufferSpec{.nolru = true}));
  for (Device* other : devs_)
    if (other != &d) other->map_memory(mem_.back()->allocation());
  return *mem_.back();
}

std::vector<uint32_t> GraphFixture::snapshot() const {
  std::vector<uint32_t> words;
  for (const auto& m : mem_) {
    auto part = m->download_as<uint32_t>(m->size() / 4);
    words.insert(words.end(), part.begin(), part.end());
  }
  return words;
}

void GraphFixture::restore(const std::vector<uint32_t>& words) {
  size_t at = 0;
  for (const auto& m : mem_) {
    const size_t n = m->size() / 4;
    m->upload_as(std::vector<uint32_t>(words.begin() + at, words.begin() + at + n));
    at += n;
  }
  // An upload may still be in flight on its owner's copy queue, and an eager launch on another device waits only
  // for its own timeline.
  for (Device* d : devs_) d->synchronize();
}

void GraphFixture::fill_random(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> words(snapshot().size());
  for (uint32_t& w : words) w = static_cast<uint32_t>(rng());
  restore(words);
}

}  // namespace hcq::graph_test
