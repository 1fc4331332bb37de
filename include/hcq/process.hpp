// What one process shares among all devices: the unified VA reservation and the signal pool.
#pragma once

#include <memory>

namespace hcq {

class VaSpace;
class SignalPool;

struct Process {
  VaSpace& va;
  SignalPool& signals;
};

// Created on first use (reserving the VA space through real_os()); lives until exit.
Process& process();

}  // namespace hcq
