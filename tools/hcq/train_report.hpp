// `hcq train --json`: the run as one JSON document on stdout (issue 16's shape, which scripts and `hcq bench` read):
//   {"model": "mlp", "device": "CPU:0",
//    "epochs": [{"epoch": 1, "loss": 0.52, "test_accuracy": 0.84, "seconds": 2.1}, ...],
//    "step_ms": {"median": 0.41}}
// loss is the epoch's mean training loss, test_accuracy a fraction, step_ms the median over every step of the run.
// A number that is not finite (a NaN loss) is null: JSON has no spelling for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hcq::tool {

struct EpochResult {
  int64_t epoch = 0;  // 1-based
  double loss = 0;
  double test_accuracy = 0;
  double seconds = 0;
};

struct TrainReport {
  std::string model, device;
  std::vector<EpochResult> epochs;
  std::vector<double> step_ms;  // every step's time; the document carries their median
};

std::string train_report_json(const TrainReport& report);

}  // namespace hcq::tool
