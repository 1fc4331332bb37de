// TrainProgress: the text of a progress report, and when and how it is drawn (tools/hcq/train_progress.hpp).
#include "train_progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace hcq::tool {
namespace {

std::string printf_str(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  char buf[48];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

TrainProgress::Options TrainProgress::detect(std::FILE* out) {
  Options o;
  const int fd = ::fileno(out);
  if (fd < 0 || ::isatty(fd) == 0) return o;
  o.mode = Mode::terminal;
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    o.width = ws.ws_col;
  } else if (const char* cols = std::getenv("COLUMNS"); cols != nullptr && std::atoi(cols) > 0) {
    o.width = std::atoi(cols);
  }
  return o;
}

TrainProgress::TrainProgress(std::FILE* out, int64_t total_steps, std::string prefix, Options options)
    : out_(out), total_(std::max<int64_t>(total_steps, 1)), prefix_(std::move(prefix)), opt_(options) {
  if (opt_.line_every <= 0) opt_.line_every = std::max<int64_t>(total_ / 10, 1);
}

double TrainProgress::rate() const {
  if (window_.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  const auto& [s0, t0] = window_.front();
  const auto& [s1, t1] = window_.back();
  return t1 > t0 ? static_cast<double>(s1 - s0) / (t1 - t0) : std::numeric_limits<double>::quiet_NaN();
}

std::string TrainProgress::status(int64_t step, double loss) const {
  const double r = rate();
  const double eta =
      std::isfinite(r) && r > 0 ? static_cast<double>(total_ - step) / r : std::numeric_limits<double>::quiet_NaN();
  // Appended piece by piece: GCC 12 misreports `"literal" + std::string` chains under -Wrestrict.
  std::string s = prefix_;
  if (!s.empty()) s += ' ';
  s.append("step ").append(std::to_string(step)).append("/").append(std::to_string(total_));
  s.append(" loss ").append(printf_str("%.4f", loss));
  s.append(" ").append(std::isfinite(r) ? printf_str("%.1f", r) : std::string("--")).append(" steps/s");
  s.append(" ETA ").append(format_duration(eta));
  return s;
}

void TrainProgress::update(int64_t step, double loss, double now_s) {
  window_.emplace_back(step, now_s);
  if (window_.size() > kRateWindow) window_.pop_front();
  const bool last = step >= total_;
  if (opt_.mode == Mode::lines) {
    if (last || step % opt_.line_every == 0) {
      std::fprintf(out_, "%s\n", status(step, loss).c_str());
      std::fflush(out_);  // a log tailed while training sees each line when it is made
    }
    return;
  }
  if (!last && now_s - last_draw_ < opt_.redraw_s) return;
  last_draw_ = now_s;
  draw(step, loss);
}

// "<prefix> [=====>    ] step 50/468 loss ..." fitted to width - 1 (the last column would wrap on some terminals):
// the bar takes what the text leaves, at least 10 columns, and is left out when even that does not fit; the text is
// cut at the width as the last resort.
void TrainProgress::draw(int64_t step, double loss) {
  const std::string text = status(step, loss);
  const size_t width = static_cast<size_t>(std::max(opt_.width - 1, 1));
  std::string line;
  if (text.size() + 3 + 10 <= width) {
    const size_t bar = width - text.size() - 3;
    const auto filled = static_cast<size_t>(static_cast<double>(bar) * static_cast<double>(std::min(step, total_)) /
                                            static_cast<double>(total_));
    std::string b(bar, ' ');
    std::fill_n(b.begin(), filled, '=');
    if (filled < bar && filled > 0) b[filled - 1] = '>';
    line.append("[").append(b).append("] ").append(text);
  } else {
    line = text.substr(0, width);
  }
  const size_t pad = drawn_ > line.size() ? drawn_ - line.size() : 0;
  std::fprintf(out_, "\r%s%s", line.c_str(), std::string(pad, ' ').c_str());
  drawn_ = line.size();
  std::fflush(out_);
}

void TrainProgress::finish() {
  if (opt_.mode == Mode::terminal && drawn_ > 0) {
    std::fputc('\n', out_);
    drawn_ = 0;
    std::fflush(out_);
  }
}

void TrainProgress::message(std::string_view line) {
  if (opt_.mode == Mode::terminal && drawn_ > 0) {
    std::fprintf(out_, "\r%s\r", std::string(drawn_, ' ').c_str());
    drawn_ = 0;
    last_draw_ = -1e300;  // draw the bar again at the next update
  }
  std::fprintf(out_, "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(out_);
}

}  // namespace hcq::tool
