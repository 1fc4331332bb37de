// `hcq train`'s terminal output, plot and --json document (tools/hcq/train_progress, svg_plot, train_report): the
// progress text for given steps, losses and times, byte for byte (expected strings worked out by hand from the
// format: rate = steps / seconds over the window, ETA = remaining steps / rate), the ticks of the plot's axes, the
// SVG parsed as XML by python3, the JSON document's shape.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "svg_plot.hpp"
#include "train_progress.hpp"
#include "train_report.hpp"

namespace hcq::tool {
namespace {

// Everything written to a FILE* by `f`.
template <class F>
std::string captured(F f) {
  std::FILE* out = std::tmpfile();
  f(out);
  std::fflush(out);
  std::rewind(out);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, out)) > 0) s.append(buf, n);
  std::fclose(out);
  return s;
}

TEST(TrainOutput, Durations) {
  EXPECT_EQ(format_duration(7), "0:07");
  EXPECT_EQ(format_duration(754), "12:34");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(0.4), "0:00");
  EXPECT_EQ(format_duration(std::nan("")), "--:--");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "--:--");
}

// Lines mode: a line at every 2nd step and at the last; steps 1..5 at 0.5 s apart (2 steps/s).
TEST(TrainOutput, PlainLines) {
  const std::string out = captured([](std::FILE* f) {
    TrainProgress::Options o;
    o.mode = TrainProgress::Mode::lines;
    o.line_every = 2;
    TrainProgress p(f, 5, "epoch 1/2", o);
    const double loss[] = {2.0, 1.5, 1.25, 1.0, 0.75};
    for (int s = 1; s <= 5; ++s) p.update(s, loss[s - 1], 0.5 * s);
    p.finish();
    p.message("epoch 1: test accuracy 84.10%");
  });
  EXPECT_EQ(out,
            "epoch 1/2 step 2/5 loss 1.5000 2.0 steps/s ETA 0:02\n"  // 3 left / 2 per s = 1.5 s, rounded
            "epoch 1/2 step 4/5 loss 1.0000 2.0 steps/s ETA 0:01\n"
            "epoch 1/2 step 5/5 loss 0.7500 2.0 steps/s ETA 0:00\n"
            "epoch 1: test accuracy 84.10%\n");
}

TEST(TrainOutput, PlainLinesDefaultEveryTenthAndUnknownRate) {
  const std::string out = captured([](std::FILE* f) {
    TrainProgress p(f, 1, "", TrainProgress::Options{});
    p.update(1, std::nan(""), 3.0);
  });
  EXPECT_EQ(out, "step 1/1 loss nan -- steps/s ETA --:--\n");
}

// Terminal mode, 60 columns: the bar takes the 59 - 41 - 3 = 15 columns the 41-character text leaves; 1/4 done
// fills 3 (the last an arrow head), 2/4 fills 7.
TEST(TrainOutput, TerminalBar) {
  const std::string out = captured([](std::FILE* f) {
    TrainProgress::Options o;
    o.mode = TrainProgress::Mode::terminal;
    o.width = 60;
    o.redraw_s = 0;
    TrainProgress p(f, 4, "", o);
    p.update(1, 2.0, 0.0);
    p.update(2, 1.0, 0.5);
    p.finish();
  });
  EXPECT_EQ(out, "\r[==>" + std::string(12, ' ') +
                     "] step 1/4 loss 2.0000 -- steps/s ETA --:--"
                     "\r[======>" +
                     std::string(8, ' ') + "] step 2/4 loss 1.0000 2.0 steps/s ETA 0:01\n");
}

// Redraws at most every redraw_s, but always the last step; a message clears the bar's line first.
TEST(TrainOutput, TerminalThrottleNarrowAndMessage) {
  const std::string out = captured([](std::FILE* f) {
    TrainProgress::Options o;
    o.mode = TrainProgress::Mode::terminal;
    o.width = 30;  // 29 usable: the 41-character text is cut, no bar
    o.redraw_s = 1.0;
    TrainProgress p(f, 3, "", o);
    p.update(1, 2.0, 0.0);
    p.update(2, 1.0, 0.5);  // within 1 s of the last draw: not drawn
    p.message("hello");
    p.update(3, 0.5, 0.6);  // the last step: drawn
    p.finish();
  });
  EXPECT_EQ(out, "\rstep 1/3 loss 2.0000 -- steps" + std::string("\r") + std::string(29, ' ') +
                     "\rhello\n\rstep 3/3 loss 0.5000 3.3 step\n");  // 2 steps in 0.6 s; cut at 29
}

TEST(TrainOutput, NiceTicks) {
  EXPECT_EQ(nice_ticks(0, 2.3, 6), (std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5}));
  EXPECT_EQ(nice_ticks(1, 468, 8), (std::vector<double>{0, 100, 200, 300, 400, 500}));
  EXPECT_EQ(nice_ticks(0.75, 2, 7), (std::vector<double>{0.5, 1, 1.5, 2}));
  EXPECT_EQ(nice_ticks(80, 100, 6), (std::vector<double>{80, 85, 90, 95, 100}));
  // One value: widened by 10 % each side, 2.7..3.3, ticks at 0.2 (0.1 would make 7).
  const std::vector<double> one = nice_ticks(3, 3, 5);
  ASSERT_EQ(one.size(), 5u);
  EXPECT_NEAR(one.front(), 2.6, 1e-12);
  EXPECT_NEAR(one.back(), 3.4, 1e-12);
  EXPECT_EQ(tick_label(0.5, 0.5), "0.5");
  EXPECT_EQ(tick_label(2, 0.5), "2.0");
  EXPECT_EQ(tick_label(300, 100), "300");
  EXPECT_EQ(tick_label(0.25, 0.05), "0.25");
}

TEST(TrainOutput, SvgPlotIsValidXmlWithBothPanels) {
  TrainPlot plot;
  plot.title = "mlp <&> \"CPU\"";
  plot.step_loss = {2.0, 1.5, std::nan(""), 1.0, 0.75};  // the NaN splits the loss line in two
  plot.epoch_accuracy = {0.81, 0.845};
  const std::string svg = render_training_svg(plot);
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 3u);
  EXPECT_NE(svg.find("<title>mlp &lt;&amp;&gt; &quot;CPU&quot;</title>"), std::string::npos);
  // The loss axis: 0.75..2 ticks at 0.5 steps; the accuracy axis: 81..100 % ticks at 5.
  for (const char* label : {">0.5</text>", ">1.0</text>", ">2.0</text>", ">80</text>", ">100</text>",
                            ">training loss</text>", ">test accuracy</text>", ">step</text>", ">epoch</text>"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }

  const auto path = std::filesystem::temp_directory_path() / ("hcq-plot-" + std::to_string(::getpid()) + ".svg");
  write_training_svg(path, plot);
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), svg);
  if (std::system("python3 -c 'pass' >/dev/null 2>&1") != 0) {
    std::filesystem::remove(path);
    GTEST_SKIP() << "python3 is not installed: the SVG is not parsed as XML";
  }
  const std::string check =
      "python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
      "ns = \"{http://www.w3.org/2000/svg}\"; assert r.tag == ns + \"svg\", r.tag; "
      "assert len(r.findall(ns + \"g\")) == 2; assert len(list(r.iter(ns + \"circle\"))) == 2' " +
      path.string();
  EXPECT_EQ(std::system(check.c_str()), 0);
  std::filesystem::remove(path);
}

TEST(TrainOutput, SvgPlotThinsLongRuns) {
  TrainPlot plot;
  plot.step_loss.assign(60000, 1.0);
  const std::string svg = render_training_svg(plot);
  const size_t at = svg.find("points=\"");
  const size_t end = svg.find('"', at + 8);
  size_t points = 1;
  for (size_t i = at + 8; i < end; ++i) points += svg[i] == ' ';
  EXPECT_EQ(points, kMaxPlotPoints);  // 60000 steps in buckets of 30
}

TEST(TrainOutput, JsonReport) {
  TrainReport r;
  r.model = "mlp";
  r.device = "CPU:0";
  r.epochs = {{1, 0.5, 0.84, 2.25}, {2, std::nan(""), 0.5, 1}};
  r.step_ms = {0.5, 0.25, 4.0};
  EXPECT_EQ(train_report_json(r),
            "{\"model\":\"mlp\",\"device\":\"CPU:0\",\"epochs\":[{\"epoch\":1,\"loss\":0.5,\"test_accuracy\":0.84,"
            "\"seconds\":2.25},{\"epoch\":2,\"loss\":null,\"test_accuracy\":0.5,\"seconds\":1}],"
            "\"step_ms\":{\"median\":0.5}}\n");
}

}  // namespace
}  // namespace hcq::tool
