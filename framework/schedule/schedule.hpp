// A schedule: the ordered kernels and copies that realize a set of tensor-level roots, on numbered buffer slots.
// It depends on the structure of the graph only (framework.md, contract 3): the roots are first callified (their
// buffers become PARAMs), and the schedule built for that parameterised graph is cached and reused for any graph
// of the same structure on other buffers.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

struct CompiledKernel;

// A buffer of one run. Slots [0, num_params) are the call's parameters (the callified buffers, in order); then
// one per root that needs a new buffer (outputs); then the temporaries, placed in their device's arena.
struct Slot {
  enum class Role : uint8_t { param, output, temp } role;
  std::string device;
  DType dtype;
  int64_t numel;
  int arena = -1;       // temp: index into Schedule::arenas
  uint64_t offset = 0;  // temp: byte offset in that arena
};

struct Arena {
  std::string device;
  uint64_t bytes = 0;
};

struct Step {
  enum class Kind : uint8_t { kernel, copy } kind;
  std::vector<uint32_t> slots;  // kernel: its buffer arguments (output first); copy: {destination, source}
  std::vector<uint32_t> vals;   // kernel: its 32-bit values, each the number of one of the call's variables
  std::shared_ptr<const CompiledKernel> kernel;  // kernel steps
  std::array<uint32_t, 3> global{1, 1, 1}, local{1, 1, 1};
  std::string device;  // where it runs (copy: the destination)
  std::string what;    // kernel steps: "name (the tensor op it computes)", for fault messages
};

struct Schedule {
  std::vector<Slot> slots;
  size_t num_params = 0;
  // The call's variables (VAR_PARAMs), by number: each one's DEFINE_VAR. Their values come with each call.
  std::vector<Node> vars;
  std::vector<Arena> arenas;
  std::vector<Step> steps;
  // For each root: the slot that holds its value afterwards (a param slot for an assign or a root that is a
  // parameter already), and the root's shape (the result is that slot's buffer viewed with this shape).
  std::vector<uint32_t> root_slots;
  // Debug (HCQ_DEBUG=5): the parameterised graph and each kernel's AST.
  std::vector<Node> kernel_asts;
};

// Builds the schedule of a callified SINK (sources: the roots). Compiles the kernels it needs (engine).
// Throws InvalidArgument for a cycle (naming the buffers), DTypeError for a dtype the device cannot run.
std::shared_ptr<const Schedule> build_schedule(const Node& sink);

}  // namespace hcq::fw
