// Everything a user's program needs: #include <hcq/hcq.hpp>.
// Who owns what is said in each header this one includes.
#pragma once

#include "hcq/allocator.hpp"
#include "hcq/buffer.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/graph.hpp"
#include "hcq/hw_queue.hpp"
#include "hcq/knobs.hpp"
#include "hcq/memory.hpp"
#include "hcq/program.hpp"
#include "hcq/registry.hpp"
#include "hcq/signal.hpp"
#include "hcq/sym.hpp"
