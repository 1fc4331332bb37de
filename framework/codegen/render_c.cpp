// The C renderer, for the CPU device and the GPUs (render.hpp). Values are emitted once each (the IR is hash-consed,
// so a shared subtree is one variable), at the outermost loop where all the ranges they depend on exist: a load that
// does not depend on a reduce range is read before the reduce loop, not in it.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "framework/codegen/c_prelude.hpp"
#include "framework/codegen/render.hpp"
#include "framework/ir/node_table.hpp"
#include "framework/ir/shape_of.hpp"
#include "framework/ir/symbolic.hpp"
#include "framework/schedule/lower.hpp"
#include "hcq/error.hpp"
#include "hcq/kernel_abi.h"  // the matrix units' shapes (HCQ_MMA16_*_LANES, _SUMS)

namespace hcq::fw {
namespace {

const char* storage_type(DType t) {
  switch (t) {
    case DType::bool_: return "hcq_bool";
    case DType::int8: return "int8_t";
    case DType::uint8: return "uint8_t";
    case DType::int32: return "int32_t";
    case DType::uint32: return "uint32_t";
    case DType::int64: return "int64_t";
    case DType::float16:
    case DType::bfloat16: return "uint16_t";
    case DType::float32: return "float";
  }
  return "?";
}

// Half types are computed in float and rounded after every op, so results match per-op half arithmetic.
const char* value_type(DType t) { return t == DType::float16 || t == DType::bfloat16 ? "float" : storage_type(t); }

std::string round_half(DType t, const std::string& e) {
  if (t == DType::float16) return "hcq_rh(" + e + ")";
  if (t == DType::bfloat16) return "hcq_rb(" + e + ")";
  return e;
}

std::string literal(DType t, double v) {
  if (is_float(t)) {
    if (std::isnan(v)) return "HCQ_NANF";
    if (std::isinf(v)) return v > 0 ? "HCQ_INFF" : "(-HCQ_INFF)";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%af", static_cast<double>(static_cast<float>(v)));
    return buf[0] == '-' ? std::string("(") + buf + ")" : buf;
  }
  if (t == DType::bool_) return v != 0 ? "1" : "0";
  if (t == DType::uint32 || t == DType::uint8) return std::to_string(static_cast<uint64_t>(v)) + "u";
  if (v >= 9223372036854775807.0) return "9223372036854775807LL";  // INT64_MAX is not a double: the reduce identity
  const int64_t i = static_cast<int64_t>(v);
  if (i == INT64_MIN) return "(-9223372036854775807LL-1)";
  return i < 0 ? "(" + std::to_string(i) + "LL)" : std::to_string(i) + "LL";
}

// The suffix of the prelude's integer helpers for a dtype.
const char* int_suffix(DType t) {
  switch (t) {
    case DType::int8: return "i8";
    case DType::uint8: return "u8";
    case DType::int32: return "i32";
    case DType::uint32: return "u32";
    default: return "i64";
  }
}

// Signed 32-bit arithmetic that may overflow is done in unsigned, which wraps (signed overflow is undefined in C).
std::string wrap_int(DType t, const std::string& a, char op, const std::string& b) {
  if (t == DType::int32) return "(int32_t)((uint32_t)" + a + " " + op + " (uint32_t)" + b + ")";
  if (t == DType::int8 || t == DType::uint8)
    return std::string("(") + storage_type(t) + ")(" + a + " " + op + " " + b + ")";
  return "(" + a + " " + op + " " + b + ")";
}

// prefix + number, built without operator+ on a literal (GCC 12 warns falsely on that at -O3: -Wrestrict).
// A kernel value (VAR_PARAM: a variable's value, bound per launch): the ABI's 32-bit word, read as int32.
std::string var_ref(const NodeData* n) { return "((int32_t)HCQ_VAL(" + std::to_string(n->i[0]) + "))"; }

std::string tag(const char* prefix, int64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

// A CPU kernel is split over the device's workers from this many innermost iterations (output elements times
// reduce extents) on: below it, handing half to another worker (waking it, waiting for it) costs more than it saves.
constexpr double kSplitWork = 1 << 20;
// ... where a square root, division, exponential, logarithm or sine inside the loops counts as this many iterations:
// one takes several times an add's throughput (Adam's update of a 784 x 128 weight, a square root and a division
// per element, runs 90 us on one core, 60 us on two; its plain 100,000-element updates gain nothing from a split).
constexpr double kSlowOpWork = 8;

bool slow_op(Op op) {
  return op == Op::SQRT || op == Op::FDIV || op == Op::RECIPROCAL || op == Op::EXP2 || op == Op::LOG2 || op == Op::SIN;
}

// e^x and 2^x for the CPU device's kernels, inline so the loops around them vectorise (its kernels are
// freestanding: expf is a call into the host's libm, one element at a time; a softmax's backward recomputes it per
// element of a product's operand). x = n ln2 + r with n = rint(x log2 e) and ln2 split in two (Cody and Waite, so r
// is exact to a few ulp), |r| <= ln2 / 2, e^r by its Taylor polynomial to degree 8 (the next term is below 2^-30),
// then times 2^n built from the exponent bits in two halves (n from -151 to 129 spans the float range, denormals and
// overflow to inf included). NaN stays NaN. Error: within 2 ulp of the correctly rounded value (tests/framework_sched
// codegen_test, "CpuExp" against std::exp in double).
constexpr const char* kCpuExp =
    "static inline float hcq_exp_scale(float p, float n) {\n"
    "  const int32_t k = (int32_t)n, h = k >> 1;\n"
    "  const uint32_t a = (uint32_t)(h + 127) << 23, b = (uint32_t)(k - h + 127) << 23;\n"
    "  float sa, sb; HCQ_MEMCPY(&sa, &a, 4); HCQ_MEMCPY(&sb, &b, 4);\n"
    "  return p * sa * sb;\n"
    "}\n"
    "static inline float hcq_exp_poly(float r) {\n"
    "  return 1.0f + r * (1.0f + r * (0x1p-1f + r * (0x1.555556p-3f + r * (0x1.555556p-5f + r * (0x1.111112p-7f +\n"
    "         r * (0x1.6c16c2p-10f + r * (0x1.a01a02p-13f + r * 0x1.a01a02p-16f)))))));\n"
    "}\n"
    "static inline float hcq_expf(float x) {\n"
    "  const float c = x != x ? 0.0f : x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;\n"
    "  const float n = __builtin_rintf(c * 0x1.715476p+0f);\n"
    "  const float r = (c - n * 0x1.62e400p-1f) - n * 0x1.7f7d1cp-20f;\n"
    "  const float e = hcq_exp_scale(hcq_exp_poly(r), n);\n"
    "  return x != x ? x : e;\n"
    "}\n"
    "static inline float hcq_exp2f(float x) {\n"
    "  const float c = x != x ? 0.0f : x < -151.0f ? -151.0f : x > 129.0f ? 129.0f : x;\n"
    "  const float n = __builtin_rintf(c);\n"
    "  const float e = hcq_exp_scale(hcq_exp_poly((c - n) * 0x1.62e430p-1f), n);\n"
    "  return x != x ? x : e;\n"
    "}\n";

// Reduce loops of at most this many iterations are unrolled fully.
constexpr int64_t kUnrollLimit = 8;

struct Scope {
  Scope* parent = nullptr;
  int depth = 0;
  std::string header;
  std::vector<std::string> lines;
};

class CRenderer {
 public:
  CRenderer(const TargetFacts& facts, size_t choice) : facts_(facts), choice_(choice) {}

  // How many renderings render() can give this kernel (render_choices).
  size_t choices(const Node& kernel) {
    if (!facts_.optimize) return 1;
    out_ranges_ = output_ranges(kernel);
    // On a GPU, a half-type product on the matrix unit also renders with float panels (choice 1): whether the unit
    // pays for a product is the search's to time (HCQ_BEAM).
    if (facts_.target != Target::cpu)
      return choose_gpu_tile(kernel, out_ranges_) && gtile_.unit != MatrixUnit::none ? 2 : 1;
    return tile_alternatives(kernel, out_ranges_).size() + 2;
  }

  RenderedKernel render(const Node& original) {
    Node kernel = original;
    std::vector<const NodeData*> out_ranges = output_ranges(kernel);
    out_ranges_ = out_ranges;

    RenderedKernel rk;
    rk.num_bufs = 0;
    const std::vector<const NodeData*> nodes = toposort({kernel});  // one sort for the three walks below
    std::vector<const NodeData*> params;
    for (const NodeData* n : nodes)
      if (n->op == Op::PARAM) params.push_back(n);
    std::sort(params.begin(), params.end(), [](auto* a, auto* b) { return a->i[0] < b->i[0]; });
    rk.num_bufs = static_cast<uint32_t>(params.size());
    for (const NodeData* n : nodes)
      if (n->op == Op::VAR_PARAM) rk.num_vals = std::max(rk.num_vals, static_cast<uint32_t>(n->i[0] + 1));
    for (const NodeData* p : params) rk.bytes += static_cast<double>(p->i[1]) * dtype_size(p->dtype);

    // Name: E_ or r_, the output extents, then the reduce extents.
    std::vector<int64_t> reduce_extents;
    bool has_reduce = false;
    double alu_ops = 0, slow_ops = 0;
    for (const NodeData* n : nodes) {
      if (slow_op(n->op) && is_float(n->dtype) && !deps(n).empty()) slow_ops += 1;
      if (n->op == Op::REDUCE) has_reduce = true;
      if (n->op == Op::RANGE && n->i[2] == 1) reduce_extents.push_back(n->i[1]);
      if (is_elementwise(n->op) && n->op != Op::CAST && n->op != Op::BITCAST && is_float(n->dtype)) alu_ops += 1;
      if (n->op == Op::REDUCE && is_float(n->dtype)) alu_ops += 1;
    }
    rk.name = has_reduce ? "r" : "E";
    for (const NodeData* r : out_ranges) rk.name += tag("_", r->i[1]);
    for (int64_t e : reduce_extents) rk.name += tag("_", e);
    if (out_ranges.empty() && reduce_extents.empty()) rk.name += "_1";
    double iterations = 1;
    for (const NodeData* r : out_ranges) iterations *= static_cast<double>(r->i[1]);
    for (int64_t e : reduce_extents) iterations *= static_cast<double>(e);
    rk.flops = iterations * alu_ops;

    // Workgroups: the outermost output loop split over the CPU device's workers when there is enough work.
    const double work = iterations * (1 + kSlowOpWork * slow_ops);
    uint32_t groups = 1;
    if (facts_.target == Target::cpu && facts_.optimize && !out_ranges.empty() && work >= kSplitWork)
      groups = static_cast<uint32_t>(std::min<int64_t>(out_ranges[0]->i[1], facts_.workers));
    rk.global = {groups, 1, 1};
    // A convolution's window read gathers its column operand: its output ranges may tile better merged into one
    // (merge_for_tile); the kernel is then rendered from the merged form (its name stays the original's).
    std::vector<int64_t> merged_axes;
    // A gathered tile whose panel is packed in blocks (a weight gradient: K spans the batch) merges its rows instead
    // (merge_rows_for_tile): merged columns would gather runs of one window row, 3 or 5 lanes long.
    bool tiled = false;
    if (choice_ > 0) {
      tiled = choose_alternative(kernel, out_ranges);
    } else {
      tiled = choose_tile(kernel, out_ranges);
    }
    if (choice_ == 0 && (!tiled || tile_.gather)) {
      const bool rows = tiled && tile_.k_block > 0;
      if (Node merged = rows ? merge_rows_for_tile(kernel, out_ranges, tile_, merged_axes)
                             : merge_for_tile(kernel, out_ranges, merged_axes)) {
        const Tile before = tile_;
        const NodeData* before_lane = lane_;
        const int64_t before_upcast = upcast_;
        const std::vector<const NodeData*> merged_ranges = output_ranges(merged);
        out_ranges_ = merged_ranges;
        tile_ = Tile{};
        deps_.clear();
        merged_ = !rows;
        merged_rows_ = rows;
        if (choose_tile(merged, merged_ranges)) {
          kernel = merged;
          out_ranges = merged_ranges;
          tiled = true;
        } else {
          merged_ = merged_rows_ = false;
          out_ranges_ = out_ranges;
          tile_ = before;
          lane_ = before_lane;
          upcast_ = before_upcast;
          deps_.clear();
          merged_axes.clear();
        }
      }
    }
    const Node& store = kernel->src.at(0);
    if (tiled) {
      // Whole tiles per worker: the split range's extent, in row steps when it is the rows (render_tile).
      const NodeData* split = tile_split(tile_);
      const int64_t parts = split == tile_.i   ? tile_.i->i[1] / tile_.rows
                            : split == tile_.j ? tile_.j->i[1] / upcast_
                                               : split->i[1];
      groups = static_cast<uint32_t>(std::min<int64_t>(parts, facts_.workers));
      if (work < kSplitWork) groups = 1;
      rk.global = {groups, 1, 1};
      rk.name += tag("_up", tile_.rows) + tag("x", upcast_);
      rk.opts = tile_opts(groups, out_ranges);
      if (!merged_axes.empty()) {
        std::string m = "MERGE(";
        for (size_t k = 0; k < merged_axes.size(); ++k) m += tag(k ? "," : "", merged_axes[k]);
        rk.opts = m + ") " + rk.opts;
      }
    } else {
      choose_upcast(kernel, out_ranges);
      if (lane_) rk.name += tag("_up", upcast_);
      if (groups > 1) rk.opts = tag("THREAD(0,", groups) + ")";
      if (lane_)
        rk.opts += std::string(rk.opts.empty() ? "" : " ") + tag("UPCAST(", axis_of(lane_, out_ranges)) +
                   tag(",", upcast_) + ")";
    }
    // GPU vectors keep the kernel's name (tests and fault messages name kernels by shape); HCQ_DEBUG=4 shows them.
    choose_vectors(kernel, out_ranges);

    // Open the output loops; the outermost covers this workgroup's chunk when there are several. A GPU runs one
    // thread per output element instead (gpu_grid).
    Scope* cur = &root_;
    if (facts_.target != Target::cpu) {
      if (choose_gpu_tile(kernel, out_ranges)) {
        if (choice_ == 1) gtile_.unit = MatrixUnit::none;  // choices(): the float panels instead of the unit
        cur = render_gpu_tile(out_ranges, rk);
      } else {
        group_ = group_threads(kernel, out_ranges);
        cur = group_ ? gpu_group_grid(out_ranges, rk) : gpu_grid(out_ranges, rk);
      }
    }
    if (tile_.i) cur = render_tile(out_ranges, groups);
    for (size_t k = 0; k < out_ranges.size() && facts_.target == Target::cpu && !tile_.i; ++k) {
      const NodeData* r = out_ranges[k];
      if (k == 0 && groups > 1) {
        int64_t chunk = (r->i[1] + groups - 1) / groups;
        if (r == lane_) chunk = (chunk + upcast_ - 1) / upcast_ * upcast_;  // groups start on a lane boundary
        const std::string c = std::to_string(chunk), e = std::to_string(r->i[1]);
        root_.lines.push_back("const int64_t lo = (int64_t)HCQ_GROUP_ID(0) * " + c + ";");
        root_.lines.push_back("const int64_t hi = lo + " + c + " < " + e + " ? lo + " + c + " : " + e + ";");
        cur = open_loop(cur, r, "lo", "hi");
      } else {
        cur = open_loop(cur, r, "0", std::to_string(r->i[1]));
      }
    }
    emit(store->src[1]);
    emit(store->src[2]);
    const std::string idx = ref(store->src[1].get()), val = ref(store->src[2].get());
    const DType t = store->src[0]->dtype;
    std::string stored = val;
    if (t == DType::float16) stored = "hcq_f2h(" + val + ")";
    if (t == DType::bfloat16) stored = "hcq_f2b(" + val + ")";
    // A grouped reduce's threads all hold the result; one stores it.
    if (vec_) {
      store_vector(cur, idx, stored, storage_type(t));
    } else {
      cur->lines.push_back(lane_prefix(store.get()) + (group_ ? "if (lx == 0) " : "") + "b0[" + idx + "] = " + stored +
                           ";");
    }
    close_to(cur, &root_);
    // AMX tiles are configured once per workgroup, and released so the thread's context switches save no tile data.
    if (tile_.bf16 && facts_.cpu_isa.bf16_matmul == Bf16MatmulPath::amx) {
      root_.lines.insert(root_.lines.begin(), "hcq_amx_begin();");
      root_.lines.push_back("hcq_amx_end();");
    }

    // The source is written into one string sized up front, each line appended in place (a temporary per line and
    // the prelude assembled anew per kernel were a tenth of the renderer's time).
    static const std::string preludes[] = {c_prelude(Target::cpu), c_prelude(Target::amdgpu), c_prelude(Target::cuda)};
    const std::string& prelude = preludes[static_cast<size_t>(facts_.target)];
    size_t size = prelude.size() + 256 * (params.size() + shared_.size() + 2);
    for (const auto& [name, definition] : helpers_) size += definition.size();
    for (const std::string& l : root_.lines) size += l.size() + 3;
    std::string src;
    src.reserve(size);
    src += prelude;
    for (const auto& [name, definition] : helpers_) src += definition;
    // A grouped reduce's or a GPU tile's body runs once per thread (barriers need each thread's own flow):
    // HCQ_THREAD_KERNEL.
    src += std::string(group_ || gtile_.i ? "HCQ_THREAD_KERNEL(" : "HCQ_KERNEL(") + rk.name + ", " +
           std::to_string(rk.num_bufs) + ", " + std::to_string(rk.num_vals) + ") {\n";
    // Lets clang vectorise float reductions (CPU) and reassociate (AMDGPU); NVRTC knows no clang pragmas.
    if (facts_.target != Target::cuda) src += "#pragma clang fp reassociate(on)\n";
    for (const std::string& d : shared_) src += "  " + d + "\n";  // the ABI wants them first
    const char* restrict_kw = facts_.target == Target::cuda ? "* __restrict__ b" : "* restrict b";  // C++: no restrict
    for (const NodeData* p : params) {
      const std::string k = std::to_string(p->i[0]);
      src += std::string("  ") + (p->i[0] == 0 ? "" : "const ") + storage_type(p->dtype) + restrict_kw + k +
             " = HCQ_BUF(" + storage_type(p->dtype) + ", " + k + ");\n";
    }
    for (const std::string& l : root_.lines) ((src += "  ") += l) += '\n';
    src += "}\n";
    rk.source = std::move(src);
    return rk;
  }

 private:
  // A GPU's launch: one thread per output element, threads_per_group threads per workgroup, as many workgroups as
  // the output needs within the device's limit, and a grid-stride loop for outputs larger than the grid. Each thread
  // recovers its output ranges from its element's flat index (row-major over the output ranges). Reduces stay loops
  // inside the thread. Returns the scope of one element.
  Scope* gpu_grid(const std::vector<const NodeData*>& out_ranges, RenderedKernel& rk) {
    // With vectors (choose_vectors) a thread's element is a run of upcast_ outputs along the last output range: that
    // range counts runs, and its variable is the run's first index.
    std::vector<int64_t> extents;
    for (const NodeData* r : out_ranges) extents.push_back(r == lane_ ? (r->i[1] + upcast_ - 1) / upcast_ : r->i[1]);
    int64_t total = 1;
    for (int64_t e : extents) total *= e;
    const int64_t local = std::min<int64_t>(facts_.threads_per_group, total);
    const int64_t groups = std::min<int64_t>((total + local - 1) / local, facts_.max_groups);
    rk.global = {static_cast<uint32_t>(groups), 1, 1};
    rk.local = {static_cast<uint32_t>(local), 1, 1};
    Scope* threads = open_scope(&root_, "HCQ_FOR_EACH_THREAD(lx, ly, lz) {");
    Scope* element =
        open_scope(threads, "for (int64_t gi = (int64_t)HCQ_GROUP_ID(0) * " + std::to_string(local) + " + lx; gi < " +
                                std::to_string(total) + "; gi += " + std::to_string(groups * local) + ") {");
    bind_flat_ranges(element, out_ranges, "gi", total, extents);
    if (vec_) {
      std::string& line = element->lines.back();  // the lane range's line: it counted runs; make it the run's start
      line.insert(line.size() - 1, tag(" * ", upcast_));
      if (tail_) {
        const int64_t e = lane_->i[1];
        element->lines.push_back("const hcq_bool full = " + names_[lane_] + tag(" + ", upcast_) + tag(" <= ", e) + ";");
        lane_guard_ = names_[lane_] + tag(" + u < ", e);
      }
    }
    return element;
  }

  // GPU tiles (issue 19: local tiles, operands staged through shared memory). A product's kernel -- one float32 sum
  // over ranges ks of A * B, A reading rows i and not columns j, B the other way round, the reduce sitting directly in
  // the output element -- runs one workgroup per kGpuTileRows x kGpuTileCols block of outputs of one batch element
  // (tinygrad's LOCAL and UPCAST on both axes): its threads form a TY x 16 grid, each holding 4 x 4 sums in
  // registers; per step of kGpuTileK along the flattened reduce, the threads copy the step's A and B panels into
  // shared memory together (every panel element read once from global memory instead of once per output row or
  // column), meet at a barrier, multiply from shared memory, and meet again before the next step overwrites the
  // panels. Rows, columns and steps past the ends read 0.
  //
  // Matrix tiles (tinygrad's TC on GPUs): when both operands are float16 (or both bfloat16) values widened to float32
  // and the GPU has a matrix unit (TargetFacts::matrix_unit), the panels hold the operands' 16-bit words, k
  // contiguous (B's transposed), and each wave computes a 16 x 32 strip of the block (two waves across its 64
  // columns, the rest down its rows) as two 16 x 16 x 16 products per 16 k through the kernel ABI's HCQ_MMA16_*
  // (WMMA on gfx11 and gfx12, MFMA on gfx942, mma.sync on sm_80 and later), its sums in the instruction's layout
  // (HCQ_MMA16_*_ROW/COL) for the epilogue. Steps of 32 k, two barriers each.
  static constexpr int64_t kGpuTileR = 4, kGpuTileK = 16, kGpuTileTx = 16;
  static constexpr int64_t kMmaTileK = 32, kMmaPad = 8;  // a panel row: 32 k + 8 words of padding
  // A unit's wave width and sums per lane, as the kernel ABI gives them (HCQ_MMA16_<unit>_LANES, _SUMS).
  struct MmaShape {
    int64_t lanes = 0, sums = 0;
  };
  static MmaShape mma_shape(MatrixUnit u) {
    switch (u) {
      case MatrixUnit::wmma_gfx11: return {HCQ_MMA16_WMMA_GFX11_LANES, HCQ_MMA16_WMMA_GFX11_SUMS};
      case MatrixUnit::wmma_gfx12: return {HCQ_MMA16_WMMA_GFX12_LANES, HCQ_MMA16_WMMA_GFX12_SUMS};
      case MatrixUnit::mfma_cdna3: return {HCQ_MMA16_MFMA_CDNA3_LANES, HCQ_MMA16_MFMA_CDNA3_SUMS};
      case MatrixUnit::mma_sm80: return {HCQ_MMA16_MMA_SM80_LANES, HCQ_MMA16_MMA_SM80_SUMS};
      case MatrixUnit::none: break;
    }
    return {};
  }
  int64_t mma_lanes() const { return mma_shape(facts_.matrix_unit).lanes; }
  int64_t gpu_tile_ty() const { return facts_.threads_per_group / kGpuTileTx; }
  // The kernel ABI's spelling of a unit in its macros' names: HCQ_MMA16_WMMA_GFX11_F16.
  static std::string mma_macro_unit(MatrixUnit u) {
    std::string s(to_string(u));
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }
  // A matrix tile's waves: two across the block's 64 columns, the rest down its rows (16 each).
  int64_t mma_waves() const { return facts_.threads_per_group / mma_lanes(); }
  int64_t mma_rows() const { return 16 * (mma_waves() / 2); }
  bool mma_fits() const {
    return facts_.matrix_unit != MatrixUnit::none && facts_.wave_size == mma_lanes() &&
           facts_.threads_per_group % (2 * mma_lanes()) == 0 &&
           static_cast<uint64_t>((mma_rows() + kGpuTileTx * kGpuTileR) * (kMmaTileK + kMmaPad)) * 2 <=
               facts_.shared_memory_bytes;
  }

  bool choose_gpu_tile(const Node& kernel, const std::vector<const NodeData*>& out_ranges) {
    if (facts_.target == Target::cpu || !facts_.optimize || out_ranges.size() < 2) return false;
    if (facts_.threads_per_group < 64 || facts_.threads_per_group % kGpuTileTx != 0) return false;
    const int64_t rows = gpu_tile_ty() * kGpuTileR, cols = kGpuTileTx * kGpuTileR;
    if (static_cast<uint64_t>(kGpuTileK * (rows + cols)) * 4 > facts_.shared_memory_bytes) return false;
    const NodeData* reduce = sum_of_products(kernel);
    if (!reduce) return false;
    for (const NodeData* r : deps(reduce))
      if (std::find(out_ranges.begin(), out_ranges.end(), r) == out_ranges.end()) return false;
    std::vector<const NodeData*> ks;
    int64_t K = 1;
    for (size_t n = 1; n < reduce->src.size(); ++n) {
      ks.push_back(reduce->src[n].get());
      K *= reduce->src[n]->i[1];
    }
    // Worth a workgroup's cooperation: a few whole steps, and at least a quarter of a block of outputs.
    if (K < 2 * kGpuTileK) return false;
    const NodeData* body = reduce->src[0].get();
    for (int first = 0; first < 2; ++first) {
      const NodeData* a = body->src[first].get();
      const NodeData* b = body->src[1 - first].get();
      if (!printable(a) || !printable(b)) return false;
      const std::vector<const NodeData*> da = deps(a), db = deps(b);
      // The columns: the innermost output range B reads and A does not (its loads and the stores run along it).
      for (size_t jn = out_ranges.size(); jn-- > 0;) {
        const NodeData* j = out_ranges[jn];
        if (!has(db, j) || has(da, j)) continue;
        for (const NodeData* i : out_ranges) {
          if (!has(da, i) || has(db, i)) continue;
          if (i->i[1] * j->i[1] * 4 < rows * cols) return false;
          gtile_ = GpuTile{i, j, reduce, a, b, ks};
          const DType half = widened_half(a);
          if (half != DType::float32 && widened_half(b) == half && mma_fits()) {
            gtile_.unit = facts_.matrix_unit;
            gtile_.half = half;
          }
          return true;
        }
        break;
      }
    }
    return false;
  }

  Scope* render_gpu_tile(const std::vector<const NodeData*>& out_ranges, RenderedKernel& rk) {
    const GpuTile& g = gtile_;
    const bool mma = g.unit != MatrixUnit::none;
    const int64_t TY = gpu_tile_ty(), TX = kGpuTileTx, R = kGpuTileR, TK = mma ? kMmaTileK : kGpuTileK;
    const int64_t TM = mma ? mma_rows() : TY * R, TN = TX * R, threads = facts_.threads_per_group;
    const int64_t M = g.i->i[1], N = g.j->i[1];
    int64_t K = 1;
    for (const NodeData* k : g.ks) K *= k->i[1];
    const int64_t tiles_m = (M + TM - 1) / TM, tiles_n = (N + TN - 1) / TN;
    std::vector<const NodeData*> batch;
    int64_t batch_total = 1;
    for (const NodeData* r : out_ranges)
      if (r != g.i && r != g.j) {
        batch.push_back(r);
        batch_total *= r->i[1];
      }
    const int64_t total = batch_total * tiles_m * tiles_n;
    const int64_t groups = std::min<int64_t>(total, facts_.max_groups);
    rk.global = {static_cast<uint32_t>(groups), 1, 1};
    rk.local = {static_cast<uint32_t>(threads), 1, 1};
    const std::string ai = tag("", axis_of(g.i, out_ranges)), aj = tag("", axis_of(g.j, out_ranges));
    const int64_t LD = kMmaTileK + kMmaPad;  // a matrix tile's panel row, in 16-bit words
    if (mma) {
      rk.opts = cat("TC(", to_string(g.unit), ") LOCAL(", ai, ",", mma_waves() / 2, ") LOCAL(", aj, ",2) UPCAST(", aj,
                    ",2) SMEM(", TK, ")");
      shared_.push_back(tag("HCQ_SHARED(uint16_t, tsa, ", TM * LD) + ");");
      shared_.push_back(tag("HCQ_SHARED(uint16_t, tsb, ", TN * LD) + ");");
    } else {
      rk.opts = cat("LOCAL(", ai, ",", TY, ") LOCAL(", aj, ",", TX, ") UPCAST(", ai, ",", R, ") UPCAST(", aj, ",", R,
                    ") SMEM(", TK, ")");
      shared_.push_back(tag("HCQ_SHARED(float, tsa, ", TK * TM) + ");");
      shared_.push_back(tag("HCQ_SHARED(float, tsb, ", TK * TN) + ");");
    }
    root_.lines.push_back("const uint32_t lx = HCQ_LOCAL_ID(0);");
    if (mma)  // the wave's lane, and its strip: rows wm * 16, columns wn * 32
      root_.lines.push_back(tag("const int64_t lane = lx % ", mma_lanes()) + tag(", wm = lx / ", 2 * mma_lanes()) +
                            tag(", wn = lx / ", mma_lanes()) + " % 2;");
    else root_.lines.push_back(tag("const int64_t tx = lx % ", TX) + tag(", ty = lx / ", TX) + ";");
    // Blocks in a loop uniform across the workgroup (every thread reaches every barrier), batch outermost.
    Scope* block =
        open_scope(&root_, tag("for (int64_t tg = HCQ_GROUP_ID(0); tg < ", total) + tag("; tg += ", groups) + ") {");
    if (!batch.empty()) {
      block->lines.push_back(tag("const int64_t tbt = tg / ", tiles_m * tiles_n) + ";");
      bind_flat_ranges(block, batch, "tbt", batch_total);
    }
    block->lines.push_back(tag("const int64_t ti0 = tg / ", tiles_n) + tag(" % ", tiles_m) + tag(" * ", TM) +
                           tag(", tj0 = tg % ", tiles_n) + tag(" * ", TN) + ";");
    const int64_t sums = mma ? mma_shape(g.unit).sums : R;  // per product (matrix) or row (float) a thread holds
    block->lines.push_back(tag("float tacc[", mma ? 2 : R) + tag("][", sums) + "] = {0};");
    // The reduce ranges from the flat position gk along them (row-major, the first outermost).
    std::unordered_map<const NodeData*, std::string> at_a;
    const std::vector<std::string> k_parts = flat_parts(g.ks, "gk", K);
    for (size_t n = 0; n < g.ks.size(); ++n) at_a[g.ks[n]] = "(" + k_parts[n] + ")";
    std::unordered_map<const NodeData*, std::string> at_b = at_a;
    at_a[g.i] = "gi";
    at_b[g.j] = "gj";
    Scope* step = open_scope(block, tag("for (int64_t tk0 = 0; tk0 < ", K) + tag("; tk0 += ", TK) + ") {");
    // A's panel: consecutive threads take consecutive k of a row (A is usually a row-major M x K). Float panels are
    // stored k-major, so the multiply reads a row step's TM values in a run; matrix panels row by row, k contiguous.
    const std::string zero = mma ? "0" : "0.0f";
    const std::string a_value = mma ? half_bits(g.a, at_a) : value_c(g.a, at_a);
    const std::string b_value = mma ? half_bits(g.b, at_b) : value_c(g.b, at_b);
    const std::string a_at = mma ? tag("e / ", TK) + tag(" * ", LD) + tag(" + e % ", TK)
                                 : tag("e % ", TK) + tag(" * ", TM) + tag(" + e / ", TK);
    step->lines.push_back(tag("for (int64_t e = lx; e < ", TM * TK) + tag("; e += ", threads) + ") {");
    step->lines.push_back(tag("  const int64_t gi = ti0 + e / ", TK) + tag(", gk = tk0 + e % ", TK) + ";");
    step->lines.push_back("  tsa[" + a_at + tag("] = gi < ", M) + tag(" && gk < ", K) + " ? " + a_value + " : " + zero +
                          ";");
    step->lines.push_back("}");
    // B's panel: consecutive threads take consecutive columns (B is usually a row-major K x N); a matrix panel holds
    // it transposed (column n's k contiguous), as HCQ_MMA16_* takes it.
    const std::string b_at = mma ? tag("e % ", TN) + tag(" * ", LD) + tag(" + e / ", TN) : std::string("e");
    step->lines.push_back(tag("for (int64_t e = lx; e < ", TK * TN) + tag("; e += ", threads) + ") {");
    step->lines.push_back(tag("  const int64_t gj = tj0 + e % ", TN) + tag(", gk = tk0 + e / ", TN) + ";");
    step->lines.push_back("  tsb[" + b_at + tag("] = gj < ", N) + tag(" && gk < ", K) + " ? " + b_value + " : " + zero +
                          ";");
    step->lines.push_back("}");
    step->lines.push_back("HCQ_BARRIER();");
    if (mma) {
      const std::string op = "HCQ_MMA16_" + mma_macro_unit(g.unit) + (g.half == DType::bfloat16 ? "_BF16" : "_F16");
      step->lines.push_back(tag("for (int64_t ks = 0; ks < ", TK) + "; ks += 16) {");
      for (int t = 0; t < 2; ++t)
        step->lines.push_back(cat("  ", op, "(tacc[", t, "], tsa, wm * ", 16 * LD, " + ks, ", LD, ", tsb, (wn * 32 + ",
                                  16 * t, ") * ", LD, " + ks, ", LD, ", lane);"));
      step->lines.push_back("}");
    } else {
      step->lines.push_back(tag("for (int64_t kk = 0; kk < ", TK) + "; ++kk) {");
      step->lines.push_back(tag("  float ta[", R) + tag("], tb[", R) + "];");
      step->lines.push_back(tag("  for (int64_t u = 0; u < ", R) + tag("; ++u) ta[u] = tsa[kk * ", TM) +
                            tag(" + ty * ", R) + " + u];");
      step->lines.push_back(tag("  for (int64_t u = 0; u < ", R) + tag("; ++u) tb[u] = tsb[kk * ", TN) +
                            tag(" + tx * ", R) + " + u];");
      step->lines.push_back(tag("  for (int64_t u = 0; u < ", R) + tag("; ++u) for (int64_t v = 0; v < ", R) +
                            "; ++v) tacc[u][v] += ta[u] * tb[v];");
      step->lines.push_back("}");
    }
    step->lines.push_back("HCQ_BARRIER();");
    close(step);
    // The epilogue, per sum this thread holds: the reduce's value there, the rest of the kernel after it. A matrix
    // tile's sums sit where the instruction put them.
    Scope* rows = open_scope(block, tag("for (int64_t tu = 0; tu < ", mma ? 2 : R) + "; ++tu) {");
    Scope* cols = open_scope(rows, tag("for (int64_t tv = 0; tv < ", sums) + "; ++tv) {");
    if (mma) {
      const std::string unit = mma_macro_unit(g.unit);
      cols->lines.push_back("const int64_t ei = ti0 + wm * 16 + HCQ_MMA16_" + unit +
                            "_ROW(lane, tv), ej = tj0 + wn * 32 + tu * 16 + HCQ_MMA16_" + unit + "_COL(lane, tv);");
    } else {
      cols->lines.push_back(tag("const int64_t ei = ti0 + ty * ", R) + tag(" + tu, ej = tj0 + tx * ", R) + " + tv;");
    }
    Scope* inside = open_scope(cols, tag("if (ei < ", M) + tag(" && ej < ", N) + ") {");
    names_[g.i] = "ei";
    names_[g.j] = "ej";
    range_scope_[g.i] = range_scope_[g.j] = inside;
    names_[g.reduce] = "tacc[tu][tv]";
    return inside;
  }

  // Grouped reduces (tinygrad's GROUP): when a reduce kernel has few outputs and long reduces, the threads of one
  // workgroup share each output: every thread accumulates a strided part of the reduce, then the partials are
  // combined through shared memory and barriers. Only for kernels whose reduces all sit directly in the output
  // element (no reduce inside another's loop, no kernel-local array): their loops can be strided as one.
  bool group_threads(const Node& kernel, const std::vector<const NodeData*>& out_ranges) {
    // (TargetFacts: fewer outputs than one wave per compute unit, reduces at least a workgroup long.)
    if (!facts_.optimize || facts_.threads_per_group < 32) return false;
    int64_t outputs = 1;
    for (const NodeData* r : out_ranges) outputs *= r->i[1];
    if (outputs > facts_.group_max_outputs) return false;
    bool any = false;
    uint64_t shared = 0;  // each reduce's tree takes a value per thread
    for (const NodeData* n : toposort({kernel})) {
      if (n->op == Op::BUFFERIZE) return false;
      if (n->op != Op::REDUCE) continue;
      any = true;
      for (const NodeData* r : deps(n))
        if (std::find(out_ranges.begin(), out_ranges.end(), r) == out_ranges.end()) return false;
      for (const NodeData* m : toposort({n->src[0]}))
        if (m->op == Op::REDUCE) return false;
      int64_t reduced = 1;
      for (size_t k = 1; k < n->src.size(); ++k) reduced *= n->src[k]->i[1];
      if (reduced < facts_.group_min_reduce) return false;
      shared += std::bit_floor(facts_.threads_per_group) * uint64_t{8};  // 8: the widest value type
    }
    return any && shared <= facts_.shared_memory_bytes;
  }

  // The grouped launch: one workgroup per output element (a grid-stride loop over them beyond the device's
  // limit, uniform across the group so its barriers are reached by every thread), threads_per_group threads each.
  Scope* gpu_group_grid(const std::vector<const NodeData*>& out_ranges, RenderedKernel& rk) {
    int64_t total = 1;
    for (const NodeData* r : out_ranges) total *= r->i[1];
    group_size_ = std::bit_floor(facts_.threads_per_group);  // the tree halves it down to one
    const int64_t groups = std::min<int64_t>(total, facts_.max_groups);
    rk.global = {static_cast<uint32_t>(groups), 1, 1};
    rk.local = {static_cast<uint32_t>(group_size_), 1, 1};
    root_.lines.push_back("const uint32_t lx = HCQ_LOCAL_ID(0);");
    Scope* element = open_scope(&root_, "for (int64_t gi = HCQ_GROUP_ID(0); gi < " + std::to_string(total) +
                                            "; gi += " + std::to_string(groups) + ") {");
    bind_flat_ranges(element, out_ranges, "gi", total);
    return element;
  }

  static bool has(const std::vector<const NodeData*>& v, const NodeData* r) {
    return std::find(v.begin(), v.end(), r) != v.end();
  }

  // Each range's value from the flat index `flat` (row-major over them, `total` in all), as C expressions (a chain
  // of / and %, read left to right). `extents`, when given, replaces the ranges' own (a vectorised range counts runs
  // of lanes).
  static std::vector<std::string> flat_parts(const std::vector<const NodeData*>& ranges, const std::string& flat,
                                             int64_t total, const std::vector<int64_t>& extents = {}) {
    std::vector<std::string> out;
    int64_t inner = total;
    for (size_t k = 0; k < ranges.size(); ++k) {
      const int64_t extent = extents.empty() ? ranges[k]->i[1] : extents[k];
      inner /= extent;
      std::string e = flat;
      if (inner > 1) e += tag(" / ", inner);
      if (k > 0) e += tag(" % ", extent);  // the first range is flat / inner < its extent already (C: left to right)
      out.push_back(std::move(e));
    }
    return out;
  }

  // Defines each range of `ranges` in `scope` from the flat index `flat` (flat_parts).
  void bind_flat_ranges(Scope* scope, const std::vector<const NodeData*>& ranges, const std::string& flat,
                        int64_t total, const std::vector<int64_t>& extents = {}) {
    const std::vector<std::string> parts = flat_parts(ranges, flat, total, extents);
    for (size_t k = 0; k < ranges.size(); ++k) {
      const std::string v = tag("r", ranges[k]->i[0]);
      scope->lines.push_back("const int64_t " + v + " = " + parts[k] + ";");
      range_scope_[ranges[k]] = scope;
      names_[ranges[k]] = v;
    }
  }

  // A grouped reduce: each thread accumulates every group_size_-th element of the flattened reduce ranges, then a
  // tree over shared memory combines the partials (log2(threads) rounds, a barrier after each), and every thread
  // reads the result. A last barrier keeps the next output's (or reduce's) partials from overwriting it early.
  std::string emit_group_reduce(const NodeData* n, const std::string& acc, Scope* home) {
    const Op op = static_cast<Op>(n->i[0]);
    std::vector<const NodeData*> ranges;
    int64_t reduced = 1;
    for (size_t k = 1; k < n->src.size(); ++k) {
      ranges.push_back(n->src[k].get());
      reduced *= n->src[k]->i[1];
    }
    const std::string ri = tag("ri", next_var_++);
    Scope* loop = open_scope(home, "for (int64_t " + ri + " = lx; " + ri + " < " + std::to_string(reduced) + "; " + ri +
                                       tag(" += ", group_size_) + ") {");
    bind_flat_ranges(loop, ranges, ri, reduced);
    emit(n->src[0]);
    loop->lines.push_back(acc + " = " + combine(op, n->dtype, acc, ref(n->src[0].get())) + ";");
    close(loop);
    const std::string red = tag("red", next_var_++);
    shared_.push_back(std::string("HCQ_SHARED(") + value_type(n->dtype) + ", " + red + tag(", ", group_size_) + ");");
    const std::string mine = red + "[lx]", theirs = red + "[lx + s]";
    home->lines.push_back(mine + " = " + acc + ";");
    home->lines.push_back("HCQ_BARRIER();");
    home->lines.push_back(tag("for (uint32_t s = ", group_size_ / 2) + "; s > 0; s >>= 1) {");
    home->lines.push_back("  if (lx < s) " + mine + " = " + combine(op, n->dtype, mine, theirs) + ";");
    home->lines.push_back("  HCQ_BARRIER();");
    home->lines.push_back("}");
    home->lines.push_back(acc + " = " + red + "[0];");
    home->lines.push_back("HCQ_BARRIER();");
    return acc;
  }

  Scope* open_scope(Scope* parent, const std::string& header) {
    auto* s = new Scope{parent, parent->depth + 1, header, {}};
    owned_.emplace_back(s);
    return s;
  }

  // Upcast (tinygrad's UPCAST): in a reduce kernel, the last output loop steps by U and every value that depends on
  // it becomes a U-wide array computed in a short inner loop, which clang turns into vector code. Worth it when a
  // load in the reduce body does not depend on that loop (its value is reused U times, e.g. a row of a matmul's
  // left operand) and another reads it contiguously (the U lanes are one vector load).
  void choose_upcast(const Node& kernel, const std::vector<const NodeData*>& out_ranges) {
    // GPUs: not yet (each thread computes one element; vector lanes across threads are a later part).
    if (!facts_.optimize || out_ranges.empty() || facts_.target != Target::cpu) return;
    const NodeData* r = out_ranges.back();
    const NodeData* reduce = nullptr;
    bool local_array = false;  // local arrays are filled by scalar loops; no lanes through them
    for (const NodeData* n : toposort({kernel})) {
      if (n->op == Op::REDUCE) reduce = n;
      local_array = local_array || n->op == Op::BUFFERIZE;
    }
    if (!reduce || local_array) return;
    const DType t = kernel->src[0]->src[0]->dtype;
    const int64_t u = t == DType::int64 ? 8 : 16;
    if (r->i[1] % u != 0) return;
    bool reused = false, contiguous = false;
    for (const NodeData* n : toposort({reduce->src[0]})) {
      if (n->op != Op::LOAD) continue;
      const std::vector<const NodeData*>& d = deps(n);
      if (std::find(d.begin(), d.end(), r) == d.end()) reused = true;
      else if (coefficient(n->src[1].get(), r) == 1) contiguous = true;
    }
    // A sum down the columns (a bias's gradient: every load reads the lane range contiguously, none is reused) gets
    // lanes too: U column sums advance together, one vector load per step of the reduce, instead of U strided scalar
    // reduces.
    bool all_contiguous = contiguous;
    for (const NodeData* n : toposort({reduce->src[0]})) {
      if (n->op != Op::LOAD) continue;
      const std::vector<const NodeData*>& d = deps(n);
      if (std::find(d.begin(), d.end(), r) != d.end() && coefficient(n->src[1].get(), r) != 1) all_contiguous = false;
    }
    if (!(reused && contiguous) && !all_contiguous) return;
    lane_ = r;
    upcast_ = u;
    deps_.clear();
  }

  // Register tiles (tinygrad's UPCAST on two axes, for matmul-shaped reduces on the CPU device): a kernel whose one
  // reduce is a float32 sum, over its reduce ranges k (one for a matmul, three for a convolution), of a product A * B,
  // A reading a row range i and not a column range j, B the other way round, computes R rows by NW columns per step:
  // R*W accumulators of NW/W floats each held in vector registers (clang's ext_vector_type), per k one vector of B per
  // W and one broadcast of A per row, so each value feeds W or R multiply-adds instead of one. The tile's sums go
  // through a small array into the epilogue (bias, activation: the rest of the kernel), which runs on NW-wide lanes
  // per row (choose_upcast's machinery). Loop order: columns outside rows, so the K x NW panel of B stays in cache
  // over all the rows of a worker; the panel is first packed contiguous (PACK) when the rows are many, since B's rows
  // are N floats apart and a power-of-two stride maps every one of them into the same few cache sets. A B that is not
  // one contiguous load is computed into the panel lane by lane.
  struct Tile {
    const NodeData* i = nullptr;       // rows
    const NodeData* j = nullptr;       // columns
    std::vector<const NodeData*> ks;   // the reduce ranges (a convolution's channel and window: several)
    const NodeData* reduce = nullptr;  // its REDUCE
    const NodeData* a = nullptr;       // the row operand: a load, or an expression of loads (one value per row and k)
    const NodeData* b = nullptr;       // the column operand (one vector of columns per k)
    int64_t rows = 1, vectors = 1, width = 16;
    bool pack = false;    // B's K x NW panel copied contiguous first (PACK)
    bool gather = false;  // B does not read j contiguously: the packing gathers it lane by lane
    bool dot = false;     // a dot tile (choose_dot_tile): `vectors` is then the number of columns, not of vectors
    bool vec_b = false;   // a gathered B that is computed a vector at a time instead (vectorizable along j)
    // A gathered panel too large for the stack is packed a block at a time: this many iterations of the outermost
    // reduce range per block (0: the whole K at once), with every row's sums kept in an array between blocks.
    int64_t k_block = 0;
    bool bf16 = false;        // a bf16 tile (choose_bf16_tile): 16 rows by `vectors` blocks of 16 columns
    bool a_in_place = false;  // ... whose A rows are read where they are (no packing)
  };

  // Whether a float32 value can be computed for V consecutive values of range r at once, as one clang vector: its
  // tree is loads that read r contiguously (one vector load) or not at all (one value for every lane), constants,
  // +, -, *, max, negation, and a select on a comparison of such values (a bias added and a ReLU applied to a
  // product's operand, a ReLU's mask on a gradient).
  bool vectorizable(const NodeData* n, const NodeData* r) {
    if (n->dtype != DType::float32) return false;
    switch (n->op) {
      case Op::WHERE: {
        const NodeData* c = n->src[0].get();
        return (c->op == Op::CMPLT || c->op == Op::CMPEQ || c->op == Op::CMPNE) && vectorizable(c->src[0].get(), r) &&
               vectorizable(c->src[1].get(), r) && vectorizable(n->src[1].get(), r) && vectorizable(n->src[2].get(), r);
      }
      case Op::CONST: return true;
      case Op::LOAD: {
        if (n->src.size() != 2 || n->src[0]->op != Op::PARAM) return false;
        const std::vector<const NodeData*>& d = deps(n);
        return std::find(d.begin(), d.end(), r) == d.end() || coefficient(n->src[1].get(), r) == 1;
      }
      case Op::ADD:
      case Op::SUB:
      case Op::MUL:
      case Op::MAX:
      case Op::NEG:
        return std::all_of(n->src.begin(), n->src.end(), [&](const Node& x) { return vectorizable(x.get(), r); });
      default: return false;
    }
  }
  // The vector C expression of a vectorizable value, lane 0 at the position `at` gives r (value_c's names otherwise).
  // max keeps the scalar form's NaN rule (a NaN in either operand wins: combine()).
  std::string vector_c(const NodeData* n, const NodeData* r,
                       const std::unordered_map<const NodeData*, std::string>& at) {
    auto splat = [](const std::string& x) { return "((hcq_vf)(" + x + "))"; };
    switch (n->op) {
      case Op::CONST: return splat(literal(n->dtype, n->const_value()));
      case Op::LOAD: {
        const std::string ref = tag("b", n->src[0]->i[0]) + "[" + value_c(n->src[1].get(), at) + "]";
        const std::vector<const NodeData*>& d = deps(n);
        return std::find(d.begin(), d.end(), r) == d.end() ? splat(ref) : "(*(const hcq_vfu*)&" + ref + ")";
      }
      case Op::NEG: return "(-" + vector_c(n->src[0].get(), r, at) + ")";
      case Op::WHERE: {  // a comparison of vectors is a vector of 0 / -1, which ?: selects lane by lane
        const NodeData* c = n->src[0].get();
        const char* cmp = c->op == Op::CMPLT ? " < " : c->op == Op::CMPEQ ? " == " : " != ";
        return "((" + vector_c(c->src[0].get(), r, at) + cmp + vector_c(c->src[1].get(), r, at) + ") ? " +
               vector_c(n->src[1].get(), r, at) + " : " + vector_c(n->src[2].get(), r, at) + ")";
      }
      default: break;
    }
    const std::string a = vector_c(n->src[0].get(), r, at), b = vector_c(n->src[1].get(), r, at);
    switch (n->op) {
      case Op::ADD: return "(" + a + " + " + b + ")";
      case Op::SUB: return "(" + a + " - " + b + ")";
      case Op::MUL: return "(" + a + " * " + b + ")";
      case Op::MAX: return "((" + a + " != " + a + " | " + a + " > " + b + ") ? " + a + " : " + b + ")";
      default: throw InvalidArgument(cat("render_c: no vector C for a ", op_name(n->op), " node"));
    }
  }

  // A value of the reduce's body as one C expression with some ranges replaced (the memoised emit() cannot: a node's
  // name is fixed once emitted): A per row and k, B per column and k. Operands are small trees (loads, casts, a
  // mask), so printing shared subtrees twice costs nothing that matters.
  static bool printable(const NodeData* n) {
    if (n->op == Op::REDUCE || n->op == Op::BUFFERIZE) return false;
    for (const Node& s : n->src)
      if (!printable(s.get())) return false;
    return true;
  }
  std::string value_c(const NodeData* n, const std::unordered_map<const NodeData*, std::string>& at) {
    if (auto it = at.find(n); it != at.end()) return it->second;
    if (n->op == Op::RANGE) return names_.at(n);
    if (n->op == Op::CONST) return literal(n->dtype, n->const_value());
    if (n->op == Op::PARAM) return tag("b", n->i[0]);
    if (n->op == Op::VAR_PARAM) return var_ref(n);
    std::vector<std::string> a;
    for (const Node& s : n->src) a.push_back(value_c(s.get(), at));
    return "(" + expr(n, a) + ")";
  }

  // Output ranges: the RANGEs of the store's index, by id.
  static std::vector<const NodeData*> output_ranges(const Node& kernel) {
    std::vector<const NodeData*> out;
    for (const NodeData* n : toposort({kernel->src.at(0)->src[1]}))
      if (n->op == Op::RANGE && n->i[2] == 0) out.push_back(n);
    std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->i[0] < b->i[0]; });
    return out;
  }

  // Merged columns for a convolution's register tile (MERGE): in a product A * B where B reads several output
  // ranges that A does not (a convolution's image rows and columns, read through the window as in[y + ky][x + kx]),
  // no one of them may make a good column range: x is 20 or 10 wide (no whole vectors) and the batch, the only other
  // candidate, strides a whole image per lane, so every gathered lane of the panel is a cache miss. The innermost
  // such ranges, merged into one range p (y = p / X, x = p % X, and a batch b = p / (Y X) when the image alone is no
  // whole number of vectors), are a column range of Y X lanes whose gather reads whole runs of each image row: the
  // im2col panel of a convolution, gathered per block of columns. Returns the kernel with the ranges replaced (the
  // merged range gets a new id, after every other) and their axes in `axes`, or nullptr when no suffix of those
  // ranges has a multiple of the vector width as its extent.
  Node merge_for_tile(const Node& kernel, const std::vector<const NodeData*>& out_ranges, std::vector<int64_t>& axes) {
    if (facts_.target != Target::cpu || !facts_.optimize || out_ranges.size() < 3) return nullptr;
    const bool avx512 = facts_.cpu_isa.features.has(CpuFeature::avx512f);
    const int64_t V = avx512 ? 16 : 8;
    const NodeData* reduce = sum_of_products(kernel);
    if (!reduce) return nullptr;
    for (int first = 0; first < 2; ++first) {
      const NodeData* a = reduce->src[0]->src[first].get();
      const NodeData* b = reduce->src[0]->src[1 - first].get();
      const std::vector<const NodeData*> da = deps(a), db = deps(b);
      std::vector<const NodeData*> b_only;
      bool rows = false;
      for (const NodeData* r : out_ranges) {
        if (has(db, r) && !has(da, r)) b_only.push_back(r);
        if (has(da, r) && !has(db, r)) rows = true;
      }
      // The innermost output range must be among them: the merged lanes then run along the output's rows.
      if (!rows || b_only.size() < 2 || b_only.back() != out_ranges.back()) continue;
      // The shortest suffix whose extent is a whole number of 4-vector column blocks (the widest tile), else of
      // 2, else of 1: a 20 x 20 image is 25 vectors, which only a 16 x 1 tile divides (one vector load feeds 16
      // multiply-adds, 16 broadcasts); with the batch merged too, a 4 x 4 tile runs at twice its speed.
      size_t from = 0;
      for (int64_t blocks = 4; blocks >= 1 && from == 0; blocks /= 2) {
        int64_t e = b_only.back()->i[1];
        for (size_t n = b_only.size() - 1; n-- > 0;) {
          e *= b_only[n]->i[1];
          if (e % (blocks * V) == 0) {
            from = n + 1;
            break;
          }
        }
      }
      if (from == 0) continue;
      return merge_ranges(kernel, {b_only.begin() + static_cast<std::ptrdiff_t>(from - 1), b_only.end()}, out_ranges,
                          axes);
    }
    return nullptr;
  }

  // Merged rows for a convolution's weight gradient (MERGE, the rows): dW[co, ci, ky, kx] is a sum over the batch
  // and the image of g[b, co, y, x] * in[b, ci, y + ky, x + kx]. Tiled as it comes, the rows are one of ci, ky, kx
  // and the columns co, whose g is read 400 floats apart and gathered into the panel, once per (ky, kx) outside the
  // tile: 25 times over for a 5x5 window. With ci, ky, kx merged into one row range, every row of the 800 reads
  // the same panel of g, gathered once per block of the batch; a row's value is a plain load of the input (its
  // divisions are per row step, outside the k loops). `t` is the tile chosen for the kernel as it comes.
  Node merge_rows_for_tile(const Node& kernel, const std::vector<const NodeData*>& out_ranges, const Tile& t,
                           std::vector<int64_t>& axes) {
    if (facts_.target != Target::cpu || !facts_.optimize || !t.gather || t.k_block == 0) return nullptr;
    // The operand that reads several output ranges the other does not (the input's ci, ky, kx) becomes the rows,
    // whichever side of the tile it was on.
    for (const NodeData* x : {t.a, t.b}) {
      const NodeData* y = x == t.a ? t.b : t.a;
      const std::vector<const NodeData*> dx = deps(x), dy = deps(y);
      std::vector<const NodeData*> only;
      for (const NodeData* r : out_ranges)
        if (std::find(dx.begin(), dx.end(), r) != dx.end() && std::find(dy.begin(), dy.end(), r) == dy.end())
          only.push_back(r);
      if (only.size() >= 2) return merge_ranges(kernel, only, out_ranges, axes);
    }
    return nullptr;
  }

  // The kernel with output ranges `merged` (outermost first) replaced by one new range p (an id after every other),
  // each range r by (p / the extents inside it) % its extent; merged_parts_ records those values, `axes` the ranges'
  // axes.
  Node merge_ranges(const Node& kernel, const std::vector<const NodeData*>& merged,
                    const std::vector<const NodeData*>& out_ranges, std::vector<int64_t>& axes) {
    int64_t max_id = 0, extent = 1;
    for (const NodeData* n : toposort({kernel}))
      if (n->op == Op::RANGE) max_id = std::max(max_id, n->i[0]);
    for (const NodeData* r : merged) extent *= r->i[1];
    const Node p = make_node(Op::RANGE, kIndex, {}, {max_id + 1, extent, 0});
    std::unordered_map<const NodeData*, Node> memo;
    int64_t inner = extent;
    merged_parts_.clear();
    axes.clear();
    for (const NodeData* r : merged) {
      inner /= r->i[1];
      Node v = inner > 1 ? idx_div(p, inner) : p;
      if (r != merged.front()) v = idx_mod(v, r->i[1]);
      memo[r] = v;
      merged_parts_.push_back({v, r->i[1], inner});
      axes.push_back(axis_of(r, out_ranges));
    }
    deps_.clear();
    return substitute(kernel, memo);
  }
  // `n` with the nodes that are keys of `memo` replaced by their values (and memo filled with the rest).
  static Node substitute(const Node& n, std::unordered_map<const NodeData*, Node>& memo) {
    if (auto it = memo.find(n.get()); it != memo.end()) return it->second;
    Node out = map_sources(n, [&](const Node& s) { return substitute(s, memo); });
    memo[n.get()] = out;
    return out;
  }

  // Every register tile the kernel could take (bf16, broadcast and dot tiles of every shape that fits, unmerged
  // ranges only), best-ranked first (tile_rank, the heuristics' own measure): the alternatives a search times
  // (HCQ_BEAM, framework/engine/beam.cpp). Leaves the renderer's choice as it was.
  std::vector<Tile> tile_alternatives(const Node& kernel, const std::vector<const NodeData*>& out_ranges) {
    std::vector<Tile> all;
    collect_ = &all;
    choose_tile(kernel, out_ranges);
    collect_ = nullptr;
    tile_ = Tile{};
    lane_ = nullptr;
    upcast_ = 1;
    deps_.clear();
    std::stable_sort(all.begin(), all.end(), [](const Tile& x, const Tile& y) {
      return tile_rank(x.rows, x.vectors) > tile_rank(y.rows, y.vectors);
    });
    return all;
  }

  // Choice k > 0 (render_c): the k-th alternative tile, or for the last choice none (the plain loops, upcast as the
  // heuristics would).
  bool choose_alternative(const Node& kernel, const std::vector<const NodeData*>& out_ranges) {
    const std::vector<Tile> all = tile_alternatives(kernel, out_ranges);
    if (choice_ > all.size() + 1)
      throw InvalidArgument(cat("render_c: choice ", choice_, " of a kernel with ", all.size() + 2,
                                " renderings (0 to ", all.size() + 1, ")"));
    if (choice_ == all.size() + 1 || facts_.target != Target::cpu || !facts_.optimize) return false;
    tile_ = all[choice_ - 1];
    lane_ = tile_.j;
    upcast_ = tile_.dot ? tile_.vectors : tile_.vectors * tile_.width;
    deps_.clear();
    return true;
  }

  // The kernel's one reduce when it is a float32 sum of a product (a matmul, a convolution), and the kernel has no
  // local array: what every tile takes. Else null.
  static const NodeData* sum_of_products(const Node& kernel) {
    const NodeData* reduce = nullptr;
    for (const NodeData* n : toposort({kernel})) {
      if (n->op == Op::BUFFERIZE) return nullptr;
      if (n->op != Op::REDUCE) continue;
      if (reduce) return nullptr;
      reduce = n;
    }
    if (!reduce || static_cast<Op>(reduce->i[0]) != Op::ADD || reduce->dtype != DType::float32 ||
        reduce->src[0]->op != Op::MUL)
      return nullptr;
    return reduce;
  }

  bool choose_tile(const Node& kernel, const std::vector<const NodeData*>& out_ranges) {
    if (facts_.target != Target::cpu || !facts_.optimize || out_ranges.size() < 2) return false;
    if (choose_bf16_tile(kernel, out_ranges)) return true;
    const NodeData* reduce = sum_of_products(kernel);
    if (!reduce) return false;
    const NodeData* body = reduce->src[0].get();
    std::vector<const NodeData*> ks;
    for (size_t n = 1; n < reduce->src.size(); ++n) ks.push_back(reduce->src[n].get());
    auto has_any = [&](const std::vector<const NodeData*>& v) {
      return std::any_of(ks.begin(), ks.end(), [&](const NodeData* k) { return has(v, k); });
    };
    // Every assignment of the operands and of an output range to rows (read by A, not B) and columns (read by B,
    // not A) is a candidate: the better shape wins (tile_rank), then one whose B is a plain contiguous load.
    auto better = [](const Tile& x, const Tile& y) {
      const double rx = tile_rank(x.rows, x.vectors), ry = tile_rank(y.rows, y.vectors);
      return rx != ry ? rx > ry : !x.gather && y.gather;
    };
    for (int first = 0; first < 2; ++first) {
      const NodeData* a = body->src[first].get();
      const NodeData* b = body->src[1 - first].get();
      if (a->dtype != DType::float32 || !printable(a) || !printable(b)) return false;
      const std::vector<const NodeData*> da = deps(a), db = deps(b);
      if (!has_any(da) || !has_any(db)) continue;
      for (const NodeData* i : out_ranges) {
        if (!has(da, i) || has(db, i)) continue;
        for (const NodeData* j : out_ranges) {
          if (!has(db, j) || has(da, j)) continue;
          if (merged_ && j != out_ranges.back()) continue;       // the merged range is the columns (merge_for_tile)
          if (merged_rows_ && i != out_ranges.back()) continue;  // ... or the rows (merge_rows_for_tile)
          Tile t;
          t.a = a;
          t.b = b;
          t.i = i;
          t.j = j;
          t.ks = ks;
          t.reduce = reduce;
          // B is one vector load per k when it is a plain load contiguous in j; anything else (a strided load, a
          // masked gradient, a cast) is computed lane by lane into the packed panel.
          t.gather = !(b->op == Op::LOAD && b->src.size() == 2 && b->src[0]->op == Op::PARAM &&
                       b->dtype == DType::float32 && coefficient(b->src[1].get(), j) == 1);
          t.vec_b = t.gather && vectorizable(b, j);
          if (pick_tile_shape(t) && !collect_ && (!tile_.i || better(t, tile_))) tile_ = t;
        }
      }
    }
    if ((!tile_.i || tile_.gather || collect_) && !merged_ && !merged_rows_) {
      Tile d;
      if (choose_dot_tile(body, reduce, ks, d) && !collect_) tile_ = d;
    }
    if (!tile_.i) return false;
    lane_ = tile_.j;
    upcast_ = tile_.dot ? tile_.vectors : tile_.vectors * tile_.width;
    deps_.clear();
    return true;
  }

  // bf16 tiles (tinygrad's TC, tensor cores, on the CPU device): a kernel whose one reduce is a float32 sum over one
  // range k of a product of two bfloat16 values widened to float32 (Tensor::matmul's form for half types), A reading
  // a row range i and not a column range j, B the other way round, both multiples of 16, computes 16 rows (32 with
  // AMX where they divide) by NW = 16 W columns per step through the kernel ABI's bf16 micro-kernels
  // (include/hcq/kernel_abi.h): AMX tiles, vdpbf16ps, or FMAs on widened bf16, as the device's features choose
  // (TargetFacts::cpu_isa.bf16_matmul; none on the scalar path, which keeps the float32 tiles). Per column block, B's K x NW panel is packed in the VNNI layout the
  // micro-kernels read (pairs of k per column), zero-padded to a multiple of 32 in k; A's rows are read where they
  // are when they are a plain load contiguous in k with a constant row stride and K is a multiple of 32, else
  // packed per row step. The sums go through a 16 x NW array into the epilogue, as the float32 tiles' do.
  static constexpr int64_t kBf16TileRows = 16, kBf16Step = 32;

  // A float16 or bfloat16 value widened to float32: its half type; float32 for anything else.
  static DType widened_half(const NodeData* n) {
    const DType h = n->src.empty() ? DType::float32 : n->src[0]->dtype;
    const bool half = h == DType::bfloat16 || h == DType::float16;
    return n->op == Op::CAST && n->dtype == DType::float32 && half && printable(n->src[0].get()) ? h : DType::float32;
  }
  static bool widened_bf16(const NodeData* n) { return widened_half(n) == DType::bfloat16; }
  static bool plain_half_load(const NodeData* n) {
    return n->op == Op::LOAD && n->src.size() == 2 && n->src[0]->op == Op::PARAM &&
           (n->dtype == DType::bfloat16 || n->dtype == DType::float16);
  }
  static bool plain_bf16_load(const NodeData* n) { return plain_half_load(n) && n->dtype == DType::bfloat16; }

  bool choose_bf16_tile(const Node& kernel, const std::vector<const NodeData*>& out_ranges) {
    if (facts_.cpu_isa.bf16_matmul == Bf16MatmulPath::scalar) return false;
    const NodeData* reduce = sum_of_products(kernel);
    if (!reduce || reduce->src.size() != 2) return false;  // one reduce range
    const NodeData* body = reduce->src[0].get();
    const NodeData* k = reduce->src[1].get();
    const int64_t K = k->i[1], Kp = (K + kBf16Step - 1) / kBf16Step * kBf16Step;
    for (int first = 0; first < 2; ++first) {
      const NodeData* a = body->src[first].get();
      const NodeData* b = body->src[1 - first].get();
      if (!widened_bf16(a) || !widened_bf16(b)) return false;
      const std::vector<const NodeData*> da = deps(a), db = deps(b);
      if (!has(da, k) || !has(db, k)) return false;
      for (const NodeData* i : out_ranges) {
        if (!has(da, i) || has(db, i) || i->i[1] % kBf16TileRows != 0) continue;
        for (const NodeData* j : out_ranges) {
          if (!has(db, j) || has(da, j)) continue;
          // The widest column block (4, 2 or 1 micro-kernel blocks) that divides N and whose panel fits the stack.
          for (int64_t w = 4; w >= 1; w /= 2) {
            if (j->i[1] % (16 * w) != 0 || Kp * 16 * w * 2 > kMaxPanelBytes) continue;
            Tile t;
            t.a = a;
            t.b = b;
            t.i = i;
            t.j = j;
            t.ks = {k};
            t.reduce = reduce;
            // AMX takes 32 x 32 blocks where they divide the output (hcq_bf16_mm32_amx).
            const bool amx32 = facts_.cpu_isa.bf16_matmul == Bf16MatmulPath::amx && i->i[1] % 32 == 0 && w >= 2;
            t.rows = amx32 ? 32 : kBf16TileRows;
            t.vectors = w;
            t.width = 16;
            t.bf16 = true;
            const NodeData* x = a->src[0].get();
            t.a_in_place = plain_bf16_load(x) && K % kBf16Step == 0 && coefficient(x->src[1].get(), k) == 1 &&
                           coefficient(x->src[1].get(), i) > 0 &&
                           coefficient(x->src[1].get(), i) <= std::numeric_limits<uint32_t>::max();
            if (collect_) {  // tile_alternatives: every width, and 16-row steps where AMX takes 32
              collect_->push_back(t);
              if (t.rows == 32) {
                t.rows = kBf16TileRows;
                collect_->push_back(t);
              }
              continue;
            }
            tile_ = t;
            lane_ = j;
            upcast_ = 16 * w;
            deps_.clear();
            return true;
          }
        }
      }
    }
    return false;
  }

  // The bits of a float16 or bf16 operand (the value under its widening cast) with some ranges replaced: a plain
  // load's storage word, anything else rounded from its float value (exact: it is a value of that type).
  std::string half_bits(const NodeData* widened, const std::unordered_map<const NodeData*, std::string>& at) {
    const NodeData* x = widened->src[0].get();
    if (plain_half_load(x)) return tag("b", x->src[0]->i[0]) + "[" + value_c(x->src[1].get(), at) + "]";
    return (x->dtype == DType::bfloat16 ? "hcq_f2b(" : "hcq_f2h(") + value_c(x, at) + ")";
  }

  // A bf16 tile's panel, rows and micro-kernel calls inside the column loop `cur`; returns the epilogue's scope (one
  // row of the tile, NW lanes), as render_tile does.
  Scope* render_bf16_tile(Scope* cur, const std::pair<std::string, std::string>& row_bounds) {
    const Tile& t = tile_;
    const NodeData* k = t.ks[0];
    const int64_t K = k->i[1], Kp = (K + kBf16Step - 1) / kBf16Step * kBf16Step, NW = t.vectors * 16;
    const std::string path(to_string(facts_.cpu_isa.bf16_matmul));
    const int64_t R = t.rows;
    const std::string rj = names_.at(t.j), ri = tag("r", t.i->i[0]);
    auto at = [&](const NodeData* r, const std::string& v, const std::string& kv) {
      return std::unordered_map<const NodeData*, std::string>{{r, v}, {k, kv}};
    };
    // B's panel: packed row r holds the pairs (B[2r][c], B[2r + 1][c]) of every column c of the block.
    const std::string panel = tag("pk", next_var_++);
    cur->lines.push_back("uint16_t " + panel + tag("[", Kp * NW) + "];");
    cur->lines.push_back(tag("for (int64_t tk = 0; tk < ", K) + tag("; ++tk) for (int64_t tn = 0; tn < ", NW) +
                         "; ++tn) " + panel + tag("[(tk >> 1) * ", 2 * NW) +
                         " + 2 * tn + (tk & 1)] = " + half_bits(t.b, at(t.j, "(" + rj + " + tn)", "tk")) + ";");
    if (Kp > K)
      cur->lines.push_back(tag("for (int64_t tk = ", K) + tag("; tk < ", Kp) +
                           tag("; ++tk) for (int64_t tn = 0; tn < ", NW) + "; ++tn) " + panel +
                           tag("[(tk >> 1) * ", 2 * NW) + " + 2 * tn + (tk & 1)] = 0;");
    Scope* rows = open_scope(cur, "for (int64_t " + ri + " = " + row_bounds.first + "; " + ri + " < " +
                                      row_bounds.second + "; " + ri + tag(" += ", R) + ") {");
    names_[t.i] = ri;
    range_scope_[t.i] = rows;
    // A's R rows: where they are, or packed (zero-padded in k).
    std::string a_ptr, lda;
    if (t.a_in_place) {
      const NodeData* x = t.a->src[0].get();
      a_ptr = "&" + tag("b", x->src[0]->i[0]) + "[" + value_c(x->src[1].get(), at(t.i, ri, "0")) + "]";
      lda = std::to_string(coefficient(x->src[1].get(), t.i));
    } else {
      a_ptr = tag("pa", next_var_++);
      rows->lines.push_back("uint16_t " + a_ptr + tag("[", R * Kp) + "];");
      rows->lines.push_back(tag("for (int64_t tu = 0; tu < ", R) + tag("; ++tu) for (int64_t tk = 0; tk < ", K) +
                            "; ++tk) " + a_ptr + tag("[tu * ", Kp) +
                            " + tk] = " + half_bits(t.a, at(t.i, "(" + ri + " + tu)", "tk")) + ";");
      if (Kp > K)
        rows->lines.push_back(tag("for (int64_t tu = 0; tu < ", R) + tag("; ++tu) for (int64_t tk = ", K) +
                              tag("; tk < ", Kp) + "; ++tk) " + a_ptr + tag("[tu * ", Kp) + " + tk] = 0;");
      lda = std::to_string(Kp);
    }
    const std::string tile = tag("tile", next_var_++);
    rows->lines.push_back(std::string("float ") + tile + tag("[", R) + tag("][", NW) + "];");
    rows->lines.push_back("__builtin_memset(" + tile + ", 0, sizeof " + tile + ");");
    // 32 x 32 blocks (AMX: each loaded A and B tile feeds two tdpbf16ps), else 16 x 16 ones.
    const int64_t block = R == 32 ? 32 : 16;
    const std::string kernel = R == 32 ? "hcq_bf16_mm32_amx" : "hcq_bf16_mm16_" + path;
    rows->lines.push_back(tag("for (int64_t tw = 0; tw < ", NW / block) + "; ++tw) " + kernel + "(&" + tile +
                          tag("[0][tw * ", block) + tag("], ", NW) + ", " + a_ptr + ", " + lda + ", " + panel +
                          tag(" + tw * ", 2 * block) + tag(", ", 2 * NW) + tag(", ", Kp) + ");");
    Scope* epilogue = open_scope(rows, tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) {");
    const std::string sums = tag("trow", next_var_++);
    epilogue->lines.push_back("const float* " + sums + " = " + tile + "[tu];");
    names_[t.i] = "(" + ri + " + tu)";
    range_scope_[t.i] = epilogue;
    names_[t.reduce] = sums;
    return epilogue;
  }

  // Dot tiles (tinygrad's UPCAST of two output axes with the reduce axis unrolled into a vector): a product whose
  // two operands both read the reduce range k contiguously (x . W^T, as nn.Linear's forward is: rows of x by rows of
  // W) has no operand contiguous along an output range, so the broadcast tile above would gather one of them lane by
  // lane into its panel. Instead, R rows by C columns of dot products advance together along k, V floats at a time:
  // per k step R vector loads of A, C of B and R*C vector multiply-adds into R*C accumulators, each summed across
  // its V lanes at the end. No packing: a worker's C rows of B (C*K floats) stay in L1 while its rows of A stream.
  // Both operands must be float32 values computable a vector of k at a time (vectorizable: loads, a bias, a ReLU),
  // one reduce range whose extent V divides.
  bool choose_dot_tile(const NodeData* body, const NodeData* reduce, const std::vector<const NodeData*>& ks,
                       Tile& out) {
    const bool avx512 = facts_.cpu_isa.features.has(CpuFeature::avx512f);
    if (!avx512 && !(facts_.cpu_isa.features.has(CpuFeature::avx2) && facts_.cpu_isa.features.has(CpuFeature::fma)))
      return false;
    if (ks.size() != 1) return false;
    const NodeData* k = ks[0];
    const int64_t V = avx512 ? 16 : 8, registers = avx512 ? 32 : 16;
    if (k->i[1] % V != 0) return false;
    auto plain = [&](const NodeData* n) { return vectorizable(n, k); };
    bool found = false;
    double best = 0;
    for (int first = 0; first < 2; ++first) {
      const NodeData* a = body->src[first].get();
      const NodeData* b = body->src[1 - first].get();
      if (!plain(a) || !plain(b)) return false;
      const std::vector<const NodeData*> da = deps(a), db = deps(b);
      for (const NodeData* i : out_ranges_) {
        if (!has(da, i) || has(db, i)) continue;
        for (const NodeData* j : out_ranges_) {
          if (!has(db, j) || has(da, j)) continue;
          // R x C: R*C accumulators, R vectors of A and one of B live at once, one register to spare.
          for (int64_t r = 1; r <= 8; ++r)
            for (int64_t c = 1; c <= 8; ++c) {
              if (r * c < 4 || r * c + r + 1 > registers - 1 || i->i[1] % r != 0 || j->i[1] % c != 0) continue;
              const double rank = tile_rank(r, c);
              if (found && rank <= best && !collect_) continue;
              Tile t;
              t.a = a;
              t.b = b;
              t.i = i;
              t.j = j;
              t.ks = ks;
              t.reduce = reduce;
              t.rows = r;
              t.vectors = c;
              t.width = V;
              t.dot = true;
              if (collect_) collect_->push_back(t);
              out = t;
              best = rank;
              found = true;
            }
        }
      }
    }
    return found;
  }

  // R rows by W vectors: the best-ranked shape (tile_rank) that divides the output exactly and fits the registers.
  // The stack a tile's kernel may take (the CPU device's workers run kernels on their own threads' stacks): the
  // packed panel of B, and a blocked panel's row sums.
  static constexpr int64_t kMaxPanelBytes = 512 * 1024, kMaxRowSumsBytes = 256 * 1024;
  // A panel that is read once per row step from L1 (32 KB of the core's 48 KB data cache).
  static constexpr int64_t kL1PanelBytes = 32 * 1024;

  bool pick_tile_shape(Tile& t) const {
    // The CPU device's features (HCQ_CPU_FEATURES can mask them): AVX-512's 16-float vectors, AVX2's 8, else none.
    const bool avx512 = facts_.cpu_isa.features.has(CpuFeature::avx512f);
    if (!avx512 && !(facts_.cpu_isa.features.has(CpuFeature::avx2) && facts_.cpu_isa.features.has(CpuFeature::fma)))
      return false;
    struct Shape {
      int64_t rows, vectors;
    };
    // Every R x W with at least 4 accumulators (fewer feed too few multiply-adds per load to beat the plain loops)
    // whose accumulators, W vectors of B and A's broadcast fit the vector registers with one to spare (32 with
    // AVX-512, 16 with AVX2: 6 x 4 and 6 x 2 at most), best first (tile_rank; wider first where that ties).
    auto shapes_for = [](int64_t registers) {
      std::vector<Shape> out;
      for (int64_t w = 1; w <= 4; w *= 2)
        for (int64_t r = 1; r <= 16; ++r)
          if (r * w >= 4 && r * w + w + 1 <= registers - 1) out.push_back({r, w});
      std::sort(out.begin(), out.end(), [](const Shape& x, const Shape& y) {
        const double rx = tile_rank(x.rows, x.vectors), ry = tile_rank(y.rows, y.vectors);
        return rx != ry ? rx > ry : x.vectors > y.vectors;
      });
      return out;
    };
    static const std::vector<Shape> kAvx512 = shapes_for(32), kAvx2 = shapes_for(16);
    t.width = avx512 ? 16 : 8;
    int64_t K = 1;
    for (const NodeData* k : t.ks) K *= k->i[1];
    const int64_t M = t.i->i[1], N = t.j->i[1];
    const std::vector<Shape>& shapes = avx512 ? kAvx512 : kAvx2;
    for (const Shape& s : shapes) {
      if (M % s.rows != 0 || N % (s.vectors * t.width) != 0) continue;
      if (collect_) {  // tile_alternatives: every shape that fits, not just the first
        Tile c = t;
        c.rows = s.rows;
        c.vectors = s.vectors;
        if (fit_tile_shape(c, K, M)) collect_->push_back(c);
        continue;
      }
      t.rows = s.rows;
      t.vectors = s.vectors;
      if (fit_tile_shape(t, K, M)) return true;
      if (t.gather && rows_per_worker(t, M) < 4) return false;  // too few rows for a gathered panel: no shape helps
    }
    return false;
  }

  // Whether t's rows x vectors shape can be rendered (the panel, its blocks and the row sums fit), setting its
  // packing and K blocks.
  int64_t rows_per_worker(const Tile& t, int64_t M) const {
    return tile_split(t) == t.i ? M / std::max<int64_t>(1, facts_.workers) : M;
  }
  bool fit_tile_shape(Tile& t, int64_t K, int64_t M) const {
    // Packing pays when the panel is reused by several row steps of a worker, and fits a modest stack. A gathered
    // panel costs a scalar load per element: only worth it when at least 4 rows use it.
    const int64_t rows = rows_per_worker(t, M);
    const int64_t panel_bytes_per_k = t.vectors * t.width * 4;
    const bool fits = K * panel_bytes_per_k <= kMaxPanelBytes;
    if (t.gather && rows < 4) return false;
    t.k_block = 0;
    if (t.gather && !fits) {
      // A strided B is only read through the panel: pack it in blocks of the outermost reduce range (a weight
      // gradient's batch), each fitting the stack, if every row's sums fit beside it; else a narrower one may fit.
      const int64_t outer = t.ks[0]->i[1], per_outer = K / outer;
      int64_t block = kMaxPanelBytes / (per_outer * panel_bytes_per_k);
      while (block > 0 && outer % block != 0) --block;
      if (block == 0 || M * t.vectors * t.width * 4 > kMaxRowSumsBytes) return false;
      t.k_block = block;
    }
    // Merged columns (merge_for_tile): the gathered panel is streamed once per row step, and a convolution has few
    // rows (its output channels), so it is packed a block of the outermost reduce range at a time to stay in L1 (a
    // 200 KB panel read from L2 ran the 4x4 tile at 15 GFLOP/s a core, the same tile from L1 at 67).
    if (merged_ && t.k_block == 0 && M * t.vectors * t.width * 4 <= kMaxRowSumsBytes) {
      const int64_t outer = t.ks[0]->i[1], per_outer = K / outer;
      int64_t block = kL1PanelBytes / (per_outer * panel_bytes_per_k);
      while (block > 0 && outer % block != 0) --block;
      if (block > 0 && block < outer) t.k_block = block;
    }
    t.pack = t.gather || (rows / t.rows >= 2 && fits);
    return true;
  }

  // The output range split over the CPU device's workers: the outermost one outside the tile when there is one (a
  // batch, a convolution's channels), so every worker keeps whole tiles; else the rows.
  // Merged columns (merge_for_tile) with no range outside the tile are split by column blocks instead: every
  // worker's panel then serves all the rows.
  const NodeData* tile_split(const Tile& t) const {
    for (const NodeData* r : out_ranges_)
      if (r != t.i && r != t.j) return r->i[1] >= 2 ? r : t.i;
    // bf16 tiles likewise: each worker packs only its own columns' panels.
    if ((merged_ || t.bf16) && !t.dot && t.j->i[1] / (t.vectors * t.width) >= 2) return t.j;
    return t.i;
  }

  // How good an R x W tile is: multiply-adds per value loaded in a k step (R * W of them for R broadcasts and W
  // vectors), which bounds a load-limited loop; then more accumulators (more latency hidden). 4 x 4 (2 per load)
  // beats 16 x 1 (0.94), though both hold 16 accumulators.
  static double tile_rank(int64_t rows, int64_t vectors) {
    const double per_load = static_cast<double>(rows * vectors) / static_cast<double>(rows + vectors);
    return per_load + static_cast<double>(rows * vectors) * 1e-3;
  }

  static int64_t axis_of(const NodeData* r, const std::vector<const NodeData*>& out_ranges) {
    return std::find(out_ranges.begin(), out_ranges.end(), r) - out_ranges.begin();
  }

  std::string tile_opts(uint32_t groups, const std::vector<const NodeData*>& out_ranges) const {
    const int64_t i = axis_of(tile_.i, out_ranges), j = axis_of(tile_.j, out_ranges);
    const int64_t split = axis_of(tile_split(tile_), out_ranges);
    std::string s = groups > 1 ? tag("THREAD(", split) + tag(",", groups) + ") " : std::string();
    s += tag("UPCAST(", i) + tag(",", tile_.rows) + tag(") UPCAST(", j) + tag(",", upcast_) + ")";
    if (tile_.dot) return s + tag(" DOT(", tile_.width) + ")";
    if (tile_.bf16) return s + " TC(" + std::string(to_string(facts_.cpu_isa.bf16_matmul)) + ")";
    return tile_.pack ? s + tag(" PACK(", j) + ")" : s;
  }

  // The tile's loops and micro-kernel; returns the epilogue's scope (one row of the tile, NW lanes).
  Scope* render_tile(const std::vector<const NodeData*>& out_ranges, uint32_t groups) {
    const Tile& t = tile_;
    int64_t K = 1;
    for (const NodeData* k : t.ks) K *= k->i[1];
    const int64_t R = t.rows, W = t.vectors, V = t.width;
    // The reduce ranges: one loop variable each (tk alone, or tk0, tk1, ...), nested outermost first; the panel is
    // indexed by their flat position.
    // Blocked (Tile::k_block): the outermost one runs over this block, [tkb, tkb + k_block), and the panel holds
    // the block.
    const bool blocked = t.k_block > 0;
    std::string k_loops, k_flat;
    std::unordered_map<const NodeData*, std::string> k_at;
    for (size_t n = 0; n < t.ks.size(); ++n) {
      const std::string v = t.ks.size() == 1 ? std::string("tk") : tag("tk", static_cast<int64_t>(n));
      const bool outer_block = blocked && n == 0;
      const int64_t extent = outer_block ? t.k_block : t.ks[n]->i[1];
      k_loops += "for (int64_t " + v +
                 (outer_block ? " = tkb; " + v + tag(" < tkb + ", extent) : " = 0; " + v + tag(" < ", extent)) +
                 "; ++" + v + ") ";
      const std::string pos = outer_block ? "(" + v + " - tkb)" : v;
      k_flat = k_flat.empty() ? pos : "(" + k_flat + tag(") * ", extent) + " + " + pos;
      k_at[t.ks[n]] = v;
    }
    if (blocked) K = K / t.ks[0]->i[1] * t.k_block;  // the panel's rows
    auto at = [&](const NodeData* r, const std::string& v) {
      std::unordered_map<const NodeData*, std::string> m = k_at;
      m[r] = v;
      return m;
    };
    helpers_.try_emplace("hcq_vf", tag("typedef float hcq_vf __attribute__((ext_vector_type(", V) +
                                       tag(")));\ntypedef float hcq_vfu __attribute__((ext_vector_type(", V) +
                                       "), aligned(4)));\n");
    const std::string unroll = "_Pragma(\"clang loop unroll(full)\") ";
    const std::string bB = t.gather || t.bf16 ? std::string() : tag("b", t.b->src[0]->i[0]);  // B as one plain load
    // This workgroup's share of the split range: [lo, hi) in whole row steps when that is the rows.
    const NodeData* split = tile_split(t);
    if (groups > 1) {
      const int64_t extent = split->i[1], step = split == t.i ? R : split == t.j ? W * V : 1;
      const int64_t chunk = ((extent + groups - 1) / groups + step - 1) / step * step;
      root_.lines.push_back(tag("const int64_t lo = (int64_t)HCQ_GROUP_ID(0) * ", chunk) + ";");
      root_.lines.push_back(tag("const int64_t hi = lo + ", chunk) + tag(" < ", extent) + tag(" ? lo + ", chunk) +
                            tag(" : ", extent) + ";");
    }
    auto bounds = [&](const NodeData* r) {
      return groups > 1 && r == split ? std::pair<std::string, std::string>("lo", "hi")
                                      : std::pair<std::string, std::string>("0", std::to_string(r->i[1]));
    };
    Scope* cur = &root_;
    for (const NodeData* r : out_ranges)
      if (r != t.i && r != t.j) cur = open_loop(cur, r, bounds(r).first, bounds(r).second);
    cur = open_loop(cur, t.j, bounds(t.j).first, bounds(t.j).second);  // steps by upcast_ (lane_ is j)
    if (t.dot) return render_dot_tile(cur, bounds(t.i), k_at, unroll);
    if (t.bf16) return render_bf16_tile(cur, bounds(t.i));
    const std::string rj = names_.at(t.j);
    const std::string column = "(" + rj + tag(" + tw * ", V) + ")";
    // Blocked: every row's sums (of this worker's rows) between blocks, then the block loop.
    const std::string row_sums = blocked ? tag("tall", next_var_++) : std::string();
    Scope* column_scope = cur;
    if (blocked) {
      cur->lines.push_back("float " + row_sums + tag("[", t.i->i[1]) + tag("][", W * V) + "];");
      cur = open_scope(cur, tag("for (int64_t tkb = 0; tkb < ", t.ks[0]->i[1]) + tag("; tkb += ", t.k_block) + ") {");
    }
    std::string panel;
    if (t.pack) {
      panel = tag("pk", next_var_++);
      cur->lines.push_back("hcq_vf " + panel + tag("[", K) + tag("][", W) + "];");
      const std::string loops = k_loops + unroll + tag("for (int64_t tw = 0; tw < ", W) + "; ++tw) ";
      if (t.vec_b) {
        cur->lines.push_back(loops + panel + "[" + k_flat + "][tw] = " + vector_c(t.b, t.j, at(t.j, column)) + ";");
      } else if (t.gather && merged_) {
        // Merged columns (merge_for_tile): the block's lanes are runs along the innermost merged range (an image
        // row); per run, the outer ranges' values are divided out once, and the innermost loop reads the run
        // contiguously into contiguous lanes of the panel, which clang vectorises (a lane-by-lane gather with a
        // division per lane cost twice the tile's multiply-adds).
        const auto& parts = merged_parts_;
        const int64_t X = parts.back().extent;
        const std::string end = "(" + rj + tag(" + ", W * V) + ")";
        Scope* run = open_scope(cur, "for (int64_t tp = " + rj + "; tp < " + end + ";) {");
        run->lines.push_back(tag("const int64_t tq = tp % ", X) + tag(", tn = ", X) + " - tq < " + end + " - tp ? " +
                             tag("", X) + " - tq : " + end + " - tp;");
        std::unordered_map<const NodeData*, std::string> m = k_at;
        for (size_t n = 0; n + 1 < parts.size(); ++n) {
          const std::string v = tag("tm", static_cast<int64_t>(n));
          std::string e = tag("tp / ", parts[n].inner);
          if (n > 0) e = "(" + e + tag(") % ", parts[n].extent);
          run->lines.push_back("const int64_t " + v + " = " + e + ";");
          m[parts[n].node.get()] = v;
        }
        m[parts.back().node.get()] = "tx";
        m[t.j] = "(tp + tx - tq)";  // the merged range itself, should B read it other than through its parts
        // One vector per run, its tail masked (a run is at most an image row: interleaved vectors would leave
        // every run to the scalar remainder).
        run->lines.push_back(k_loops + "_Pragma(\"clang loop vectorize_width(" + std::to_string(V) +
                             ") interleave_count(1) vectorize_predicate(enable)\") " +
                             "for (int64_t tx = tq; tx < tq + tn; ++tx) ((float*)" + panel + ")[(" + k_flat +
                             tag(") * ", W * V) + " + tp - " + rj + " + tx - tq] = " + value_c(t.b, m) + ";");
        run->lines.push_back("tp += tn;");
        close(run);
      } else if (t.gather) {
        const std::string lane = "(" + rj + tag(" + tw * ", V) + " + tv)";
        cur->lines.push_back(loops + tag("for (int64_t tv = 0; tv < ", V) + "; ++tv) " + panel + "[" + k_flat +
                             "][tw][tv] = " + value_c(t.b, at(t.j, lane)) + ";");
      } else {
        cur->lines.push_back(loops + panel + "[" + k_flat + "][tw] = *(const hcq_vfu*)&" + bB + "[" +
                             value_c(t.b->src[1].get(), at(t.j, column)) + "];");
      }
    }
    // The rows: this workgroup's share of them when there are several, in steps of R.
    const std::string ri = tag("r", t.i->i[0]);
    const auto [from, to] = bounds(t.i);
    Scope* rows = open_scope(
        cur, "for (int64_t " + ri + " = " + from + "; " + ri + " < " + to + "; " + ri + tag(" += ", R) + ") {");
    names_[t.i] = ri;
    range_scope_[t.i] = rows;
    const std::string acc = tag("tacc", next_var_++), tile = tag("tile", next_var_++);
    if (!blocked) rows->lines.push_back(std::string("float ") + tile + tag("[", R) + tag("][", W * V) + "];");
    rows->lines.push_back("{");
    rows->lines.push_back(std::string("  hcq_vf ") + acc + tag("[", R) + tag("][", W) + "];");
    // Blocked: a row's sums start from the earlier blocks' (zero in the first).
    const std::string saved = row_sums + "[" + ri + " + tu]" + tag("[tw * ", V) + "]";
    rows->lines.push_back(
        "  " + unroll + tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) " + unroll +
        tag("for (int64_t tw = 0; tw < ", W) + "; ++tw) " + acc + "[tu][tw] = " +
        (blocked ? "tkb == 0 ? (hcq_vf)0.0f : (hcq_vf)*(const hcq_vfu*)&" + saved : std::string("0.0f")) + ";");
    rows->lines.push_back("  " + k_loops + "{");
    rows->lines.push_back(tag("    hcq_vf bv[", W) + "];");
    const std::string bload = t.pack
                                  ? panel + "[" + k_flat + "][tw]"
                                  : "*(const hcq_vfu*)&" + bB + "[" + value_c(t.b->src[1].get(), at(t.j, column)) + "]";
    rows->lines.push_back("    " + unroll + tag("for (int64_t tw = 0; tw < ", W) + "; ++tw) bv[tw] = " + bload + ";");
    const std::string row = "(" + ri + " + tu)";
    rows->lines.push_back("    " + unroll + tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) {");
    rows->lines.push_back("      const float av = " + value_c(t.a, at(t.i, row)) + ";");
    rows->lines.push_back("      " + unroll + tag("for (int64_t tw = 0; tw < ", W) + "; ++tw) " + acc +
                          "[tu][tw] += av * bv[tw];");
    rows->lines.push_back("    }");
    rows->lines.push_back("  }");
    rows->lines.push_back("  " + unroll + tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) " + unroll +
                          tag("for (int64_t tw = 0; tw < ", W) + "; ++tw) *(hcq_vfu*)&" +
                          (blocked ? saved : tile + tag("[tu][tw * ", V) + "]") + " = " + acc + "[tu][tw];");
    rows->lines.push_back("}");
    if (blocked) {
      // After the last block, the rows again: each one's sums are complete.
      close(rows);
      close(cur);
      rows = open_scope(column_scope, "for (int64_t " + ri + " = " + from + "; " + ri + " < " + to + "; " + ri +
                                          tag(" += ", R) + ") {");
      range_scope_[t.i] = rows;
    }
    // The epilogue, per row of the tile: the reduce's value is the row's sums, lane u of NW.
    Scope* epilogue = open_scope(rows, tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) {");
    const std::string sums = tag("trow", next_var_++);
    epilogue->lines.push_back("const float* " + sums + " = " +
                              (blocked ? row_sums + "[" + ri + " + tu]" : tile + "[tu]") + ";");
    names_[t.i] = row;
    range_scope_[t.i] = epilogue;
    names_[t.reduce] = sums;
    return epilogue;
  }

  // A dot tile's rows and micro-kernel inside the column loop `cur` (choose_dot_tile); returns the epilogue's scope
  // (one row of the tile, C lanes), as render_tile does.
  Scope* render_dot_tile(Scope* cur, const std::pair<std::string, std::string>& row_bounds,
                         const std::unordered_map<const NodeData*, std::string>& k_at, const std::string& unroll) {
    const Tile& t = tile_;
    const int64_t K = t.ks[0]->i[1], R = t.rows, C = t.vectors, V = t.width;
    const std::string rj = names_.at(t.j), ri = tag("r", t.i->i[0]);
    auto at = [&](const NodeData* r, const std::string& v) {
      std::unordered_map<const NodeData*, std::string> m = k_at;
      m[r] = v;
      return m;
    };
    Scope* rows = open_scope(cur, "for (int64_t " + ri + " = " + row_bounds.first + "; " + ri + " < " +
                                      row_bounds.second + "; " + ri + tag(" += ", R) + ") {");
    names_[t.i] = ri;
    range_scope_[t.i] = rows;
    const std::string acc = tag("tacc", next_var_++), tile = tag("tile", next_var_++);
    const std::string row = "(" + ri + " + tu)", column = "(" + rj + " + tc)";
    rows->lines.push_back(std::string("float ") + tile + tag("[", R) + tag("][", C) + "];");
    rows->lines.push_back("{");
    rows->lines.push_back(std::string("  hcq_vf ") + acc + tag("[", R) + tag("][", C) + "];");
    rows->lines.push_back("  " + unroll + tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) " + unroll +
                          tag("for (int64_t tc = 0; tc < ", C) + "; ++tc) " + acc + "[tu][tc] = 0.0f;");
    rows->lines.push_back(tag("  for (int64_t tk = 0; tk < ", K) + tag("; tk += ", V) + ") {");
    rows->lines.push_back(tag("    hcq_vf av[", R) + "];");
    const NodeData* k = t.ks[0];
    rows->lines.push_back("    " + unroll + tag("for (int64_t tu = 0; tu < ", R) +
                          "; ++tu) av[tu] = " + vector_c(t.a, k, at(t.i, row)) + ";");
    rows->lines.push_back("    " + unroll + tag("for (int64_t tc = 0; tc < ", C) + "; ++tc) {");
    rows->lines.push_back("      const hcq_vf bv = " + vector_c(t.b, k, at(t.j, column)) + ";");
    rows->lines.push_back("      " + unroll + tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) " + acc +
                          "[tu][tc] += av[tu] * bv;");
    rows->lines.push_back("    }");
    rows->lines.push_back("  }");
    // Each accumulator's lanes summed (reassociation is on: clang folds them as a tree).
    rows->lines.push_back("  " + unroll + tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) " + unroll +
                          tag("for (int64_t tc = 0; tc < ", C) + "; ++tc) {");
    rows->lines.push_back("    float s = 0.0f;");
    rows->lines.push_back("    " + unroll + tag("for (int64_t tv = 0; tv < ", V) + "; ++tv) s += " + acc +
                          "[tu][tc][tv];");
    rows->lines.push_back("    " + tile + "[tu][tc] = s;");
    rows->lines.push_back("  }");
    rows->lines.push_back("}");
    Scope* epilogue = open_scope(rows, tag("for (int64_t tu = 0; tu < ", R) + "; ++tu) {");
    const std::string sums = tag("trow", next_var_++);
    epilogue->lines.push_back("const float* " + sums + " = " + tile + "[tu];");
    names_[t.i] = row;
    range_scope_[t.i] = epilogue;
    names_[t.reduce] = sums;
    return epilogue;
  }

  // GPU vectors (tinygrad's UPCAST on GPUs): an elementwise kernel whose output is float32 or a half type and whose
  // store is contiguous along the last output range, 16-byte aligned at every multiple of the lane count U
  // (TargetFacts::vector_bytes / element size: 4 floats, 8 halves), gives each thread U consecutive outputs. The
  // range steps by U; values that depend on it are U-wide arrays (the lane machinery of choose_upcast); loads that
  // read it contiguously and aligned are one vector load (hcq_f32x4 / hcq_u16x8, include/hcq/kernel_abi.h), others
  // stay scalar per lane, and the store is one vector store. When U does not divide the range, the last run of each
  // row is partial: `full` is false there and it takes the scalar path, each lane guarded. Buffers start 16-byte
  // aligned (the allocator's pages, the memory plan's 128-byte offsets), so alignment is the index's alone.
  void choose_vectors(const Node& kernel, const std::vector<const NodeData*>& out_ranges) {
    if (facts_.target == Target::cpu || !facts_.optimize || facts_.vector_bytes == 0 || out_ranges.empty()) return;
    for (const NodeData* n : toposort({kernel}))
      if (n->op == Op::REDUCE || n->op == Op::BUFFERIZE) return;
    const Node& store = kernel->src[0];
    const DType t = store->src[0]->dtype;
    if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) return;
    const int64_t u = facts_.vector_bytes / dtype_size(t);
    const NodeData* r = out_ranges.back();
    if (u < 2 || r->i[1] < u) return;
    lane_ = r;
    upcast_ = u;
    deps_.clear();
    if (!vector_access(store->src[1].get())) {
      lane_ = nullptr;
      upcast_ = 1;
      deps_.clear();
      return;
    }
    vec_ = true;
    tail_ = r->i[1] % u != 0;
  }

  // Whether an index reads lane_ contiguously (coefficient 1) and its lane-0 element is a multiple of upcast_ at the
  // start of every run: every other range's coefficient and the constant are multiples of upcast_.
  bool vector_access(const NodeData* idx) {
    if (coefficient(idx, lane_) != 1) return false;
    return aligned_terms(idx);
  }
  bool aligned_terms(const NodeData* idx) {
    if (idx == lane_) return true;
    if (idx->op == Op::CONST) return idx->i[0] % upcast_ == 0;
    if (idx->op == Op::RANGE) return upcast_ == 1;  // another range with coefficient 1
    if (idx->op == Op::ADD) return aligned_terms(idx->src[0].get()) && aligned_terms(idx->src[1].get());
    if (idx->op == Op::MUL && idx->src[1]->op == Op::CONST) {
      const std::vector<const NodeData*>& d = deps(idx);
      if (std::find(d.begin(), d.end(), lane_) != d.end()) return false;  // lane * c: coefficient() said 1 already
      return idx->src[1]->i[0] % upcast_ == 0 || aligned_terms(idx->src[0].get());
    }
    return false;  // a div, a mod: not provably aligned
  }

  // The vector type of a storage type, for vec_ kernels.
  static const char* vector_type(const std::string& storage) { return storage == "float" ? "hcq_f32x4" : "hcq_u16x8"; }

  // A LOAD inside the lanes of a vec_ kernel: one vector load when it reads its buffer contiguously, aligned and
  // ungated, in the element's width; otherwise scalar per lane. On a partial run (tail_) every lane is guarded.
  std::string emit_lane_load(const NodeData* n) {
    std::vector<std::string> a;
    for (const Node& s : n->src) {
      emit(s);
      a.push_back(ref(s.get()));
    }
    const std::string scalar = expr(n, a);
    const std::string v = tag("v", next_var_++);
    const std::string vt = value_type(n->dtype);
    Scope* home = scope_of(n);
    names_[n] = v;
    const bool from_buffer = n->src[0]->op == Op::PARAM;
    const bool vector = from_buffer && n->src.size() == 2 && dtype_size(n->dtype) * upcast_ == facts_.vector_bytes &&
                        (n->dtype == DType::float32 || n->dtype == DType::float16 || n->dtype == DType::bfloat16) &&
                        vector_access(n->src[1].get());
    const std::string lanes = tag("for (int64_t u = 0; u < ", upcast_) + "; ++u) ";
    const std::string guarded =
        tail_ ? lanes + v + "[u] = " + lane_guard_ + " ? " + scalar + " : " + literal(n->dtype, 0) + ";"
              : lanes + v + "[u] = " + scalar + ";";
    home->lines.push_back(vt + " " + v + tag("[", upcast_) + "];");
    if (!vector) {
      home->lines.push_back(guarded);
      return v;
    }
    // The index at lane 0: the lane expressions are written in terms of u (define), so u = 0 in a block of its own.
    const std::string st = storage_type(n->dtype), vec = vector_type(st);
    std::string elem = "w[u]";
    if (n->dtype == DType::float16) elem = "hcq_h2f(w[u])";
    if (n->dtype == DType::bfloat16) elem = "hcq_b2f(w[u])";
    const std::string load = "{ const int64_t u = 0; const " + vec + " w = *(const " + vec + "*)&" + a[0] + "[" + a[1] +
                             "]; " + lanes + v + "[u] = " + elem + "; }";
    if (tail_) {
      home->lines.push_back("if (full) " + load);
      home->lines.push_back("else " + guarded);
    } else {
      home->lines.push_back(load);
    }
    return v;
  }

  // The store of a vec_ kernel: the lanes' values into one vector, one 16-byte store; the partial run's lanes one by
  // one, guarded.
  void store_vector(Scope* cur, const std::string& idx, const std::string& stored, const std::string& storage) {
    const std::string lanes = tag("for (int64_t u = 0; u < ", upcast_) + "; ++u) ";
    const std::string vec = vector_type(storage);
    const std::string store = "{ const int64_t u = 0; " + vec + " w; " + lanes + "w[u] = " + stored + "; *(" + vec +
                              "*)&b0[" + idx + "] = w; }";
    if (tail_) {
      cur->lines.push_back("if (full) " + store);
      cur->lines.push_back("else " + lanes + "if (" + lane_guard_ + ") b0[" + idx + "] = " + stored + ";");
    } else {
      cur->lines.push_back(store);
    }
  }

  // The coefficient of range r in an index that is a sum of (range * constant) terms and constants; 0 when absent,
  // -1 when r appears otherwise (inside a div or mod).
  int64_t coefficient(const NodeData* idx, const NodeData* r) {
    if (idx == r) return 1;
    const std::vector<const NodeData*>& d = deps(idx);
    if (std::find(d.begin(), d.end(), r) == d.end()) return 0;
    if (idx->op == Op::ADD) {
      const int64_t a = coefficient(idx->src[0].get(), r), b = coefficient(idx->src[1].get(), r);
      return a < 0 || b < 0 ? -1 : a + b;
    }
    if (idx->op == Op::MUL && idx->src[1]->op == Op::CONST) {
      const int64_t a = coefficient(idx->src[0].get(), r);
      return a <= 0 ? -1 : a * idx->src[1]->i[0];
    }
    return -1;
  }

  std::string loop_step(const NodeData* r, const std::string& v) const {
    return r == lane_ ? " " + v + tag(" += ", upcast_) : " ++" + v;
  }
  bool in_lane(const NodeData* n) {
    if (!lane_) return false;
    if (n == lane_) return true;
    const std::vector<const NodeData*>& d = deps(n);
    return std::find(d.begin(), d.end(), lane_) != d.end();
  }
  // "for (u...) " before a statement on lane values.
  std::string lane_prefix(const NodeData* n) {
    return in_lane(n) ? tag("for (int64_t u = 0; u < ", upcast_) + "; ++u) " : std::string();
  }
  // How a statement refers to n: its lane element inside a lane loop, else its name (or literal).
  std::string ref(const NodeData* n) {
    if (n->op == Op::CONST) return literal(n->dtype, n->const_value());
    if (n->op == Op::PARAM) return tag("b", n->i[0]);
    if (n->op == Op::VAR_PARAM) return var_ref(n);
    const std::string& name = names_.at(n);
    if (n == lane_) return "(" + name + " + u)";
    return in_lane(n) && !inline_.count(n) ? name + "[u]" : name;
  }

  // The ranges a node depends on (sorted ids), minus the ranges a REDUCE consumes.
  const std::vector<const NodeData*>& deps(const NodeData* n) {
    if (const uint32_t* k = deps_.index.find(n)) return deps_.lists[*k];
    std::vector<const NodeData*> out;
    if (n->op == Op::RANGE) out.push_back(n);
    const bool owns_ranges = n->op == Op::REDUCE || n->op == Op::BUFFERIZE;
    for (const Node& s : n->src) {
      if (owns_ranges && s->op == Op::RANGE) continue;
      for (const NodeData* r : deps(s.get()))
        if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    }
    if (owns_ranges)
      for (size_t k = 1; k < n->src.size(); ++k) std::erase(out, n->src[k].get());
    deps_.index.insert(n, static_cast<uint32_t>(deps_.lists.size()));
    return deps_.lists.emplace_back(std::move(out));
  }

  Scope* scope_of(const NodeData* n) {
    Scope* best = &root_;
    for (const NodeData* r : deps(n)) {
      Scope* s = range_scope_.at(r);
      if (s->depth > best->depth) best = s;
    }
    return best;
  }

  void close(Scope* s) {
    s->parent->lines.push_back(s->header);
    for (const std::string& l : s->lines) s->parent->lines.push_back("  " + l);
    s->parent->lines.push_back("}");
  }

  std::string define(const NodeData* n, const std::string& type, const std::string& expr) {
    if (in_lane(n) && n->dtype == kIndex && (n->op == Op::ADD || n->op == Op::MUL)) {
      // Lane index arithmetic stays an expression of u, so clang sees b[base + u] as one contiguous vector load
      // (an array of indices would turn it into a gather).
      names_[n] = "(" + expr + ")";
      inline_.insert(n);
      return names_[n];
    }
    const std::string v = tag("v", next_var_++);
    if (in_lane(n))
      scope_of(n)->lines.push_back(type + " " + v + tag("[", upcast_) + "]; " + lane_prefix(n) + v + "[u] = " + expr +
                                   ";");
    else scope_of(n)->lines.push_back(type + " " + v + " = " + expr + ";");
    names_[n] = v;
    return v;
  }

  std::string emit(const Node& node) {
    const NodeData* n = node.get();
    if (auto it = names_.find(n); it != names_.end()) return it->second;
    if (n->op == Op::CONST) return literal(n->dtype, n->const_value());
    if (n->op == Op::PARAM) return tag("b", n->i[0]);
    if (n->op == Op::VAR_PARAM) return var_ref(n);
    if (n->op == Op::REDUCE) return emit_reduce(n);
    if (n->op == Op::BUFFERIZE) return emit_array(n);
    if (vec_ && n->op == Op::LOAD && in_lane(n)) return emit_lane_load(n);
    std::vector<std::string> a;
    for (const Node& s : n->src) {
      emit(s);
      a.push_back(ref(s.get()));
    }
    return define(n, value_type(n->dtype), expr(n, a));
  }

  // A loop over range r as a new scope inside `parent`: `for (int64_t rN = from; rN < to; <step>) {`.
  Scope* open_loop(Scope* parent, const NodeData* r, const std::string& from, const std::string& to,
                   const std::string& pragmas = {}) {
    const std::string v = tag("r", r->i[0]);
    auto* s = new Scope{parent, parent->depth + 1, {}, {}};
    owned_.emplace_back(s);
    s->header = pragmas + "for (int64_t " + v + " = " + from + "; " + v + " < " + to + ";" + loop_step(r, v) + ") {";
    range_scope_[r] = s;
    names_[r] = v;
    return s;
  }
  // Closes the loops from `cur` out to (not including) `home`.
  void close_to(Scope* cur, Scope* home) {
    while (cur != home) {
      Scope* p = cur->parent;
      close(cur);
      cur = p;
    }
  }

  std::string emit_reduce(const NodeData* n) {
    const Op op = static_cast<Op>(n->i[0]);
    const std::string acc = tag("acc", next_var_++);
    Scope* home = scope_of(n);
    const std::string init = literal(n->dtype, reduce_identity(op, n->dtype));
    if (in_lane(n))
      home->lines.push_back(std::string(value_type(n->dtype)) + " " + acc + tag("[", upcast_) + "]; " + lane_prefix(n) +
                            acc + "[u] = " + init + ";");
    else home->lines.push_back(std::string(value_type(n->dtype)) + " " + acc + " = " + init + ";");
    names_[n] = acc;  // refs below read it as a lane array when the reduce is upcast
    if (group_) return emit_group_reduce(n, acc, home);
    Scope* cur = home;
    for (size_t k = 1; k < n->src.size(); ++k) {
      const NodeData* r = n->src[k].get();
      // With upcast lanes the vectors are across the lanes: left alone, clang would vectorise this loop instead
      // (with gathers across the reduce axis). Small reduce loops are unrolled whole (tinygrad's UNROLL): no loop
      // overhead for a 3x3 window or a short row.
      std::string pragmas;
      if (lane_) pragmas += "_Pragma(\"clang loop vectorize(disable)\") ";
      // NVRTC knows `unroll` (and clang, which builds the host twin, does too), not clang's loop pragmas.
      if (facts_.optimize && r->i[1] <= kUnrollLimit)
        pragmas += facts_.target == Target::cuda ? "_Pragma(\"unroll\") " : "_Pragma(\"clang loop unroll(full)\") ";
      cur = open_loop(cur, r, "0", std::to_string(r->i[1]), pragmas);
    }
    emit(n->src[0]);
    const std::string body = ref(n->src[0].get()), a = ref(n);
    cur->lines.push_back(lane_prefix(n) + a + " = " + combine(op, n->dtype, a, body) + ";");
    close_to(cur, home);
    return acc;
  }

  // A kernel-local array (partial realisation): declared where its value's outer ranges live, filled by loops over
  // its own ranges, read by LOADs after.
  std::string emit_array(const NodeData* n) {
    const std::string arr = tag("loc", next_var_++);
    Scope* home = scope_of(n);
    int64_t size = 1;
    for (size_t k = 1; k < n->src.size(); ++k) size *= n->src[k]->i[1];
    home->lines.push_back(std::string(value_type(n->dtype)) + " " + arr + tag("[", size) + "];");
    Scope* cur = home;
    std::string at;  // the element of the current point, row-major over the array's ranges
    for (size_t k = 1; k < n->src.size(); ++k) {
      const NodeData* r = n->src[k].get();
      cur = open_loop(cur, r, "0", std::to_string(r->i[1]));
      at = at.empty() ? names_[r] : "(" + at + tag(") * ", r->i[1]) + " + " + names_[r];
    }
    emit(n->src[0]);
    cur->lines.push_back(arr + "[" + (at.empty() ? "0" : at) + "] = " + ref(n->src[0].get()) + ";");
    close_to(cur, home);
    names_[n] = arr;
    return arr;
  }

  static std::string combine(Op op, DType t, const std::string& a, const std::string& b) {
    if (op == Op::ADD) return is_float(t) ? round_half(t, a + " + " + b) : wrap_int(t, a, '+', b);
    if (op == Op::MUL) return is_float(t) ? round_half(t, a + " * " + b) : wrap_int(t, a, '*', b);
    if (t == DType::bool_) return op == Op::MAX ? a + " | " + b : a + " & " + b;
    const char* cmp = op == Op::MAX ? " > " : " < ";
    if (is_float(t)) return "(" + a + " != " + a + " || " + a + cmp + b + ") ? " + a + " : " + b;
    return a + cmp + b + " ? " + a + " : " + b;
  }

  // Values of every type are C scalars here (halves are floats), so a C cast does it; halves round after.
  static std::string cast(DType to, const std::string& a) {
    if (to == DType::bool_) return "(" + a + " != 0)";
    if (to == DType::float16 || to == DType::bfloat16) return round_half(to, "(float)" + a);
    return std::string("(") + value_type(to) + ")" + a;
  }

  // Bit casts go through a helper per pair of types (C11 and CUDA C++ share no other way: no statement expressions
  // in NVRTC, no type punning through unions in C++).
  std::string bitcast(DType from, DType to, const std::string& a) {
    std::string bits = a;  // the source's storage bits
    if (from == DType::float16) bits = "hcq_f2h(" + a + ")";
    if (from == DType::bfloat16) bits = "hcq_f2b(" + a + ")";
    if (to == DType::float16) return "hcq_h2f(" + bits + ")";
    if (to == DType::bfloat16) return "hcq_b2f(" + bits + ")";
    const std::string src_type = from == DType::float16 || from == DType::bfloat16 ? "uint16_t" : storage_type(from);
    const std::string dst_type = storage_type(to);
    const std::string fn = "hcq_bc_" + src_type + "_to_" + dst_type;
    helpers_.try_emplace(fn, "static inline " + dst_type + " " + fn + "(" + src_type + " s) { " + dst_type +
                                 " d; HCQ_MEMCPY(&d, &s, sizeof d); return d; }\n");
    return fn + "(" + bits + ")";
  }

  std::string expr(const NodeData* n, const std::vector<std::string>& a) {
    const DType t = n->dtype;
    const DType in = n->src.empty() ? t : n->src[0]->dtype;
    const bool f = is_float(t);
    const bool cpu = facts_.target == Target::cpu;
    switch (n->op) {
      case Op::RANGE: return names_.at(n);
      case Op::PARAM: return tag("b", n->i[0]);
      case Op::VAR_PARAM: return var_ref(n);
      case Op::LOAD: {
        std::string v = a[0] + "[" + a[1] + "]";
        const bool from_buffer = n->src[0]->op == Op::PARAM;  // local arrays hold values, not storage words
        if (from_buffer && t == DType::float16) v = "hcq_h2f(" + v + ")";
        if (from_buffer && t == DType::bfloat16) v = "hcq_b2f(" + v + ")";
        if (n->src.size() > 2) v = a[2] + " ? " + v + " : " + literal(t, 0);
        return v;
      }
      case Op::CAST: return cast(t, a[0]);
      case Op::BITCAST: return bitcast(in, t, a[0]);
      case Op::NEG:
        if (f) return round_half(t, "-" + a[0]);
        return wrap_int(t, "0", '-', a[0]);
      case Op::EXP:
        if (!cpu) return round_half(t, "expf(" + a[0] + ")");
        helpers_.try_emplace("hcq_expf", kCpuExp);
        return round_half(t, "hcq_expf(" + a[0] + ")");
      case Op::EXP2:
        if (!cpu) return round_half(t, "exp2f(" + a[0] + ")");
        helpers_.try_emplace("hcq_expf", kCpuExp);
        return round_half(t, "hcq_exp2f(" + a[0] + ")");
      case Op::LOG: return round_half(t, "logf(" + a[0] + ")");
      case Op::LOG2: return round_half(t, "log2f(" + a[0] + ")");
      case Op::SIN: return round_half(t, "sinf(" + a[0] + ")");
      case Op::COS: return round_half(t, "cosf(" + a[0] + ")");
      // The CPU device's kernels are freestanding (no builtins): a plain sqrtf or truncf is a call into the host's
      // libm, which keeps every loop around it scalar. The builtins are one instruction each (with
      // -fno-math-errno, drivers/cpu/cpu_compiler.cpp), so Adam's update vectorises.
      case Op::SQRT: return round_half(t, std::string(cpu ? "__builtin_sqrtf(" : "sqrtf(") + a[0] + ")");
      case Op::RECIPROCAL: return round_half(t, "1.0f / " + a[0]);
      case Op::TRUNC: return f ? round_half(t, std::string(cpu ? "__builtin_truncf(" : "truncf(") + a[0] + ")") : a[0];
      case Op::ADD: return f ? round_half(t, a[0] + " + " + a[1]) : wrap_int(t, a[0], '+', a[1]);
      case Op::SUB: return f ? round_half(t, a[0] + " - " + a[1]) : wrap_int(t, a[0], '-', a[1]);
      case Op::MUL: return f ? round_half(t, a[0] + " * " + a[1]) : wrap_int(t, a[0], '*', a[1]);
      case Op::FDIV: return round_half(t, a[0] + " / " + a[1]);
      case Op::IDIV:
      case Op::MOD: {
        // Index arithmetic divides by positive constants: plain C. Anything else goes through the safe helpers.
        if (n->src[1]->op == Op::CONST && n->src[1]->const_value() > 0)
          return a[0] + (n->op == Op::IDIV ? " / " : " % ") + a[1];
        return std::string(n->op == Op::IDIV ? "hcq_idiv_" : "hcq_mod_") + int_suffix(t) + "(" + a[0] + ", " + a[1] +
               ")";
      }
      case Op::MAX: return combine(Op::MAX, t, a[0], a[1]);
      case Op::MIN: return combine(Op::MIN, t, a[0], a[1]);
      case Op::POW:
        if (f)
          return round_half(t, (facts_.target == Target::amdgpu ? "hcq_powf(" : "powf(") + a[0] + ", " + a[1] + ")");
        return std::string("(") + storage_type(t) + ")hcq_ipow(" + a[0] + ", " + a[1] + ")";
      case Op::CMPLT: return a[0] + " < " + a[1];
      case Op::CMPEQ: return a[0] + " == " + a[1];
      case Op::CMPNE: return a[0] + " != " + a[1];
      case Op::AND: return a[0] + " & " + a[1];
      case Op::OR: return a[0] + " | " + a[1];
      case Op::XOR: return a[0] + " ^ " + a[1];
      case Op::SHL: return std::string("(") + storage_type(t) + ")((uint64_t)" + a[0] + " << " + a[1] + ")";
      case Op::SHR: return a[0] + " >> " + a[1];
      case Op::WHERE: return a[0] + " ? " + a[1] + " : " + a[2];
      default: break;
    }
    throw InvalidArgument(cat("render_c: no C for a ", op_name(n->op), " node"));
  }

  TargetFacts facts_;
  Scope root_;
  Tile tile_;                                   // register tiles (choose_tile): tile_.i set when chosen
  size_t choice_ = 0;                           // render_c's choice: 0 the heuristics', k > 0 tile_alternatives' k-th
  std::vector<Tile>* collect_ = nullptr;        // set while tile_alternatives collects every tile that fits
  std::vector<const NodeData*> out_ranges_;     // the kernel's output ranges, by id
  const NodeData* lane_ = nullptr;              // the upcast output range, if any
  std::unordered_set<const NodeData*> inline_;  // lane index expressions written in place, not as arrays
  int64_t upcast_ = 1;
  bool vec_ = false;          // GPU: lanes are vectors of upcast_ outputs (choose_vectors)
  bool tail_ = false;         // ...and some runs are partial: lanes guarded by lane_guard_ where !full
  std::string lane_guard_;    // "r1 + u < 1023": lane u of this run is an output
  bool merged_ = false;       // the tile's columns are merged output ranges (merge_for_tile)
  bool merged_rows_ = false;  // its rows are (merge_rows_for_tile)
  struct MergedPart {
    Node node;  // the merged range's value in terms of the new one: (p / inner) % extent
    int64_t extent, inner;
  };
  std::vector<MergedPart> merged_parts_;  // outermost first
  // GPU: a product tiled through shared memory (choose_gpu_tile): its rows, columns, reduce ranges and operands.
  struct GpuTile {
    const NodeData *i = nullptr, *j = nullptr, *reduce = nullptr, *a = nullptr, *b = nullptr;
    std::vector<const NodeData*> ks;
    MatrixUnit unit = MatrixUnit::none;  // a matrix tile's instruction; none: float panels
    DType half = DType::float32;         // a matrix tile's operand type
  };
  GpuTile gtile_;
  bool group_ = false;               // GPU: the workgroup's threads share each output (grouped reduces)
  int64_t group_size_ = 1;           // threads per workgroup then
  std::vector<std::string> shared_;  // HCQ_SHARED declarations, at the top of the body
  std::vector<std::unique_ptr<Scope>> owned_;
  std::unordered_map<const NodeData*, Scope*> range_scope_;
  std::unordered_map<const NodeData*, std::string> names_;
  // deps' memo, node -> the ranges it depends on: a NodeTable into a deque (whose elements stay put while deps
  // recurses), where an unordered_map allocated a bucket per node of every kernel rendered.
  struct DepsMemo {
    NodeTable index;
    std::deque<std::vector<const NodeData*>> lists;
    void clear() {
      index.clear();
      lists.clear();
    }
  } deps_;
  std::map<std::string, std::string> helpers_;  // name -> definition, emitted before the kernel
  int next_var_ = 0;
};

std::function<void(RenderedKernel&)>& render_hook() {
  static std::function<void(RenderedKernel&)> hook;
  return hook;
}

}  // namespace

RenderedKernel render_c(const Node& kernel, const TargetFacts& facts, size_t choice) {
  RenderedKernel rk = CRenderer(facts, choice).render(kernel);
  if (render_hook()) render_hook()(rk);
  return rk;
}

size_t render_choices(const Node& kernel, const TargetFacts& facts) { return CRenderer(facts, 0).choices(kernel); }

void set_render_hook(std::function<void(RenderedKernel&)> hook) { render_hook() = std::move(hook); }

bool render_hook_set() { return static_cast<bool>(render_hook()); }

}  // namespace hcq::fw
