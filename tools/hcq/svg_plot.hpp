// `hcq train --plot FILE`: the run's loss per step and test accuracy per epoch as one SVG, two panels side by side,
// each with its axes, ticks at "nice" values (1, 2 or 5 times a power of ten), tick labels and axis titles. SVG
// because it is text: no image library, it opens in any browser, and a test can parse it as XML.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace hcq::tool {

struct TrainPlot {
  std::string title;                   // e.g. "mlp on CPU:0"
  std::vector<double> step_loss;       // loss after step 1, 2, ...; non-finite values leave a gap
  std::vector<double> epoch_accuracy;  // test accuracy after epoch 1, 2, ... as a fraction (drawn as %)
};

// Tick values covering [lo, hi]: the smallest "nice" step (1, 2, 5 x 10^k) giving at most max_ticks ticks, from the
// largest multiple of it <= lo to the smallest >= hi. lo == hi is widened to show one value in the middle.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks);

// A tick label: the value with as many decimals as the step needs ("0.25", "1000", "2.5e-05" when tiny).
std::string tick_label(double value, double step);

// At most this many points a polyline: longer runs are averaged in equal buckets of steps.
inline constexpr size_t kMaxPlotPoints = 2000;

std::string render_training_svg(const TrainPlot& plot);

// Renders and writes atomically (a temporary beside it, renamed). OsError when it cannot be written.
void write_training_svg(const std::filesystem::path& path, const TrainPlot& plot);

}  // namespace hcq::tool
