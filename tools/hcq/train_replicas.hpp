// The model `hcq train` trains, once per device: data-parallel training (issue 18) when there are several. Each
// device holds a replica of the parameters and optimiser state and takes a contiguous shard of every batch (the
// first batch % N devices one row more); each replica's gradient, weighted by its share of the batch, is
// allreduced, so every replica applies the whole batch's gradient and they stay equal. One device is the plain
// case: the same step without the allreduce.
//
// BatchNorm's statistics are each replica's own shard's (no synchronisation across devices, as in tinygrad's
// multi-GPU beautiful_mnist): with BatchNorm the run differs a little from one device's; without (the MLP) it is the
// same up to float rounding. Evaluation and checkpoints use the first replica.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hcq/datasets.hpp"
#include "hcq/optim.hpp"
#include "train_models.hpp"

namespace hcq::tool {

class TrainReplicas {
 public:
  // `model` ("mlp" or "cnn") on each of `devices` (at least one), the first replica's weights copied to the others;
  // Adam at `lr` (0: the model's default). InvalidArgument for an unknown model or devices that cannot reach each
  // other (check_devices_reach's message).
  TrainReplicas(const std::string& model, const std::vector<std::string>& devices, double lr);

  // The batch at `indices`, cut into one shard per device: images and labels of replica 0, then of replica 1, ...
  std::vector<Tensor> shard_batch(const LabelledImages& data, std::span<const int64_t> indices) const;
  // One training step over the inputs shard_batch made (what TinyJit captures): every replica's update and
  // BatchNorm statistics in one realize. Returns each replica's loss weighted by its share of the batch (their sum
  // is the batch's mean loss), from before the update.
  std::vector<Tensor> step(const std::vector<Tensor>& shards);

  TrainModel& primary() { return *models_[0]; }
  const std::vector<std::string>& devices() const { return devices_; }
  void set_training(bool on);

 private:
  std::vector<std::string> devices_;
  std::vector<std::unique_ptr<TrainModel>> models_;
  std::vector<std::unique_ptr<optim::Adam>> optimizers_;
};

}  // namespace hcq::tool
