#include "workloads/models/resnet.h"

namespace autotune {

namespace nn = torch::nn;

namespace {
std::string fmt_name(size_t stage, int64_t i) { return "layer" + std::to_string(stage + 1) + "_" + std::to_string(i); }

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}
}  // namespace

ResBlockImpl::ResBlockImpl(int64_t in, int64_t planes, int64_t stride, bool bneck) : bottleneck(bneck) {
  const int64_t out = bneck ? planes * 4 : planes;
  if (bneck) {
    conv1 = register_module("conv1", conv(in, planes, 1, 1));
    conv2 = register_module("conv2", conv(planes, planes, 3, stride));
    conv3 = register_module("conv3", conv(planes, out, 1, 1));
    bn3 = register_module("bn3", nn::BatchNorm2d(out));
  } else {
    conv1 = register_module("conv1", conv(in, planes, 3, stride));
    conv2 = register_module("conv2", conv(planes, planes, 3, 1));
  }
  bn1 = register_module("bn1", nn::BatchNorm2d(planes));
  bn2 = register_module("bn2", nn::BatchNorm2d(planes));
  if (stride != 1 || in != out)
    downsample = register_module("downsample", nn::Sequential(conv(in, out, 1, stride), nn::BatchNorm2d(out)));
}

torch::Tensor ResBlockImpl::forward(const torch::Tensor& x) {
  auto h = torch::relu(bn1->forward(conv1->forward(x)));
  h = bn2->forward(conv2->forward(h));
  if (bottleneck) h = bn3->forward(conv3->forward(torch::relu(h)));
  return torch::relu(h + (downsample ? downsample->forward(x) : x));
}

int ResNetConfig::batch_norms() const {
  int n = 1;  // the stem's
  int64_t in = 64;
  const int64_t planes[] = {64, 128, 256, 512};
  for (size_t stage = 0; stage < layers.size(); ++stage)
    for (int64_t i = 0; i < layers[stage]; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1, out = bottleneck ? planes[stage] * 4 : planes[stage];
      n += (bottleneck ? 3 : 2) + ((stride != 1 || in != out) ? 1 : 0);
      in = out;
    }
  return n;
}

ResNetImpl::ResNetImpl(const ResNetConfig& c) {
  stem = register_module("stem", nn::Conv2d(nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
  stem_bn = register_module("stem_bn", nn::BatchNorm2d(64));
  int64_t in = 64;
  const int64_t planes[] = {64, 128, 256, 512};
  for (size_t stage = 0; stage < c.layers.size(); ++stage) {
    for (int64_t i = 0; i < c.layers[stage]; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      blocks.push_back(register_module(fmt_name(stage, i), ResBlock(in, planes[stage], stride, c.bottleneck)));
      in = c.bottleneck ? planes[stage] * 4 : planes[stage];
    }
  }
  for (auto& b : blocks) block_fns.emplace_back([m = b.get()](const torch::Tensor& x) { return m->forward(x); });
  fc = register_module("fc", nn::Linear(in, c.num_classes));
  checkpointed_.assign(blocks.size(), false);
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* cv = m->as<nn::Conv2d>()) nn::init::kaiming_normal_(cv->weight, 0.0, torch::kFanOut, torch::kReLU);
    if (auto* bn = m->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& x) {
  auto h = torch::max_pool2d(torch::relu(stem_bn->forward(stem->forward(x))), 3, 2, 1);
  for (size_t i = 0; i < blocks.size(); ++i) h = checkpointed_[i] ? checkpoint(block_fns[i], h) : blocks[i]->forward(h);
  return fc->forward(torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1));
}

int64_t resnet_macs_per_sample(const ResNetConfig& c, int64_t image_size) {
  // Mirrors the constructor: out_c · H_out · W_out · in_c · k² per conv (square inputs), plus the fc.
  int64_t macs = 0;
  auto conv = [&](int64_t in, int64_t out, int64_t k, int64_t stride, int64_t h) {
    const int64_t o = (h + 2 * (k / 2) - k) / stride + 1;
    macs += out * o * o * in * k * k;
    return o;
  };
  int64_t h = conv(3, 64, 7, 2, image_size);
  h = (h + 2 - 3) / 2 + 1;  // max pool 3, stride 2, padding 1
  int64_t in = 64;
  const int64_t planes[] = {64, 128, 256, 512};
  for (size_t stage = 0; stage < c.layers.size(); ++stage) {
    for (int64_t i = 0; i < c.layers[stage]; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1, p = planes[stage];
      const int64_t out = c.bottleneck ? 4 * p : p;
      int64_t y;
      if (c.bottleneck) {
        y = conv(in, p, 1, 1, h);
        y = conv(p, p, 3, stride, y);
        y = conv(p, out, 1, 1, y);
      } else {
        y = conv(in, p, 3, stride, h);
        y = conv(p, p, 3, 1, y);
      }
      if (stride != 1 || in != out) conv(in, out, 1, stride, h);
      h = y;
      in = out;
    }
  }
  return macs + in * c.num_classes;
}

}  // namespace autotune
