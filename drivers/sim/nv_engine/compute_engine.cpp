// The compute engine (COMPUTE classes): SEND_PCAS_A names a QMD, SEND_SIGNALING_PCAS2_B with a scheduling action
// launches it: the QMD is read and validated (its version is the one this GPU takes, the grid and block are
// nonzero and within the limits, the program and constant bank 0 are mapped), the kernel runs through the
// attached launcher (host twins), then the QMD's release semaphores are written and a dependent QMD, if the QMD
// names one, is launched the same way. SET_REPORT_SEMAPHORE_D releases a report semaphore. Every QMD field is read
// through drivers/nv/facts/qmd.hpp's roles, so V3 and V5 take the same path.
//
// Cache actions go to the host's cache model (ChannelHost::caches): the SM data caches a launch's QMD or
// INVALIDATE_SHADER_CACHES invalidates (the L2 is the GPU's point of coherence: host writes through BAR1 and the copy
// engines' writes land there, so it is the SMs' L1 that can hold stale data), and the system membar in front of a QMD
// release (RELEASEn_MEMBAR_TYPE FE_SYSMEMBAR) or a report semaphore without FLUSH_DISABLE, which makes the grid's
// writes visible to the system before the semaphore is.
#include <optional>
#include <vector>

#include "nv/facts/arch.hpp"
#include "nv/facts/qmd.hpp"
#include "sim/nv_engine/executor.hpp"
#include "sim/nv_engine/semaphore.hpp"

namespace hcq::sim::nv_engine {
namespace {

// Dependent QMDs one launch may chain before the engine calls it a loop (hardware would spin forever; the
// simulator must stay stoppable).
constexpr uint32_t kMaxChain = 1u << 16;

class ComputeEngine final : public ClassEngine {
 public:
  ComputeEngine(ChannelContext& ctx, const nv::ClassMethods& cls)
      : ctx_(ctx),
        arch_(nv::arch_info(ctx.desc().arch)),
        layout_(nv::qmd::layout(arch_.qmd_version)),
        pcas_a_(cls.find("SEND_PCAS_A")),
        pcas2_b_(cls.find("SEND_SIGNALING_PCAS2_B")),
        report_a_(cls.find("SET_REPORT_SEMAPHORE_A")),
        report_b_(cls.find("SET_REPORT_SEMAPHORE_B")),
        report_c_(cls.find("SET_REPORT_SEMAPHORE_C")),
        report_d_(cls.find("SET_REPORT_SEMAPHORE_D")),
        invalidate_(cls.find("INVALIDATE_SHADER_CACHES")),
        invalidate_no_wfi_(cls.find("INVALIDATE_SHADER_CACHES_NO_WFI")) {}

  Outcome execute(const MethodCall& c) override {
    if (&c.method == pcas2_b_) return pcas(c);
    if (&c.method == report_d_) return report(c);
    if (&c.method == invalidate_ || &c.method == invalidate_no_wfi_) return invalidate(c);
    return Outcome::done;
  }

 private:
  Outcome fault(ChannelFaultKind kind, const MethodCall& c, uint64_t address, const std::string& why,
                MmuAccess access = MmuAccess::read, SmClient sm = SmClient::none) {
    ctx_.fault(kind, c.at, address, std::string(c.cls.prefix) + "_" + std::string(c.method.name) + ": " + why, access,
               sm);
    return Outcome::fault;
  }

  // INVALIDATE_SHADER_CACHES(_NO_WFI): the data bit (DATA / GLOBAL_DATA, by class) drops the SMs' data caches; the
  // instruction and constant caches hold nothing the simulated kernels read through.
  Outcome invalidate(const MethodCall& c) {
    for (const char* name : {"DATA", "GLOBAL_DATA"})
      if (const nv::BitField* f = c.method.field(name); f && f->get(c.data) == f->value_of("TRUE")) {
        ctx_.host().caches(kCacheInvalidate);
        break;
      }
    return Outcome::done;
  }

  // An SM's fetch (instructions, constant bank) from an unmapped VA: a read fault of the GPC's constant cache.
  Outcome sm_fetch_fault(const MethodCall& c, uint64_t address, const std::string& why) {
    return fault(ChannelFaultKind::mmu_fault, c, address, why, MmuAccess::read, SmClient::constant_cache);
  }

  Outcome pcas(const MethodCall& c) {
    const nv::BitField* f = c.method.field("PCAS_ACTION");
    const std::string_view action = f->name_of(f->get(c.data));
    if (action == "NOP" || action == "INVALIDATE" || action == "PREFETCH") return Outcome::done;
    if (action.find("SCHEDULE") == std::string_view::npos)
      return fault(ChannelFaultKind::gr_exception, c, 0,
                   "PCAS_ACTION " + (action.empty() ? hex(f->get(c.data)) : std::string(action)) + " is not simulated");
    uint64_t qmd_va = uint64_t{c.value(pcas_a_)} << 8;
    for (uint32_t chain = 0;; ++chain) {
      if (chain == kMaxChain)
        return fault(ChannelFaultKind::gr_exception, c, qmd_va,
                     "more than " + std::to_string(kMaxChain) + " dependent QMDs chained (a loop?)");
      std::optional<uint64_t> next;
      const Outcome o = launch(c, qmd_va, next);
      if (o != Outcome::done || !next) return o;
      qmd_va = *next;
    }
  }

  // Runs the QMD at qmd_va; `next` is the dependent QMD it schedules, if any.
  Outcome launch(const MethodCall& c, uint64_t qmd_va, std::optional<uint64_t>& next) {
    namespace q = nv::qmd;
    const q::QmdRoles& r = layout_.roles;
    const std::string at = "QMD at " + hex(qmd_va) + ": ";
    std::vector<uint32_t> w(layout_.size_words);
    if (!ctx_.read_words(qmd_va, w.data(), w.size()))
      return fault(ChannelFaultKind::mmu_fault, c, qmd_va,
                   at + "not mapped (" + std::to_string(layout_.size_bytes()) + " bytes)");
    auto get = [&](const nv::BitField* f) -> uint64_t { return f ? q::get(w, *f) : 0; };
    auto bad = [&](const std::string& why, uint64_t address = 0) {
      return fault(ChannelFaultKind::gr_exception, c, address, at + why);
    };

    const uint32_t version = q::detect_version(w);
    if (version != layout_.major_version)
      return bad("QMD_MAJOR_VERSION reads as " + std::to_string(get(r.major_version)) + ", this " +
                 std::string(arch_.arch_name) + " GPU takes version " + std::to_string(layout_.major_version));
    Launch l;
    l.channel_id = ctx_.desc().channel_id;
    l.qmd_va = qmd_va;
    uint64_t threads = 1;
    for (int i = 0; i < 3; ++i) {
      l.groups[i] = static_cast<uint32_t>(get(r.grid[i]));
      l.local[i] = static_cast<uint32_t>(get(r.block[i]));
      threads *= l.local[i];
    }
    const std::string dims = "grid {" + std::to_string(l.groups[0]) + "," + std::to_string(l.groups[1]) + "," +
                             std::to_string(l.groups[2]) + "} x block {" + std::to_string(l.local[0]) + "," +
                             std::to_string(l.local[1]) + "," + std::to_string(l.local[2]) + "}";
    if (threads == 0 || l.groups[0] == 0 || l.groups[1] == 0 || l.groups[2] == 0)
      return bad(std::string(r.grid[0]->name) + "/" + std::string(r.block[0]->name) + "...: empty " + dims);
    if (threads > arch_.max_threads_per_block)
      return bad("CTA_THREAD_DIMENSION0..2: " + dims + " has " + std::to_string(threads) +
                 " threads per block, the limit is " + std::to_string(arch_.max_threads_per_block));
    l.shared_bytes = static_cast<uint32_t>(get(r.shared_memory_size) << r.shared_memory_shift);
    if (l.shared_bytes > arch_.max_shared_per_block)
      return bad(std::string(r.shared_memory_size->name) + ": " + std::to_string(l.shared_bytes) +
                 " bytes of shared memory, the limit is " + std::to_string(arch_.max_shared_per_block));

    l.program_va = (get(r.program_address_lower) | (get(r.program_address_upper) << 32)) << r.program_address_shift;
    if (!ctx_.ptr(l.program_va, 4))
      return sm_fetch_fault(c, l.program_va, at + "PROGRAM_ADDRESS " + hex(l.program_va) + " is not mapped");
    const q::ConstantBufferRoles& cb = r.cbuf[0];
    if (get(cb.valid) == 0) return bad("CONSTANT_BUFFER_VALID_0 is not set: the kernel has no parameters bank");
    l.cbank0_va = (get(cb.address_lower) | (get(cb.address_upper) << 32)) << r.cbuf_address_shift;
    l.cbank0_size = static_cast<uint32_t>(get(cb.size_shifted4) << 4);
    if (l.cbank0_size == 0) return bad("CONSTANT_BUFFER_SIZE_SHIFTED4_0 is 0");
    if (!ctx_.ptr(l.cbank0_va, l.cbank0_size))
      return sm_fetch_fault(
          c, l.cbank0_va,
          at + "constant bank 0 (" + hex(l.cbank0_va) + ", " + std::to_string(l.cbank0_size) + " bytes) is not mapped");
    l.param_va = l.cbank0_va + arch_.cbank0_param_offset;
    // The other banks as strictly as bank 0: a valid bank has a size and is mapped whole. Which banks the kernel
    // needs, and that they hold what it was compiled with, the twin registry checks (twin_launch.cpp).
    for (uint32_t i = 1; i < q::kConstantBuffers; ++i) {
      const q::ConstantBufferRoles& b = r.cbuf[i];
      if (get(b.valid) == 0) continue;
      const std::string name = "CONSTANT_BUFFER_VALID_" + std::to_string(i);
      Launch::Bank bank{i, (get(b.address_lower) | (get(b.address_upper) << 32)) << r.cbuf_address_shift,
                        static_cast<uint32_t>(get(b.size_shifted4) << 4)};
      if (bank.size == 0) return bad(name + " is set and CONSTANT_BUFFER_SIZE_SHIFTED4_" + std::to_string(i) + " is 0");
      if (!ctx_.ptr(bank.va, bank.size))
        return sm_fetch_fault(c, bank.va,
                              at + "constant bank " + std::to_string(i) + " (" + hex(bank.va) + ", " +
                                  std::to_string(bank.size) + " bytes) is not mapped");
      l.banks.push_back(bank);
    }

    // The QMD's own invalidates apply as the grid starts.
    if (get(r.invalidate_shader_data_cache)) ctx_.host().caches(kCacheInvalidate);
    std::optional<KernelAccessFault> access_fault;
    const std::string error = ctx_.run_launch(l, access_fault);
    if (access_fault)
      return fault(ChannelFaultKind::mmu_fault, c, access_fault->address(),
                   at + "the kernel at " + hex(l.program_va) + " (" + dims + ") touched memory the GPU does not map",
                   access_fault->access(), SmClient::l1);
    if (!error.empty())
      return bad("launch of " + dims + " at " + hex(l.program_va) + " failed: " + error, l.program_va);

    for (uint32_t i = 0; i < q::kReleases; ++i) {
      const q::ReleaseRoles& rel = r.release[i];
      if (get(rel.enable) == 0) continue;
      const std::string name = "RELEASE" + std::to_string(i);
      if (get(rel.reduction_enable)) return bad(name + "_REDUCTION_ENABLE: QMD release reductions are not simulated");
      const uint64_t va = get(rel.address_lower) | (get(rel.address_upper) << 32);
      const uint32_t size = static_cast<uint32_t>(get(rel.structure_size));
      const bool payload64 = get(rel.payload64b) != 0;
      const uint64_t payload = get(rel.payload_lower) | (payload64 ? get(rel.payload_upper) << 32 : 0);
      const bool four = size == q::kStructureFourWords, two = size == q::kStructureTwoWords;
      if (!four && !two && size != q::kStructureOneWord)
        return bad(name + "_STRUCTURE_SIZE " + std::to_string(size) + " is undefined");
      const bool is64 = four || two;
      if (is64 && va % 8) return bad(name + " semaphore address " + hex(va) + " is not 8-byte aligned", va);
      // FE_SYSMEMBAR: the front end's system membar, after the grid and before the release.
      if (get(rel.membar_type) == q::kMembarFeSysmembar) ctx_.host().caches(kCacheWriteback);
      if (const std::optional<uint64_t> miss = release_semaphore(ctx_, va, payload, is64, four))
        return fault(ChannelFaultKind::mmu_fault, c, *miss, at + name + " semaphore at " + hex(va) + " is not mapped",
                     MmuAccess::write);
    }

    if (get(r.dependent_qmd0_enable)) {
      const uint64_t action = get(r.dependent_qmd0_action);
      if (action != q::kDependentActionSchedule)
        return bad("DEPENDENT_QMD0_ACTION " + std::to_string(action) + " is not simulated (only QMD_SCHEDULE)");
      next = get(r.dependent_qmd0_pointer) << 8;
    }
    return Outcome::done;
  }

  Outcome report(const MethodCall& c) {
    const nv::BitField* op = c.method.field("OPERATION");
    const std::string_view op_name = op->name_of(op->get(c.data));
    if (op_name.empty())
      return fault(ChannelFaultKind::gr_exception, c, 0, "undefined OPERATION " + std::to_string(op->get(c.data)));
    if (op_name != "RELEASE")
      return fault(ChannelFaultKind::gr_exception, c, 0,
                   "report semaphore OPERATION " + std::string(op_name) + " is not simulated");
    if (c.method.field("REDUCTION_ENABLE")->get(c.data))
      return fault(ChannelFaultKind::gr_exception, c, 0, "report semaphore reductions are not simulated");
    const nv::BitField* size = c.method.field("STRUCTURE_SIZE");
    const bool four = size->name_of(size->get(c.data)) == "FOUR_WORDS";
    const uint64_t hi = report_a_ && !report_a_->fields.empty() ? report_a_->fields[0].get(c.value(report_a_)) : 0;
    const uint64_t va = (hi << 32) | c.value(report_b_);
    if (four && va % 8)
      return fault(ChannelFaultKind::gr_exception, c, va, "four-word report address is not 8-byte aligned");
    // Unless FLUSH_DISABLE, the release flushes the engine's writes to memory before the payload lands.
    if (c.method.field("FLUSH_DISABLE")->get(c.data) == 0) ctx_.host().caches(kCacheWriteback);
    if (const std::optional<uint64_t> miss = release_semaphore(ctx_, va, c.value(report_c_), four, four))
      return fault(ChannelFaultKind::mmu_fault, c, *miss, "report semaphore release to an unmapped address",
                   MmuAccess::write);
    return Outcome::done;
  }

  ChannelContext& ctx_;
  const nv::NvArchInfo& arch_;
  const nv::qmd::QmdLayout& layout_;
  const nv::Method *pcas_a_, *pcas2_b_, *report_a_, *report_b_, *report_c_, *report_d_, *invalidate_,
      *invalidate_no_wfi_;
};

}  // namespace

std::unique_ptr<ClassEngine> make_compute_engine(ChannelContext& ctx, const nv::ClassMethods& cls) {
  return std::make_unique<ComputeEngine>(ctx, cls);
}

}  // namespace hcq::sim::nv_engine
