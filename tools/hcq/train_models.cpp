#include "train_models.hpp"

namespace hcq::tool {
namespace {

class Mlp : public TrainModel {
 public:
  explicit Mlp(const std::string& device) : l1_(784, 128, true, device), l2_(128, 10, true, device) {}
  Tensor forward(const Tensor& images) override { return l2_(l1_(images.reshape({images.shape(0), 784})).relu()); }
  std::vector<Tensor> parameters() const override { return {l1_.weight, l1_.bias, l2_.weight, l2_.bias}; }
  nn::NamedTensors state() const override {
    nn::NamedTensors s = l1_.named_parameters("l1.");
    for (auto& p : l2_.named_parameters("l2.")) s.push_back(p);
    return s;
  }
  PixelFormat pixel_format() const override { return PixelFormat::unit_float; }
  int64_t default_batch() const override { return 128; }

 private:
  nn::Linear l1_, l2_;
};

// tinygrad's examples/beautiful_mnist.py model, fed raw 0..255 pixels as it is (the BatchNorms absorb the scale).
class Cnn : public TrainModel {
 public:
  explicit Cnn(const std::string& d)
      : c1_(1, 32, {5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, true, d),
        c2_(32, 32, {5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, true, d),
        bn1_(32, 1e-5, 0.1, d),
        c3_(32, 64, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true, d),
        c4_(64, 64, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true, d),
        bn2_(64, 1e-5, 0.1, d),
        fc_(576, 10, true, d) {}
  Tensor forward(const Tensor& images) override {
    Tensor x = nn::max_pool2d(bn1_(c2_(c1_(images).relu()).relu()), {2, 2});
    x = nn::max_pool2d(bn2_(c4_(c3_(x).relu()).relu()), {2, 2});
    return fc_(x.flatten(1));
  }
  std::vector<Tensor> parameters() const override {
    std::vector<Tensor> p;
    for (const auto& l : {c1_.parameters(), c2_.parameters(), bn1_.parameters(), c3_.parameters(), c4_.parameters(),
                          bn2_.parameters(), fc_.parameters()})
      p.insert(p.end(), l.begin(), l.end());
    return p;
  }
  std::vector<Tensor> buffers() const override {
    std::vector<Tensor> b = bn1_.buffers();
    for (const Tensor& t : bn2_.buffers()) b.push_back(t);
    return b;
  }
  nn::NamedTensors state() const override {
    nn::NamedTensors s;
    auto add = [&](const nn::NamedTensors& n) { s.insert(s.end(), n.begin(), n.end()); };
    add(c1_.named_parameters("layers.0."));
    add(c2_.named_parameters("layers.2."));
    add(bn1_.named_parameters("layers.4."));
    add(c3_.named_parameters("layers.6."));
    add(c4_.named_parameters("layers.8."));
    add(bn2_.named_parameters("layers.10."));
    add(fc_.named_parameters("layers.13."));
    return s;
  }
  void set_training(bool on) override { bn1_.training = bn2_.training = on; }
  PixelFormat pixel_format() const override { return PixelFormat::raw_float; }
  int64_t default_batch() const override { return 512; }

 private:
  nn::Conv2d c1_, c2_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d c3_, c4_;
  nn::BatchNorm2d bn2_;
  nn::Linear fc_;
};

}  // namespace

std::unique_ptr<TrainModel> make_train_model(std::string_view name, const std::string& device) {
  if (name == "mlp") return std::make_unique<Mlp>(device);
  if (name == "cnn") return std::make_unique<Cnn>(device);
  return nullptr;
}

}  // namespace hcq::tool
