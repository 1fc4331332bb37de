// The patch engine. apply() is on the replay path: one compare per variable that did not change, and a tight loop
// of stores for one that did.
#include "hcq/backend/patch.hpp"

#include <algorithm>
#include <cstring>

#include "hcq/error.hpp"

namespace hcq {
namespace {

constexpr int32_t kMaxVar = 0xffff;  // Var ids are 16-bit

}  // namespace

uint32_t PatchList::add_region(std::byte* base) {
  if (num_regions_ == kMaxRegions) throw InvalidArgument(cat("patch list: more than ", kMaxRegions - 1, " regions"));
  bases_[num_regions_] = base;
  return num_regions_++;
}

void PatchList::set_base(uint32_t region, std::byte* base) {
  if (region == kAbsolute || region >= num_regions_)
    throw InvalidArgument(
        cat("patch list: set_base of unknown region ", region, " (", num_regions_ - 1, " regions registered)"));
  bases_[region] = base;
}

void PatchList::add(Sym value, Location where) {
  if (where.region >= num_regions_) throw InvalidArgument(cat("patch list: unknown region ", where.region));
  if (where.region == kAbsolute && where.offset == 0)
    throw InvalidArgument("patch list: absolute patch at a null address");
  if (where.shift >= 64) throw InvalidArgument(cat("patch list: shift ", unsigned{where.shift}, " >= 64"));
  if (where.kind == Kind::field && (where.nbits == 0 || where.nbits > 32 || where.lo_bit + where.nbits > 32))
    throw InvalidArgument(cat("patch list: field of ", unsigned{where.nbits}, " bits at bit ", unsigned{where.lo_bit},
                              " does not fit a 32-bit word"));
  if (where.kind != Kind::u32 && where.kind != Kind::u64 && where.kind != Kind::field)
    throw InvalidArgument(cat("patch list: unknown kind ", static_cast<unsigned>(where.kind)));
  if (!value.is_const() && value.var > kMaxVar)
    throw InvalidArgument(cat("patch list: variable id ", value.var, " above ", kMaxVar));

  Patch p{where.region, where.kind, where.shift, where.lo_bit, where.nbits, where.offset, value.add};
  if (value.is_const()) {
    write(p, 0);  // nothing will ever change it: write now, record nothing
    return;
  }
  auto var = static_cast<size_t>(value.var);
  if (var >= by_var_.size()) {
    by_var_.resize(var + 1);
    last_.resize(var + 1, 0);
    seen_.resize(var + 1, 0);
  }
  by_var_[var].push_back(p);
  seen_[var] = 0;  // the new location has never been written: the next apply writes the whole variable
  max_var_ = std::max(max_var_, value.var);
  ++count_;
  if (where.region == kAbsolute) ++absolute_count_;
}

void PatchList::throw_missing(std::span<const uint64_t> vars) const {
  for (size_t var = vars.size(); var < by_var_.size(); ++var) {
    if (!by_var_[var].empty())
      throw InvalidArgument(
          cat("patch variable v", var, " has no value (", vars.size(), " values given, ", max_var_ + 1, " needed)"));
  }
  throw InvalidArgument("patch list: missing variable");  // unreachable: max_var_ has patches
}

void PatchList::apply(std::span<const uint64_t> vars) {
  if (static_cast<int64_t>(vars.size()) <= max_var_) [[unlikely]]
    throw_missing(vars);  // before any write: a half-patched queue must never reach the device
  const size_t n = by_var_.size();
  for (size_t var = 0; var < n; ++var) {
    const uint64_t v = vars[var];
    if (seen_[var] && last_[var] == v) continue;
    for (const Patch& p : by_var_[var]) write(p, v);
    last_[var] = v;
    seen_[var] = 1;
  }
}

bool PatchList::would_change(std::span<const uint64_t> vars) const {
  if (static_cast<int64_t>(vars.size()) <= max_var_) [[unlikely]]
    throw_missing(vars);
  const size_t n = by_var_.size();
  for (size_t var = 0; var < n; ++var) {
    if (by_var_[var].empty()) continue;
    if (!seen_[var] || last_[var] != vars[var]) return true;
  }
  return false;
}

void PatchList::invalidate() { std::fill(seen_.begin(), seen_.end(), 0); }

size_t PatchList::size() const { return count_; }

void PatchList::write(const Patch& p, uint64_t var_value) const {
  // Region kAbsolute has a null base, so base + offset is the host pointer itself.
  auto* at = reinterpret_cast<std::byte*>(reinterpret_cast<uintptr_t>(bases_[p.region]) + p.offset);
  const uint64_t value = (var_value + p.add) >> p.shift;
  // memcpy: patched words in side memory need not be naturally aligned, and it compiles to a plain store.
  switch (p.kind) {
    case Kind::u32: {
      auto w = static_cast<uint32_t>(value);
      std::memcpy(at, &w, sizeof w);
      break;
    }
    case Kind::u64: std::memcpy(at, &value, sizeof value); break;
    case Kind::field: {
      uint32_t w;
      std::memcpy(&w, at, sizeof w);
      const uint32_t mask = (p.nbits == 32 ? ~uint32_t{0} : ((uint32_t{1} << p.nbits) - 1)) << p.lo_bit;
      w = (w & ~mask) | ((static_cast<uint32_t>(value) << p.lo_bit) & mask);
      std::memcpy(at, &w, sizeof w);
      break;
    }
  }
}

}  // namespace hcq
