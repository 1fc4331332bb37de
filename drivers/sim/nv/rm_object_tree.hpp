// The simulated RM's resource server: clients and the objects under them, with the checks RM makes on every
// allocation and free (rmapi/alloc_free.c, resserv/rs_client.c): the client exists, the parent exists and is of a
// kind the class may live under (resource_list.h), the new handle is free, single-instance classes are single.
// It knows object kinds, not class ids: the driver maps a class to its kind after checking the GPU supports it.
// Not thread-safe: the driver holds its lock around every call.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "nv/rm/abi/ioctl.hpp"

namespace hcq::sim {

using RmHandle = nv::abi::Handle;
using RmStatus = nv::abi::NvStatus;

enum class RmKind : uint8_t {
  client,                // NV01_ROOT_CLIENT
  device,                // NV01_DEVICE_0
  subdevice,             // NV20_SUBDEVICE_0
  usermode,              // *_USERMODE_A: the doorbell page
  vaspace,               // FERMI_VASPACE_A
  channel_group,         // KEPLER_CHANNEL_GROUP_A (TSG)
  context_share,         // FERMI_CONTEXT_SHARE_A (subcontext)
  channel,               // *_CHANNEL_GPFIFO_*
  compute,               // *_COMPUTE_*: an engine object on a channel
  copy,                  // *_DMA_COPY_*: an engine object on a channel
  memory_system,         // NV01_MEMORY_SYSTEM
  memory_local,          // NV01_MEMORY_LOCAL_USER (VRAM)
  memory_os_descriptor,  // NV01_MEMORY_SYSTEM_OS_DESCRIPTOR
  memory_virtual,        // NV01_MEMORY_VIRTUAL
  debugger,              // GT200_DEBUGGER: an SM debugger session on a compute object
};

const char* to_string(RmKind k);
// The kinds an object of kind `k` may be allocated under (resource_list.h "Parents"); empty for the client.
std::span<const RmKind> allowed_parents(RmKind k);

// What the driver hangs on an object (memory, channel state, ...). Destroyed when the object is freed.
struct RmPayload {
  virtual ~RmPayload() = default;
};

struct RmObject {
  RmHandle handle = 0, parent = 0;  // the client object's parent is 0
  uint32_t class_id = 0;
  RmKind kind = RmKind::client;
  int gpu = -1;  // the GPU index of the device this object lives under; -1 for the client
  std::shared_ptr<RmPayload> payload;
};

class RmObjectTree {
 public:
  // NV01_ROOT_CLIENT: `requested` 0 lets RM pick (0xc1d00000 + n). `owner` is the driver file that allocated it:
  // closing that file frees the client.
  RmStatus new_client(RmHandle requested, int owner, RmHandle* out);

  // The checks of an allocation of `kind` under (client, parent), in RM's order. On success *handle holds the
  // handle to use (RM picks one when 0 was asked for) and *parent_out the parent object.
  RmStatus check_alloc(RmHandle client, RmHandle parent, RmKind kind, RmHandle* handle,
                       const RmObject** parent_out) const;
  // Adds an object check_alloc accepted.
  void insert(RmHandle client, RmObject object);

  RmObject* find(RmHandle client, RmHandle handle);
  const RmObject* find(RmHandle client, RmHandle handle) const;
  bool client_exists(RmHandle client) const { return clients_.count(client) != 0; }
  // The nearest ancestor of `handle` (itself included) of kind `k`, or nullptr.
  const RmObject* ancestor(RmHandle client, RmHandle handle, RmKind k) const;
  std::vector<const RmObject*> children(RmHandle client, RmHandle handle) const;

  // RM_FREE: frees `handle` and everything under it (children first); freeing the client handle frees the
  // client. The removed objects are appended to `removed` (children before parents) so the driver can release
  // their payloads outside its lock.
  RmStatus free(RmHandle client, RmHandle handle, std::vector<RmObject>& removed);
  // Frees every client `owner` allocated.
  void free_owned_by(int owner, std::vector<RmObject>& removed);

 private:
  struct Client {
    int owner = -1;
    std::map<RmHandle, RmObject> objects;  // the client object included
    mutable uint32_t next_handle = 0;      // the next RM-picked object handle to try
  };
  void free_subtree(Client& c, RmHandle handle, std::vector<RmObject>& removed);

  std::map<RmHandle, Client> clients_;
  uint32_t next_client_ = 0;
};

}  // namespace hcq::sim
