#include "sim/nv/nvproxy_refusals.hpp"

#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/debugger.hpp"
#include "nv/rm/abi/ioctl.hpp"

namespace hcq::sim::nvproxy {

namespace {
constexpr uint32_t kAmpereUsermodeA = 0xc561;  // clc561.h
}  // namespace

bool refuses_escape(uint32_t escape) {
  switch (escape) {
    case nv::abi::esc::rm_map_memory_dma:
    case nv::abi::esc::rm_unmap_memory_dma:
    case nv::abi::esc::status_code: return true;
    default: return false;
  }
}

bool refuses_class(uint32_t class_id) {
  return class_id == nv::abi::cls::memory_virtual || class_id == kAmpereUsermodeA;
}

bool refuses_control(uint32_t cmd) {
  return cmd == nv::abi::ctrl::debug_read_mmu_fault_info || cmd == nv::abi::ctrl::system_get_build_version_v2;
}

}  // namespace hcq::sim::nvproxy
