// RM_ALLOC of the scheduling and engine classes: channel groups (TSGs), context shares (subcontexts), GPFIFO
// channels, the compute and copy objects bound to a channel, and the debugger session on a compute object.
#include <cstring>
#include <memory>

#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/debugger.hpp"
#include "nv/rm/abi/status.hpp"
#include "sim/nv/sim_nv_rm_alloc.hpp"

namespace hcq::sim {

namespace abi = nv::abi;
namespace st = nv::abi::status;

namespace {

// A channel group's or context share's VA space: 0 (the device's default) or a VA space of this client.
bool vaspace_or_none(const RmAllocRequest& r, RmHandle h) {
  const RmObject* v = h != 0 ? r.state.tree.find(r.client, h) : nullptr;
  return h == 0 || (v != nullptr && v->kind == RmKind::vaspace);
}

}  // namespace

RmStatus alloc_channel_group(RmAllocRequest& r) {
  abi::ChannelGroupAllocParams p;
  std::memcpy(&p, r.params, sizeof p);
  if (!vaspace_or_none(r, p.vaspace)) return st::err_object_not_found;
  auto grp = std::make_shared<NvChannelGroup>();
  grp->engine_type = p.engine_type;
  r.obj.payload = grp;
  return st::ok;
}

RmStatus alloc_context_share(RmAllocRequest& r) {
  abi::ContextShareAllocParams p;
  std::memcpy(&p, r.params, sizeof p);
  if (!vaspace_or_none(r, p.vaspace)) return st::err_object_not_found;
  // RM picks the subcontext id: the next one free in the group.
  uint32_t id = 0;
  for (const RmObject* c : r.state.tree.children(r.client, r.parent.handle))
    if (c->kind == RmKind::context_share) ++id;
  p.subctx_id = id;
  std::memcpy(r.params, &p, sizeof p);
  return st::ok;
}

RmStatus alloc_channel(RmAllocRequest& r) { return r.state.alloc_channel(r.client, r.parent, r.obj, r.params); }

// AMPERE_COMPUTE_A.., *_DMA_COPY_*: an engine object on its channel.
RmStatus alloc_engine_object(RmAllocRequest& r) {
  auto ch = std::static_pointer_cast<NvChannel>(r.parent.payload);
  ch->engine_classes.push_back(r.obj.class_id);
  auto e = std::make_shared<NvEngineObject>();
  e->channel = ch;
  e->class_id = r.obj.class_id;
  r.obj.payload = e;
  return st::ok;
}

RmStatus alloc_debugger(RmAllocRequest& r) {
  // ksmdbgssnConstruct: the old interface is refused; the debuggee client (0: the caller's) must exist and
  // hold the object; the object must be a compute object, on this device's GPU.
  abi::DebuggerAllocParams p;
  std::memcpy(&p, r.params, sizeof p);
  if (p.debugger_client_obsolete != 0) return st::err_invalid_argument;
  const RmHandle app = p.app_client != 0 ? p.app_client : r.client;
  if (!r.state.tree.client_exists(app)) return st::err_invalid_client;
  const RmObject* target = r.state.tree.find(app, p.class3d_object);
  if (target == nullptr) return st::err_invalid_object_parent;
  if (target->kind != RmKind::compute) return st::err_invalid_object;
  if (target->gpu != r.obj.gpu) return st::err_invalid_argument;
  auto d = std::make_shared<NvDebugger>();
  d->app_client = app;
  d->compute_object = target->handle;
  d->channel_handle = target->parent;
  d->channel = std::static_pointer_cast<NvEngineObject>(target->payload)->channel;
  r.obj.payload = d;
  return st::ok;
}

}  // namespace hcq::sim
