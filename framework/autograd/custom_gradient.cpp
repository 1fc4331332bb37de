#include "framework/autograd/custom_gradient.hpp"

#include <mutex>

#include "hcq/error.hpp"

namespace hcq::fw {

namespace {

std::mutex g_mu;
std::vector<CustomGradientRule>& rules() {
  static std::vector<CustomGradientRule> r;
  return r;
}

}  // namespace

int64_t register_custom_gradient(CustomGradientRule rule) {
  std::lock_guard lock(g_mu);
  rules().push_back(rule);
  return static_cast<int64_t>(rules().size() - 1);
}

Node with_custom_gradient(const Node& value, std::vector<Node> inputs, int64_t rule, std::vector<int64_t> args) {
  std::vector<Node> src{value};
  src.insert(src.end(), inputs.begin(), inputs.end());
  args.insert(args.begin(), rule);
  return make_node(Op::CUSTOM_GRAD, value->dtype, std::move(src), std::move(args));
}

std::vector<Node> custom_gradient(const Node& n, const Node& g) {
  CustomGradientRule rule = nullptr;
  {
    std::lock_guard lock(g_mu);
    const int64_t k = n->i.at(0);
    if (k < 0 || k >= static_cast<int64_t>(rules().size()))
      throw InvalidArgument(
          cat("autograd: a CUSTOM_GRAD node names gradient rule ", k, ", and ", rules().size(), " are registered"));
    rule = rules()[static_cast<size_t>(k)];
  }
  std::vector<Node> out{nullptr};
  const std::vector<Node> inputs = rule(n, g);
  out.insert(out.end(), inputs.begin(), inputs.end());
  return out;
}

}  // namespace hcq::fw
