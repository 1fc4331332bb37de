// The models `hcq train` trains on Fashion-MNIST: `mlp` (784-128-10 with ReLU; Adam 1e-3, batch 128) and `cnn`
// (tinygrad's beautiful_mnist: two 5x5 and two 3x3 convolutions with ReLU, a BatchNorm and a 2x2 max pool after
// each pair, then Linear 576 -> 10; Adam 1e-3, batch 512), each with the recipe it is trained with.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hcq/datasets.hpp"
#include "hcq/nn.hpp"

namespace hcq::tool {

class TrainModel {
 public:
  virtual ~TrainModel() = default;
  // images (B, 1, 28, 28) in pixel_format() -> logits (B, 10).
  virtual Tensor forward(const Tensor& images) = 0;
  virtual std::vector<Tensor> parameters() const = 0;
  // State the training step must realize with the update (BatchNorm's running statistics).
  virtual std::vector<Tensor> buffers() const { return {}; }
  // Every tensor a checkpoint holds, by PyTorch-style name.
  virtual nn::NamedTensors state() const = 0;
  virtual void set_training(bool) {}

  virtual PixelFormat pixel_format() const = 0;
  virtual int64_t default_batch() const = 0;
  double default_lr() const { return 1e-3; }
};

// "mlp" or "cnn"; nullptr for another name.
std::unique_ptr<TrainModel> make_train_model(std::string_view name, const std::string& device);

}  // namespace hcq::tool
