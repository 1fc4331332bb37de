// train_report_json: the --json document of `hcq train` (tools/hcq/train_report.hpp).
#include "train_report.hpp"

#include "json_writer.hpp"
#include "stats.hpp"

namespace hcq::tool {

std::string train_report_json(const TrainReport& report) {
  JsonWriter w;
  w.begin_object();
  w.field("model", report.model);
  w.field("device", report.device);
  w.key("epochs").begin_array();
  for (const EpochResult& e : report.epochs) {
    w.begin_object();
    w.field("epoch", static_cast<uint64_t>(e.epoch));
    w.field("loss", e.loss);
    w.field("test_accuracy", e.test_accuracy);
    w.field("seconds", e.seconds);
    w.end_object();
  }
  w.end_array();
  w.key("step_ms").begin_object();
  w.field("median", median(report.step_ms));  // NaN (no steps) is written as null
  w.end_object();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace hcq::tool
