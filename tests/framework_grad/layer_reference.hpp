// Double-precision loops for the layers' forward passes, written from PyTorch's definitions: what the layer tests
// and the gradient tests compare against. Inputs are (N, C, H, W) ref::Arrays.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework_ops/reference.hpp"

namespace hcq::laytest {

struct Window {
  int64_t kh, kw, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

inline int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// weight (Cout, Cin / groups, KH, KW); bias (Cout) or empty.
inline ref::Array conv2d(const ref::Array& x, const ref::Array& w, const ref::Array* bias, Window win, int64_t groups) {
  const int64_t n = x.shape[0], cin = x.shape[1], h = x.shape[2], wd = x.shape[3], cout = w.shape[0];
  const int64_t oh = out_size(h, win.kh, win.sh, win.ph, win.dh), ow = out_size(wd, win.kw, win.sw, win.pw, win.dw);
  const int64_t cg = cin / groups, og = cout / groups;
  ref::Array out = ref::Array::filled({n, cout, oh, ow}, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = bias ? bias->values[static_cast<size_t>(o)] : 0.0;
          const int64_t g = o / og;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t ky = 0; ky < win.kh; ++ky)
              for (int64_t kx = 0; kx < win.kw; ++kx) {
                const int64_t iy = y * win.sh + ky * win.dh - win.ph, ix = xx * win.sw + kx * win.dw - win.pw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += x.at({b, g * cg + c, iy, ix}) * w.at({o, c, ky, kx});
              }
          out.at({b, o, y, xx}) = acc;
        }
  return out;
}

// max (padding -inf) or average (zeros counted) over windows with dilation 1.
inline ref::Array pool2d(const ref::Array& x, Window win, bool max) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const int64_t oh = out_size(h, win.kh, win.sh, win.ph, 1), ow = out_size(wd, win.kw, win.sw, win.pw, 1);
  ref::Array out = ref::Array::filled({n, c, oh, ow}, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t ky = 0; ky < win.kh; ++ky)
            for (int64_t kx = 0; kx < win.kw; ++kx) {
              const int64_t iy = y * win.sh + ky - win.ph, ix = xx * win.sw + kx - win.pw;
              const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < wd;
              const double v = inside ? x.at({b, ch, iy, ix}) : (max ? -std::numeric_limits<double>::infinity() : 0.0);
              acc = max ? std::max(acc, v) : acc + v;
            }
          out.at({b, ch, y, xx}) = max ? acc : acc / static_cast<double>(win.kh * win.kw);
        }
  return out;
}

}  // namespace hcq::laytest
