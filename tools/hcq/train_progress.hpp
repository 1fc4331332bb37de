// `hcq train`'s progress output: on a terminal, one bar redrawn in place with \r (step/total, loss, steps/s, ETA,
// fitted to the terminal's width); otherwise (a pipe, a file, CI logs) plain lines every so many steps, which read
// well in a log and never carry control characters.
//
//   TrainProgress bar(stdout, steps, "epoch 1/3", TrainProgress::detect(stdout));
//   for (...) { ...; bar.update(step, loss, clock_s()); }
//   bar.finish(clock_s());
//   bar.message("epoch 1: test accuracy 84.1%");
//
// Time comes in as an argument (seconds from any monotonic clock), so the output for given inputs is exact: the
// tests assert it byte for byte. Steps per second are over the last kRateWindow updates (the first steps of a
// jitted run include its capture; a whole-run average would carry them along).
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <utility>

namespace hcq::tool {

// "0:07", "12:34", "1:02:03"; "--:--" for a time not known (NaN, infinite, negative).
std::string format_duration(double seconds);

class TrainProgress {
 public:
  enum class Mode { terminal, lines };
  struct Options {
    Mode mode = Mode::lines;
    int width = 80;          // terminal: columns
    double redraw_s = 0.1;   // terminal: redraw at most this often (and at the last step)
    int64_t line_every = 0;  // lines: a line each this many steps; 0 = a tenth of the total. The last step always.
  };
  static constexpr size_t kRateWindow = 32;

  // Terminal mode when `out` is a terminal, with its width (TIOCGWINSZ, else $COLUMNS, else 80); lines otherwise.
  static Options detect(std::FILE* out);

  TrainProgress(std::FILE* out, int64_t total_steps, std::string prefix, Options options);

  // After step `step` (1-based, <= total) with its loss, at `now_s`.
  void update(int64_t step, double loss, double now_s);
  // Terminal: the bar's last state stays on its line and the cursor moves past it. Lines: nothing more.
  void finish();
  // A line of its own (an epoch's accuracy, a warning). Terminal: the bar's line is cleared first; a later update
  // draws the bar again below.
  void message(std::string_view line);

  // The text of one report (no \r, no newline): what lines mode prints, and what the bar shows beside the bar.
  std::string status(int64_t step, double loss) const;

 private:
  double rate() const;  // steps per second over the window; NaN with fewer than two samples
  void draw(int64_t step, double loss);

  std::FILE* out_;
  int64_t total_;
  std::string prefix_;
  Options opt_;
  std::deque<std::pair<int64_t, double>> window_;  // (step, time) of the last updates
  double last_draw_ = -1e300;
  size_t drawn_ = 0;  // terminal: characters on the bar's line now
};

}  // namespace hcq::tool
