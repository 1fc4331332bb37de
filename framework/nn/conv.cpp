// Sliding windows, conv2d and the 2-d pools, from movement ops and reductions only.
//
// The windows of one axis of size i (kernel k, stride s, dilation d, o outputs) come from repeating the axis e
// times end to end, which needs no copy: laid out as rows of i + d elements, row r starts at offset r * (i + d) =
// r * d (mod i), so row r column j is x[r * d + j]. Keeping k rows and the columns 0, s, 2s, ... (o of them) gives
// element (r, c) = x[r * d + c * s]: window c's r-th tap. (tinygrad's pool builds its windows the same way.)
#include <cmath>

#include "framework/autograd/custom_gradient.hpp"
#include "framework/autograd/gradient.hpp"
#include "framework/tensor/build.hpp"
#include "framework/tensor/impl.hpp"
#include "hcq/error.hpp"
#include "hcq/nn.hpp"

namespace hcq::nn {

namespace {

using Pair = std::pair<int64_t, int64_t>;

int64_t windows_out(int64_t i, int64_t k, int64_t s, int64_t d) { return (i - d * (k - 1) - 1) / s + 1; }

// (..., i) -> (..., k, o): the windows of the last axis.
Tensor windows_of_last_axis(const Tensor& x, int64_t k, int64_t s, int64_t d) {
  const Shape lead(x.shape().begin(), x.shape().end() - 1);
  const int64_t i = x.shape(-1), o = windows_out(i, k, s, d);
  auto shape = [&](std::initializer_list<int64_t> tail) {
    Shape sh = lead;
    sh.insert(sh.end(), tail);
    return sh;
  };
  // Whole leading axes, then the given ranges of the trailing ones.
  auto ranges = [&](std::initializer_list<std::pair<int64_t, int64_t>> tail) {
    std::vector<std::pair<int64_t, int64_t>> r;
    for (int64_t v : lead) r.push_back({0, v});
    r.insert(r.end(), tail);
    return r;
  };
  if (s == k && d == 1) {
    // Windows that neither overlap nor leave gaps (the pools' default) are a reshape: no repeat, so the gradient
    // is a reshape too, not a sum over the repeats.
    std::vector<int> order;
    for (size_t a = 0; a < lead.size(); ++a) order.push_back(static_cast<int>(a));
    order.insert(order.end(), {static_cast<int>(lead.size()) + 1, static_cast<int>(lead.size())});
    return x.shrink(ranges({{0, o * k}})).reshape(shape({o, k})).permute(order);
  }
  const int64_t row = i + d, e = (k * row + i - 1) / i;  // repeats enough to hold k rows
  Tensor t = x.reshape(shape({1, i})).expand(shape({e, i})).reshape(shape({e * i}));
  t = t.shrink(ranges({{0, k * row}})).reshape(shape({k, row}));
  // Columns 0, s, ..., (o - 1) s: o * s columns cut into (o, s), keeping the first of each.
  if (o * s > row) {
    std::vector<std::pair<int64_t, int64_t>> pad(lead.size() + 1, {0, 0});
    pad.push_back({0, o * s - row});
    t = t.pad(pad);
  } else {
    t = t.shrink(ranges({{0, k}, {0, o * s}}));
  }
  return t.reshape(shape({k, o, s})).shrink(ranges({{0, k}, {0, o}, {0, 1}})).reshape(shape({k, o}));
}

void check_window(const char* op, const Tensor& x, Pair kernel, Pair stride, Pair dilation) {
  if (x.ndim() < 2) throw ShapeError(cat(op, ": the input needs at least 2 dimensions, it has ", x.ndim()));
  if (kernel.first < 1 || kernel.second < 1 || stride.first < 1 || stride.second < 1 || dilation.first < 1 ||
      dilation.second < 1)
    throw InvalidArgument(cat(op, ": kernel (", kernel.first, ", ", kernel.second, "), stride (", stride.first, ", ",
                              stride.second, ") and dilation (", dilation.first, ", ", dilation.second,
                              ") must be positive"));
  const int64_t h = x.shape(-2), w = x.shape(-1);
  if (dilation.first * (kernel.first - 1) + 1 > h || dilation.second * (kernel.second - 1) + 1 > w)
    throw ShapeError(cat(op, ": a (", kernel.first, ", ", kernel.second, ") window with dilation (", dilation.first,
                         ", ", dilation.second, ") does not fit the (padded) input's ", h, " x ", w));
}

Tensor pad_hw(const Tensor& x, Pair padding, double value) {
  if (padding.first == 0 && padding.second == 0) return x;
  std::vector<std::pair<int64_t, int64_t>> pad(x.ndim() - 2, {0, 0});
  pad.push_back({padding.first, padding.first});
  pad.push_back({padding.second, padding.second});
  return x.pad(pad, value);
}

Pair default_stride(Pair stride, Pair kernel) { return stride.first == 0 && stride.second == 0 ? kernel : stride; }

}  // namespace

Tensor sliding_windows(const Tensor& x, Pair kernel, Pair stride, Pair dilation) {
  check_window("sliding_windows", x, kernel, stride, dilation);
  const int n = static_cast<int>(x.ndim());
  // W first: (..., H, W) -> (..., H, KW, OW); then H, moved last: (..., KW, OW, H) -> (..., KW, OW, KH, OH).
  Tensor t = windows_of_last_axis(x, kernel.second, stride.second, dilation.second);
  std::vector<int> order;
  for (int a = 0; a < n - 2; ++a) order.push_back(a);
  order.insert(order.end(), {n - 1, n, n - 2});
  t = windows_of_last_axis(t.permute(order), kernel.first, stride.first, dilation.first);
  // (..., KW, OW, KH, OH) -> (..., OH, OW, KH, KW)
  order.resize(static_cast<size_t>(n - 2));
  order.insert(order.end(), {n + 1, n - 1, n, n - 2});
  return t.permute(order);
}

namespace {

// The convolution itself (a cross-correlation, as PyTorch's), of an input already padded: the products of the
// windows and the weight, summed over Cg, KH and KW.
Tensor correlate(const Tensor& xp, const Tensor& weight, Pair stride, Pair dilation, int64_t groups) {
  const int64_t n = xp.shape(0), cin = xp.shape(1), cout = weight.shape(0), kh = weight.shape(2), kw = weight.shape(3);
  const Tensor win = sliding_windows(xp, {kh, kw}, stride, dilation);  // (N, Cin, OH, OW, KH, KW)
  const int64_t oh = win.shape(2), ow = win.shape(3), cg = cin / groups, og = cout / groups;
  // (N, G, 1, Cg, OH, OW, KH, KW) * (1, G, Og, Cg, 1, 1, KH, KW), summed over Cg, KH, KW.
  const Tensor a = win.reshape({n, groups, 1, cg, oh, ow, kh, kw});
  const Tensor b = weight.reshape({1, groups, og, cg, 1, 1, kh, kw});
  return a.mul(b).sum({3, 6, 7}).reshape({n, cout, oh, ow});
}

// (N, C, OH, OW) -> (N, C, (OH - 1) sh + 1, (OW - 1) sw + 1): sh - 1 rows and sw - 1 columns of zeros between.
Tensor spread(const Tensor& g, Pair stride) {
  if (stride.first == 1 && stride.second == 1) return g;
  const int64_t n = g.shape(0), c = g.shape(1), oh = g.shape(2), ow = g.shape(3);
  return g.reshape({n, c, oh, 1, ow, 1})
      .pad({{0, 0}, {0, 0}, {0, 0}, {0, stride.first - 1}, {0, 0}, {0, stride.second - 1}})
      .reshape({n, c, oh * stride.first, ow * stride.second})
      .shrink({{0, n}, {0, c}, {0, (oh - 1) * stride.first + 1}, {0, (ow - 1) * stride.second + 1}});
}

// d(loss)/dx of conv2d, given g = d(loss)/d(output) (N, Cout, OH, OW): the transposed convolution. Output row i of
// the padded input collects g[o] w[k] over o * s + k * d = i, which is a stride-1 correlation of g spread out by
// the stride and padded by d (K - 1) on each side with the kernel flipped, its channels swapped within each group.
// (The padding at the end also covers the rows no window reached, whose gradient is 0.)
Tensor conv2d_input_gradient(const Tensor& g, const Tensor& weight, const Shape& x_shape, Pair stride, Pair padding,
                             Pair dilation, int64_t groups) {
  const int64_t cout = weight.shape(0), cg = weight.shape(1), kh = weight.shape(2), kw = weight.shape(3),
                og = cout / groups;
  const int64_t hp = x_shape[2] + 2 * padding.first, wp = x_shape[3] + 2 * padding.second;
  const int64_t eh = dilation.first * (kh - 1), ew = dilation.second * (kw - 1);
  Tensor t = spread(g, stride);
  t = t.pad({{0, 0}, {0, 0}, {eh, hp - t.shape(2)}, {ew, wp - t.shape(3)}});
  const Tensor wt = weight.reshape({groups, og, cg, kh, kw})
                        .permute({0, 2, 1, 3, 4})
                        .reshape({groups * cg, og, kh, kw})
                        .flip(std::vector<int>{2, 3});
  const Tensor dxp = correlate(t, wt, {1, 1}, dilation, groups);  // (N, Cin, HP, WP)
  return dxp.shrink({{0, x_shape[0]},
                     {0, x_shape[1]},
                     {padding.first, padding.first + x_shape[2]},
                     {padding.second, padding.second + x_shape[3]}});
}

// CUSTOM_GRAD (value, x, weight), i = (rule, sh, sw, ph, pw, dh, dw, groups): x's gradient is the transposed
// convolution; the weight's is the ops' own (a reduction of the windows times g over N, OH and OW), taken through
// the value's graph.
std::vector<fw::Node> conv2d_gradient(const fw::Node& n, const fw::Node& g) {
  const fw::Node &x = n->src[1], &weight = n->src[2];
  const Pair stride{n->i[1], n->i[2]}, padding{n->i[3], n->i[4]}, dilation{n->i[5], n->i[6]};
  const Tensor dx = conv2d_input_gradient(Tensor(g), Tensor(weight), x->shape, stride, padding, dilation, n->i[7]);
  const fw::Node& w_target = fw::gradient_target(weight);
  const auto dw = fw::gradients(n->src[0], g, {w_target});
  const auto it = dw.find(w_target.get());
  return {dx.node(), it == dw.end() ? nullptr : fw::t_reshape(it->second, weight->shape)};
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding, Pair dilation,
              int64_t groups) {
  if (x.ndim() != 4 || weight.ndim() != 4)
    throw ShapeError(cat("conv2d: the input must be (N, C, H, W) and the weight (Cout, Cin / groups, KH, KW), got ",
                         x.ndim(), " and ", weight.ndim(), " dimensions"));
  const int64_t cin = x.shape(1), cout = weight.shape(0), kh = weight.shape(2), kw = weight.shape(3);
  if (groups < 1 || cin % groups != 0 || cout % groups != 0 || weight.shape(1) * groups != cin)
    throw ShapeError(cat("conv2d: ", cin, " input channels, a weight of ", weight.shape(1), " per group and ", groups,
                         " groups do not match (", cout, " output channels must divide into the groups too)"));
  const Tensor xp = pad_hw(x, padding, 0.0);
  check_window("conv2d", xp, {kh, kw}, stride, dilation);
  Tensor out = correlate(xp, weight, stride, dilation, groups);
  if (!fw::no_grad_active()) {
    static const int64_t rule = fw::register_custom_gradient(&conv2d_gradient);
    out = Tensor(fw::with_custom_gradient(
        out.node(), {x.node(), weight.node()}, rule,
        {stride.first, stride.second, padding.first, padding.second, dilation.first, dilation.second, groups}));
  }
  if (bias.defined()) out = out + bias.reshape({1, cout, 1, 1});
  return out;
}

Tensor max_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding) {
  const Tensor xp = pad_hw(x, padding, -INFINITY);
  stride = default_stride(stride, kernel);
  check_window("max_pool2d", xp, kernel, stride, {1, 1});
  return sliding_windows(xp, kernel, stride).max({-2, -1});
}

Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding) {
  const Tensor xp = pad_hw(x, padding, 0.0);
  stride = default_stride(stride, kernel);
  check_window("avg_pool2d", xp, kernel, stride, {1, 1});
  return sliding_windows(xp, kernel, stride).mean({-2, -1});
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Pair kernel, Pair stride_, Pair padding_, Pair dilation_,
               int64_t groups_, bool bias_too, const std::string& device)
    : stride(stride_), padding(padding_), dilation(dilation_), groups(groups_) {
  if (in_channels < 1 || out_channels < 1 || groups < 1 || in_channels % groups || out_channels % groups)
    throw InvalidArgument(cat("Conv2d: ", in_channels, " -> ", out_channels, " channels in ", groups,
                              " groups: the channel counts must be positive multiples of the groups"));
  // PyTorch's kaiming_uniform_(a = sqrt(5)): uniform in +-1/sqrt(fan_in), the bias too.
  const int64_t fan_in = in_channels / groups * kernel.first * kernel.second;
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  weight = parameter(Tensor::uniform({out_channels, in_channels / groups, kernel.first, kernel.second}, -bound, bound,
                                     DType::float32, device));
  if (bias_too) bias = parameter(Tensor::uniform({out_channels}, -bound, bound, DType::float32, device));
}

Tensor Conv2d::operator()(const Tensor& x) const { return conv2d(x, weight, bias, stride, padding, dilation, groups); }

std::vector<Tensor> Conv2d::parameters() const {
  return bias.defined() ? std::vector<Tensor>{weight, bias} : std::vector<Tensor>{weight};
}

NamedTensors Conv2d::named_parameters(const std::string& prefix) const {
  NamedTensors out{{prefix + "weight", weight}};
  if (bias.defined()) out.emplace_back(prefix + "bias", bias);
  return out;
}

}  // namespace hcq::nn
