// The simulated RM's resource server. Statuses and their order follow rmapi/alloc_free.c (serverAllocResource-
// UnderLock) and resserv/rs_client.c (clientValidateNewResourceHandle, clientGetResourceRef).
#include "sim/nv/rm_object_tree.hpp"

#include <array>

#include "nv/rm/abi/status.hpp"

namespace hcq::sim {

namespace st = nv::abi::status;

namespace {
// RM's handle bases: clients from 0xc1d00000 (RS_CLIENT_HANDLE_BASE), objects RM names from 0xcaf00000
// (RS_UNIQUE_HANDLE_BASE).
constexpr RmHandle kClientHandleBase = 0xc1d00000u;
constexpr RmHandle kObjectHandleBase = 0xcaf00000u;

constexpr std::array<RmKind, 1> kUnderClient = {RmKind::client};
constexpr std::array<RmKind, 1> kUnderDevice = {RmKind::device};
constexpr std::array<RmKind, 1> kUnderSubdevice = {RmKind::subdevice};
constexpr std::array<RmKind, 2> kUnderDeviceOrSubdevice = {RmKind::device, RmKind::subdevice};
constexpr std::array<RmKind, 1> kUnderChannelGroup = {RmKind::channel_group};
constexpr std::array<RmKind, 2> kUnderDeviceOrChannelGroup = {RmKind::device, RmKind::channel_group};
constexpr std::array<RmKind, 1> kUnderChannel = {RmKind::channel};
}  // namespace

const char* to_string(RmKind k) {
  switch (k) {
    case RmKind::client: return "client";
    case RmKind::device: return "device";
    case RmKind::subdevice: return "subdevice";
    case RmKind::usermode: return "usermode";
    case RmKind::vaspace: return "VA space";
    case RmKind::channel_group: return "channel group";
    case RmKind::context_share: return "context share";
    case RmKind::channel: return "GPFIFO channel";
    case RmKind::compute: return "compute object";
    case RmKind::copy: return "copy object";
    case RmKind::memory_system: return "system memory";
    case RmKind::memory_local: return "video memory";
    case RmKind::memory_os_descriptor: return "OS-descriptor memory";
    case RmKind::memory_virtual: return "virtual memory range";
    case RmKind::debugger: return "debugger";
  }
  return "?";
}

std::span<const RmKind> allowed_parents(RmKind k) {
  switch (k) {
    case RmKind::client: return {};
    case RmKind::device: return kUnderClient;
    case RmKind::subdevice: return kUnderDevice;
    case RmKind::usermode: return kUnderSubdevice;
    case RmKind::vaspace: return kUnderDeviceOrSubdevice;
    case RmKind::channel_group: return kUnderDevice;
    case RmKind::context_share: return kUnderChannelGroup;
    case RmKind::channel: return kUnderDeviceOrChannelGroup;
    case RmKind::compute:
    case RmKind::copy: return kUnderChannel;
    case RmKind::memory_system: return kUnderDevice;
    case RmKind::memory_local: return kUnderDeviceOrSubdevice;
    case RmKind::memory_os_descriptor: return kUnderDevice;
    case RmKind::memory_virtual: return kUnderDevice;
    case RmKind::debugger: return kUnderDevice;
  }
  return {};
}

RmStatus RmObjectTree::new_client(RmHandle requested, int owner, RmHandle* out) {
  RmHandle h = requested;
  if (h == 0) {
    do h = kClientHandleBase + next_client_++;
    while (clients_.count(h));
  } else if (clients_.count(h)) {
    return st::err_insert_duplicate_name;
  }
  Client& c = clients_[h];
  c.owner = owner;
  RmObject o;
  o.handle = h;
  o.kind = RmKind::client;
  o.class_id = 0x41;  // NV01_ROOT_CLIENT
  c.objects[h] = std::move(o);
  *out = h;
  return st::ok;
}

RmStatus RmObjectTree::check_alloc(RmHandle client, RmHandle parent, RmKind kind, RmHandle* handle,
                                   const RmObject** parent_out) const {
  auto cit = clients_.find(client);
  if (cit == clients_.end()) return st::err_invalid_object_handle;  // _serverFindClient
  const Client& c = cit->second;
  auto pit = c.objects.find(parent == 0 ? client : parent);
  if (pit == c.objects.end()) return st::err_object_not_found;  // clientGetResourceRef on the parent
  const RmObject& p = pit->second;
  bool allowed = false;
  for (RmKind a : allowed_parents(kind)) allowed = allowed || a == p.kind;
  if (!allowed) return st::err_invalid_object_parent;
  if (*handle == 0) {
    // clientGenResourceHandle: the next free handle from RM's base.
    uint32_t n = c.next_handle;
    while (c.objects.count(kObjectHandleBase + n)) ++n;
    c.next_handle = n + 1;
    *handle = kObjectHandleBase + n;
  } else if (*handle == client) {
    return st::err_invalid_object_handle;
  } else if (c.objects.count(*handle)) {
    return st::err_insert_duplicate_name;
  }
  *parent_out = &p;
  return st::ok;
}

void RmObjectTree::insert(RmHandle client, RmObject object) {
  clients_.at(client).objects[object.handle] = std::move(object);
}

RmObject* RmObjectTree::find(RmHandle client, RmHandle handle) {
  auto cit = clients_.find(client);
  if (cit == clients_.end()) return nullptr;
  auto it = cit->second.objects.find(handle);
  return it == cit->second.objects.end() ? nullptr : &it->second;
}

const RmObject* RmObjectTree::find(RmHandle client, RmHandle handle) const {
  return const_cast<RmObjectTree*>(this)->find(client, handle);
}

const RmObject* RmObjectTree::ancestor(RmHandle client, RmHandle handle, RmKind k) const {
  const RmObject* o = find(client, handle);
  while (o != nullptr && o->kind != k) o = o->parent == 0 ? nullptr : find(client, o->parent);
  return o;
}

std::vector<const RmObject*> RmObjectTree::children(RmHandle client, RmHandle handle) const {
  std::vector<const RmObject*> out;
  auto cit = clients_.find(client);
  if (cit == clients_.end()) return out;
  for (const auto& [h, o] : cit->second.objects)
    if (o.parent == handle && o.kind != RmKind::client) out.push_back(&o);
  return out;
}

void RmObjectTree::free_subtree(Client& c, RmHandle handle, std::vector<RmObject>& removed) {
  std::vector<RmHandle> kids;
  for (const auto& [h, o] : c.objects)
    if (o.parent == handle && o.kind != RmKind::client) kids.push_back(h);
  for (RmHandle k : kids) free_subtree(c, k, removed);
  auto it = c.objects.find(handle);
  if (it == c.objects.end()) return;
  removed.push_back(std::move(it->second));
  c.objects.erase(it);
}

RmStatus RmObjectTree::free(RmHandle client, RmHandle handle, std::vector<RmObject>& removed) {
  auto cit = clients_.find(client);
  if (cit == clients_.end()) return st::err_invalid_object_handle;
  Client& c = cit->second;
  if (handle == client) {
    // Freeing the client frees everything it owns; objects first, the client object last.
    std::vector<RmHandle> tops;
    for (const auto& [h, o] : c.objects)
      if (o.parent == client && o.kind != RmKind::client) tops.push_back(h);
    for (RmHandle t : tops) free_subtree(c, t, removed);
    free_subtree(c, client, removed);
    clients_.erase(cit);
    return st::ok;
  }
  if (handle == 0) return st::err_invalid_object_handle;
  if (!c.objects.count(handle)) return st::err_object_not_found;
  free_subtree(c, handle, removed);
  return st::ok;
}

void RmObjectTree::free_owned_by(int owner, std::vector<RmObject>& removed) {
  std::vector<RmHandle> mine;
  for (const auto& [h, c] : clients_)
    if (c.owner == owner) mine.push_back(h);
  for (RmHandle h : mine) free(h, h, removed);
}

}  // namespace hcq::sim
