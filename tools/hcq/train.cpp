// `hcq train`: trains a model on Fashion-MNIST under TinyJit, on any device, with a progress bar, test accuracy
// after each epoch, a plot and a checkpoint. The project's first job for a newcomer (README).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "hcq/datasets.hpp"
#include "hcq/jit.hpp"
#include "hcq/nn.hpp"
#include "hcq/optim.hpp"
#include "hcq/safetensors.hpp"
#include "svg_plot.hpp"
#include "train_models.hpp"
#include "train_progress.hpp"
#include "train_replicas.hpp"
#include "train_report.hpp"

namespace hcq::tool {
namespace {

constexpr const char* kUsage =
    "usage: hcq train [--model mlp|cnn] [--device D | --devices D1,D2,...] [--epochs N] [--batch B] [--lr X]\n"
    "                 [--seed S] [--steps N] [--data DIR] [--json] [--plot FILE] [--save FILE]\n"
    "\n"
    "Trains on Fashion-MNIST (Debian's dataset-fashion-mnist, installed by scripts/setup.sh) under TinyJit and\n"
    "prints the test accuracy after each epoch.\n"
    "  --model   mlp: 784-128-10, Adam 1e-3, batch 128 (default); cnn: tinygrad's beautiful_mnist, batch 512\n"
    "  --device  any device `hcq info` lists (default HCQ_DEVICE, else CPU)\n"
    "  --devices data-parallel over these devices: each batch sharded across them, the weights replicated, the\n"
    "            gradients allreduced (e.g. CPU:0,CPU:1 or SIM-AMD:gfx1100,SIM-AMD:gfx1100:1)\n"
    "  --epochs  passes over the 60000 training images (default 1)\n"
    "  --batch, --lr   override the model's recipe\n"
    "  --seed    initial weights and batch order (default 0)\n"
    "  --steps   at most this many steps an epoch (a quick run; default all)\n"
    "  --data    the directory of the four .gz files (default /usr/share/datasets/fashion-mnist)\n"
    "  --json    one JSON document on stdout ({model, device, epochs: [...], step_ms}); progress on stderr\n"
    "  --plot    write the loss per step and the accuracy per epoch as an SVG\n"
    "  --save    write the weights as safetensors at the end (and on Ctrl-C)\n"
    "Ctrl-C stops after the current step and writes a checkpoint (--save, else hcq-train-interrupted.safetensors);\n"
    "a second Ctrl-C ends it at once.\n"
    "A loss that is not finite stops the run with exit status 1, naming the step.\n";

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) { g_interrupted = 1; }

struct Options {
  std::string model = "mlp", device, data = kFashionMnistDir, plot, save;
  std::vector<std::string> devices;  // --devices
  int64_t epochs = 1, batch = 0, steps = 0;
  double lr = 0;
  uint64_t seed = 0;
  bool json = false;
};

template <class T>
bool parse_number(std::string_view s, T& out) {
  if constexpr (std::is_floating_point_v<T>) {
    try {
      size_t used = 0;
      out = static_cast<T>(std::stod(std::string(s), &used));
      return used == s.size() && std::isfinite(out);
    } catch (const std::exception&) {
      return false;
    }
  } else {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size();
  }
}

// "D1,D2,...": at least one name, none empty.
bool parse_devices(std::string_view v, std::vector<std::string>& out) {
  out.clear();
  size_t start = 0;
  while (start <= v.size()) {
    const size_t comma = std::min(v.find(',', start), v.size());
    if (comma == start) return false;
    out.emplace_back(v.substr(start, comma - start));
    start = comma + 1;
  }
  return !out.empty();
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

TensorMap checkpoint_of(const TrainModel& model) {
  TensorMap m;
  for (const auto& [name, t] : model.state()) m.emplace(name, t);
  return m;
}

// Accuracy on the whole test set, batches in order (the last one padded; only its real rows count).
double test_accuracy(TrainModel& model, TinyJit& eval, const LabelledImages& test, int64_t batch,
                     const std::string& device) {
  const BatchSampler order(test.count, batch, 0, BatchSampler::Order::sequential);
  int64_t correct = 0;
  for (int64_t i = 0; i < order.batches_per_epoch(); ++i) {
    const Batch b = make_batch(test, order.batch(0, i), model.pixel_format(), device, order.valid(i));
    const std::vector<uint8_t> hit = eval({b.images, b.labels})[0].data<uint8_t>();
    correct += std::count(hit.begin(), hit.begin() + b.valid, uint8_t{1});
  }
  return static_cast<double>(correct) / static_cast<double>(test.count);
}

}  // namespace

int run_train(std::span<const std::string_view> args) {
  Options o;
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string_view a = args[k];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a == "--json") {
      o.json = true;
      continue;
    }
    if (k + 1 >= args.size()) return usage_error(std::string(a) + " needs a value (or is not an option)", "train");
    const std::string_view v = args[++k];
    bool ok = true;
    if (a == "--model") o.model = v;
    else if (a == "--device") o.device = v;
    else if (a == "--devices") ok = parse_devices(v, o.devices);
    else if (a == "--data") o.data = v;
    else if (a == "--plot") o.plot = v;
    else if (a == "--save") o.save = v;
    else if (a == "--epochs") ok = parse_number(v, o.epochs) && o.epochs > 0;
    else if (a == "--batch") ok = parse_number(v, o.batch) && o.batch > 0;
    else if (a == "--steps") ok = parse_number(v, o.steps) && o.steps > 0;
    else if (a == "--lr") ok = parse_number(v, o.lr) && o.lr > 0;
    else if (a == "--seed") ok = parse_number(v, o.seed);
    else return usage_error("unknown option '" + std::string(a) + "'", "train");
    if (!ok)
      return usage_error(std::string(a) + ": '" + std::string(v) + "' is not " +
                             (a == "--devices" ? "a list of devices (D1,D2,...)" : "a positive number"),
                         "train");
  }
  if (!o.device.empty() && !o.devices.empty()) return usage_error("--device and --devices: give one of them", "train");
  if (o.devices.empty()) o.devices = {o.device};
  std::FILE* const progress_out = o.json ? stderr : stdout;

  const FashionMnist data = load_fashion_mnist(o.data);
  Tensor::manual_seed(o.seed);
  if (o.model != "mlp" && o.model != "cnn")
    return usage_error("--model: '" + o.model + "' is not a model (mlp or cnn)", "train");
  TrainReplicas replicas(o.model, o.devices, o.lr);
  TrainModel* const model = &replicas.primary();
  const std::string device = replicas.devices()[0];
  std::string devices_text = device;
  for (size_t k = 1; k < replicas.devices().size(); ++k) devices_text += "," + replicas.devices()[k];
  const int64_t batch = o.batch ? o.batch : model->default_batch();
  if (batch < static_cast<int64_t>(replicas.devices().size()))
    return usage_error("--batch " + std::to_string(batch) + " is smaller than the " +
                           std::to_string(replicas.devices().size()) + " devices it is shared among",
                       "train");

  TinyJit train_step([&](const std::vector<Tensor>& in) { return replicas.step(in); });
  TinyJit eval_step([&](const std::vector<Tensor>& in) {
    NoGrad no_grad;
    return std::vector<Tensor>{model->forward(in[0]).argmax(1).eq(in[1]).cast(DType::uint8)};
  });

  struct sigaction action = {}, previous = {};
  action.sa_handler = on_interrupt;
  action.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends the process at once
  sigaction(SIGINT, &action, &previous);
  g_interrupted = 0;

  const BatchSampler sampler(data.train.count, batch, o.seed);
  const int64_t steps = o.steps ? std::min(o.steps, sampler.batches_per_epoch()) : sampler.batches_per_epoch();
  TrainReport report{o.model, devices_text, {}, {}};
  TrainPlot plot{o.model + " on " + devices_text, {}, {}};
  int status = kExitOk;
  for (int64_t epoch = 1; epoch <= o.epochs && status == kExitOk && !g_interrupted; ++epoch) {
    const std::vector<int64_t> order = sampler.permutation(epoch - 1);
    TrainProgress bar(progress_out, steps, "epoch " + std::to_string(epoch) + "/" + std::to_string(o.epochs),
                      TrainProgress::detect(progress_out));
    const double epoch_start = now_s();
    double loss_sum = 0;
    int64_t done = 0;
    replicas.set_training(true);
    for (int64_t i = 0; i < steps && !g_interrupted; ++i) {
      const std::vector<Tensor> shards = replicas.shard_batch(data.train, sampler.batch(order, i));
      const double t0 = now_s();
      double loss = 0;
      for (const Tensor& l : train_step(shards)) loss += l.item();
      report.step_ms.push_back((now_s() - t0) * 1e3);
      plot.step_loss.push_back(loss);
      if (!std::isfinite(loss)) {
        bar.message("hcq train: the loss is " + std::string(std::isnan(loss) ? "nan" : "infinite") + " at step " +
                    std::to_string(report.step_ms.size()) + " (epoch " + std::to_string(epoch) + ", batch " +
                    std::to_string(i + 1) + "): stopping; try a smaller --lr");
        status = kExitFailure;
        break;
      }
      loss_sum += loss;
      ++done;
      bar.update(i + 1, loss, now_s());
    }
    bar.finish();
    if (status != kExitOk || g_interrupted) break;
    replicas.set_training(false);
    const double accuracy = test_accuracy(*model, eval_step, data.test, batch, device);
    report.epochs.push_back(
        {epoch, loss_sum / static_cast<double>(std::max<int64_t>(done, 1)), accuracy, now_s() - epoch_start});
    plot.epoch_accuracy.push_back(accuracy);
    char line[160];
    std::snprintf(line, sizeof line, "epoch %lld: loss %.4f, test accuracy %.2f%%, %.1f s",
                  static_cast<long long>(epoch), report.epochs.back().loss, accuracy * 100,
                  report.epochs.back().seconds);
    bar.message(line);
  }
  sigaction(SIGINT, &previous, nullptr);

  std::string save = o.save;
  if (g_interrupted && save.empty()) save = "hcq-train-interrupted.safetensors";
  if (!save.empty()) {
    save_safetensors(save, checkpoint_of(*model), {{"model", o.model}, {"device", device}});
    std::fprintf(progress_out, "weights saved to %s\n", save.c_str());
  }
  if (!o.plot.empty()) write_training_svg(o.plot, plot);
  if (o.json) std::fputs((train_report_json(report) + "\n").c_str(), stdout);
  if (g_interrupted) {
    std::fprintf(progress_out, "interrupted\n");
    return 130;
  }
  return status;
}

}  // namespace hcq::tool
