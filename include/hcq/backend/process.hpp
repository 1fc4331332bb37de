// What one process shares among all devices: the unified VA reservation and the signal pool.
#pragma once

#include <memory>

#include "hcq/backend/signal_pool.hpp"
#include "hcq/backend/va_space.hpp"

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
