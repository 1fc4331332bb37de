#include "train_replicas.hpp"

#include "hcq/error.hpp"
#include "hcq/multi.hpp"
#include "hcq/nn.hpp"

namespace hcq::tool {

TrainReplicas::TrainReplicas(const std::string& model, const std::vector<std::string>& devices, double lr) {
  if (devices.empty()) throw InvalidArgument("hcq train: no device to train on");
  if (devices.size() > 1) check_devices_reach(devices);
  for (const std::string& d : devices) {
    models_.push_back(make_train_model(model, d));
    if (!models_.back()) throw InvalidArgument("--model: '" + model + "' is not a model (mlp or cnn)");
    devices_.push_back(models_.back()->parameters()[0].device());  // "CPU" -> "CPU:0"
  }
  // Each replica drew its own initial weights: all start from the first one's.
  std::vector<Tensor> copied;
  const nn::NamedTensors first = models_[0]->state();
  for (size_t r = 1; r < models_.size(); ++r) {
    const nn::NamedTensors mine = models_[r]->state();
    for (size_t k = 0; k < mine.size(); ++k) {
      Tensor t = mine[k].second;
      t.assign(first[k].second.to(devices_[r]));
      copied.push_back(t);
    }
  }
  if (!copied.empty()) Tensor::realize(copied);
  for (const auto& m : models_)
    optimizers_.push_back(std::make_unique<optim::Adam>(m->parameters(), lr > 0 ? lr : m->default_lr()));
}

std::vector<Tensor> TrainReplicas::shard_batch(const LabelledImages& data, std::span<const int64_t> indices) const {
  const size_t n = indices.size(), parts = models_.size();
  std::vector<Tensor> out;
  size_t start = 0;
  for (size_t r = 0; r < parts; ++r) {
    const size_t rows = n / parts + (r < n % parts ? 1 : 0);
    const Batch b = make_batch(data, indices.subspan(start, rows), models_[r]->pixel_format(), devices_[r]);
    out.push_back(b.images);
    out.push_back(b.labels);
    start += rows;
  }
  return out;
}

std::vector<Tensor> TrainReplicas::step(const std::vector<Tensor>& shards) {
  const size_t parts = models_.size();
  int64_t total = 0;
  for (size_t r = 0; r < parts; ++r) total += shards[2 * r + 1].shape(0);
  std::vector<Tensor> losses;
  for (size_t r = 0; r < parts; ++r) {
    optimizers_[r]->zero_grad();
    const double share = static_cast<double>(shards[2 * r + 1].shape(0)) / static_cast<double>(total);
    Tensor loss = nn::cross_entropy(models_[r]->forward(shards[2 * r]), shards[2 * r + 1]);
    if (parts > 1) loss = loss * share;  // the shard's part of the batch's mean
    loss.backward();
    losses.push_back(loss);
  }
  if (parts > 1) {
    const size_t params = optimizers_[0]->parameters().size();
    for (size_t k = 0; k < params; ++k) {
      std::vector<Tensor> grads;
      for (const auto& opt : optimizers_) grads.push_back(opt->parameters()[k].grad());
      if (!grads[0].defined()) continue;
      const std::vector<Tensor> total_grad = allreduce(grads);
      for (size_t r = 0; r < parts; ++r) {
        Tensor p = optimizers_[r]->parameters()[k];
        p.set_grad(total_grad[r]);
      }
    }
  }
  // One realize for every replica: the allreduce reads every replica's gradient before any update lands.
  std::vector<Tensor> all;
  for (size_t r = 0; r < parts; ++r) {
    std::vector<Tensor> with = models_[r]->buffers();
    with.push_back(losses[r]);
    for (const Tensor& t : optimizers_[r]->schedule_step(with)) all.push_back(t);
  }
  Tensor::realize(all);
  return losses;
}

void TrainReplicas::set_training(bool on) {
  for (const auto& m : models_) m->set_training(on);
}

}  // namespace hcq::tool
