// RM_ALLOC, one handler per kind of object: the table in sim_nv_rm.cpp picks the handler for the class's kind, after
// the checks every class shares (class known and supported by the GPU, parent, handle, parameter size). Address
// spaces and memory are in sim_nv_rm_alloc_memory.cpp, channels and engines in sim_nv_rm_alloc_engines.cpp.
#pragma once

#include "sim/nv/sim_nv_state.hpp"

namespace hcq::sim {

// One allocation being handled, under the state's lock: the object is filled in (its payload) and inserted by the
// caller when the handler returns NV_OK. params is the caller's block, of the class's size (null where optional).
struct RmAllocRequest {
  SimNv::State& state;
  RmHandle client;
  const RmObject& parent;
  RmObject& obj;
  void* params;
  NvGpu& gpu;
};

using RmAllocHandler = RmStatus (*)(RmAllocRequest& r);

RmStatus alloc_vaspace(RmAllocRequest& r);
RmStatus alloc_memory_virtual(RmAllocRequest& r);
RmStatus alloc_memory(RmAllocRequest& r);  // NV01_MEMORY_LOCAL_USER, NV01_MEMORY_SYSTEM
RmStatus alloc_channel_group(RmAllocRequest& r);
RmStatus alloc_context_share(RmAllocRequest& r);
RmStatus alloc_channel(RmAllocRequest& r);
RmStatus alloc_engine_object(RmAllocRequest& r);  // compute and copy classes
RmStatus alloc_debugger(RmAllocRequest& r);

}  // namespace hcq::sim
