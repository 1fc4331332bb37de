// What the graph tests share: the device sets they run on (every conformance device alone, and with its peer when
// it has one: a new backend added to tests/conformance/devices.cpp is picked up here), an eager executor of a call
// list (the reference a replay must match), and device memory that can be filled, saved and compared.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conformance/devices.hpp"
#include "conformance/fixture.hpp"
#include "hcq/hcq.hpp"

namespace hcq::graph_test {

// "CPU:0" or "CPU:0+CPU:1": the devices of one test instance.
std::vector<std::string> graph_device_sets();
std::string device_set_param_name(const ::testing::TestParamInfo<std::string>& info);

// Runs the calls one by one, in order, each to completion before the next (kernels through Program::operator(),
// copies on a fresh queue of the call's device): the plain meaning of the call list.
void run_eager(const std::vector<GraphCall>& calls, std::span<const uint64_t> vars);

class GraphFixture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;

  const std::vector<Device*>& devs() const { return devs_; }
  Device& dev(size_t i) const { return *devs_[i % devs_.size()]; }
  // A kernel of the conformance set, compiled (cached for the process) and loaded on `d`.
  std::unique_ptr<Program> load(Device& d, const conformance::KernelSource& k) const;
  const conformance::ConformanceKernels& kernels(Device& d) const;

  // Device memory on devs()[owner % n], mapped on every device of the set.
  conformance::DeviceMemory& memory(size_t owner, uint64_t size);
  // Every word of every memory() allocation, in allocation order.
  std::vector<uint32_t> snapshot() const;
  void restore(const std::vector<uint32_t>& words);
  void fill_random(uint64_t seed);

 private:
  std::vector<Device*> devs_;
  std::vector<std::unique_ptr<conformance::DeviceMemory>> mem_;
};

#define HCQ_GRAPH_INSTANTIATE(Suite)                                                                  \
  INSTANTIATE_TEST_SUITE_P(Graph, Suite, ::testing::ValuesIn(::hcq::graph_test::graph_device_sets()), \
                           ::hcq::graph_test::device_set_param_name)

}  // namespace hcq::graph_test
