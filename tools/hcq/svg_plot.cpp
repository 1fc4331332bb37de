// The training plot as SVG (tools/hcq/svg_plot.hpp): geometry first (panels, data ranges, ticks), then the text.
#include "svg_plot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>
#include <utility>

#include "hcq/error.hpp"

namespace hcq::tool {
namespace {

// Two panels of kPanelW x kPanelH, margins for the tick labels and titles.
constexpr double kPanelW = 460, kPanelH = 300, kLeft = 70, kTop = 50, kGap = 110, kBottom = 60;
constexpr double kWidth = kLeft + kPanelW + kGap + kPanelW + 30, kHeight = kTop + kPanelH + kBottom;

// s += a, b, ...: appends piece by piece (GCC 12 misreports `"literal" + std::string` chains under -Wrestrict).
template <class... Parts>
void add(std::string& s, const Parts&... parts) {
  ((s += parts), ...);
}

std::string num(double v) {  // coordinates: two decimals are sub-pixel
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // XML 1.0 allows no control characters but tab and newlines.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += ' ';
        else out += c;
    }
  }
  return out;
}

struct Axis {
  std::vector<double> ticks;
  double lo, hi;  // the first and last tick: the panel's range
};

Axis axis(double lo, double hi, int max_ticks) {
  Axis a;
  a.ticks = nice_ticks(lo, hi, max_ticks);
  a.lo = a.ticks.front();
  a.hi = a.ticks.back();
  return a;
}

// (x, y) points to draw, in data units, split where a value is not finite.
using Run = std::vector<std::pair<double, double>>;

std::vector<Run> runs_of(const std::vector<double>& ys, double x0) {
  std::vector<Run> out;
  const size_t n = ys.size();
  const size_t bucket = (n + kMaxPlotPoints - 1) / kMaxPlotPoints;  // 1 when short enough
  Run cur;
  for (size_t i = 0; i < n; i += std::max<size_t>(bucket, 1)) {
    const size_t end = std::min(n, i + std::max<size_t>(bucket, 1));
    double sum = 0;
    bool finite = true;
    for (size_t k = i; k < end; ++k) {
      finite = finite && std::isfinite(ys[k]);
      sum += ys[k];
    }
    if (!finite) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    // The bucket's mean, at its middle step.
    cur.emplace_back(x0 + (static_cast<double>(i) + static_cast<double>(end - 1)) / 2,
                     sum / static_cast<double>(end - i));
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

void panel(std::string& s, double px, const std::string& title, const std::string& xlabel, const std::string& ylabel,
           const Axis& xa, const Axis& ya, const std::vector<Run>& runs, const char* colour, bool markers,
           double y_scale) {
  const auto X = [&](double x) { return px + (x - xa.lo) / (xa.hi - xa.lo) * kPanelW; };
  const auto Y = [&](double y) { return kTop + kPanelH - (y * y_scale - ya.lo) / (ya.hi - ya.lo) * kPanelH; };
  s += "<g>\n";
  add(s, "<text x=\"", num(px + kPanelW / 2), "\" y=\"", num(kTop - 15), "\" text-anchor=\"middle\" font-size=\"15\">",
      xml_escape(title), "</text>\n");
  add(s, "<rect x=\"", num(px), "\" y=\"", num(kTop), "\" width=\"", num(kPanelW), "\" height=\"", num(kPanelH),
      "\" fill=\"none\" stroke=\"#888\"/>\n");
  const double xstep = xa.ticks.size() > 1 ? xa.ticks[1] - xa.ticks[0] : 1;
  for (double t : xa.ticks) {
    const double x = X(t);
    add(s, "<line x1=\"", num(x), "\" y1=\"", num(kTop + kPanelH), "\" x2=\"", num(x), "\" y2=\"",
        num(kTop + kPanelH + 5), "\" stroke=\"#000\"/>\n");
    add(s, "<text x=\"", num(x), "\" y=\"", num(kTop + kPanelH + 20), "\" text-anchor=\"middle\">",
        tick_label(t, xstep), "</text>\n");
  }
  const double ystep = ya.ticks.size() > 1 ? ya.ticks[1] - ya.ticks[0] : 1;
  for (double t : ya.ticks) {
    const double y = kTop + kPanelH - (t - ya.lo) / (ya.hi - ya.lo) * kPanelH;
    add(s, "<line x1=\"", num(px - 5), "\" y1=\"", num(y), "\" x2=\"", num(px), "\" y2=\"", num(y),
        "\" stroke=\"#000\"/>\n");
    add(s, "<line x1=\"", num(px), "\" y1=\"", num(y), "\" x2=\"", num(px + kPanelW), "\" y2=\"", num(y),
        "\" stroke=\"#eee\"/>\n");
    add(s, "<text x=\"", num(px - 8), "\" y=\"", num(y + 4), "\" text-anchor=\"end\">", tick_label(t, ystep),
        "</text>\n");
  }
  add(s, "<text x=\"", num(px + kPanelW / 2), "\" y=\"", num(kTop + kPanelH + 45), "\" text-anchor=\"middle\">",
      xml_escape(xlabel), "</text>\n");
  add(s, "<text transform=\"translate(", num(px - 52), ",", num(kTop + kPanelH / 2),
      ") rotate(-90)\" text-anchor=\"middle\">", xml_escape(ylabel), "</text>\n");
  for (const Run& r : runs) {
    add(s, "<polyline fill=\"none\" stroke=\"", colour, "\" stroke-width=\"1.5\" points=\"");
    for (size_t i = 0; i < r.size(); ++i) add(s, i != 0 ? " " : "", num(X(r[i].first)), ",", num(Y(r[i].second)));
    s += "\"/>\n";
    if (markers) {
      for (const auto& [x, y] : r) {
        add(s, "<circle cx=\"", num(X(x)), "\" cy=\"", num(Y(y)), "\" r=\"3\" fill=\"", colour, "\"/>\n");
      }
    }
  }
  s += "</g>\n";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (lo > hi) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  max_ticks = std::max(max_ticks, 2);
  const double raw = (hi - lo) / (max_ticks - 1);
  double step = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    const double s = step * m;
    const double first = std::floor(lo / s + 1e-9), last = std::ceil(hi / s - 1e-9);
    if (last - first + 1 <= max_ticks) {
      step = s;
      break;
    }
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  for (double k = first; k <= last + 0.5; k += 1) {
    const double v = k * step;
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);  // no "-0"
  }
  return ticks;
}

std::string tick_label(double value, double step) {
  char buf[48];
  const double a = std::fabs(step);
  if (a != 0 && (a < 1e-4 || a >= 1e7)) {
    std::snprintf(buf, sizeof buf, "%g", value);
    return buf;
  }
  int decimals = 0;
  while (decimals < 6 && std::fabs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) >
                             1e-6 * std::pow(10.0, decimals)) {
    ++decimals;
  }
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string render_training_svg(const TrainPlot& plot) {
  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  add(s, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", num(kWidth), "\" height=\"", num(kHeight),
      "\" viewBox=\"0 0 ", num(kWidth), " ", num(kHeight), "\" font-family=\"sans-serif\" font-size=\"12\">\n");
  add(s, "<title>", xml_escape(plot.title.empty() ? "hcq train" : plot.title), "</title>\n");
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";

  // Loss: x over the steps, y from the smallest to the largest finite loss (a loss starts far above where it ends;
  // a zero baseline would flatten the part that matters).
  double lmin = std::numeric_limits<double>::infinity(), lmax = -lmin;
  for (double v : plot.step_loss) {
    if (std::isfinite(v)) lmin = std::min(lmin, v), lmax = std::max(lmax, v);
  }
  if (!std::isfinite(lmin)) lmin = 0, lmax = 1;
  const double steps = static_cast<double>(std::max<size_t>(plot.step_loss.size(), 2));
  panel(s, kLeft, "training loss", "step", "loss", axis(1, steps, 8), axis(lmin, lmax, 7), runs_of(plot.step_loss, 1),
        "#1f77b4", false, 1.0);

  // Accuracy: epochs 1..E, percent; the range from the lowest accuracy (or 0 when there is none) to 100 %.
  double amin = 100;
  for (double v : plot.epoch_accuracy) {
    if (std::isfinite(v)) amin = std::min(amin, v * 100);
  }
  if (plot.epoch_accuracy.empty()) amin = 0;
  const double epochs = static_cast<double>(std::max<size_t>(plot.epoch_accuracy.size(), 2));
  panel(s, kLeft + kPanelW + kGap, "test accuracy", "epoch", "accuracy (%)",
        axis(1, epochs, std::min<int>(static_cast<int>(epochs), 10)), axis(std::floor(amin), 100, 6),
        runs_of(plot.epoch_accuracy, 1), "#d62728", true, 100.0);
  s += "</svg>\n";
  return s;
}

void write_training_svg(const std::filesystem::path& path, const TrainPlot& plot) {
  const std::string svg = render_training_svg(plot);
  const std::string tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw OsError(cat(tmp, ": cannot create"), errno);
  size_t done = 0;
  while (done < svg.size()) {
    const ssize_t w = ::write(fd, svg.data() + done, svg.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw OsError(cat(tmp, ": write failed"), err);
    }
    done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw OsError(cat("writing ", path.string()), err);
  }
}

}  // namespace hcq::tool
