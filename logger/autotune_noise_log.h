#pragma once
// autotune's noise logger for your own LibTorch training loop (docs/time-to-train.md, "Your own training loop").
// Header-only; needs LibTorch and the standard library only. It writes the same JSON Lines file as
// logger/autotune_noise_log.py: per optimizer step, the mean squared norm of the step's micro-batch gradients and the
// squared norm of their mean. Then `autotune tune --objective time --noise-log noise.jsonl …` prices a changed batch
// with your loop's noise scale (or `autotune report RUN_DIR --noise-log noise.jsonl` re-prices a finished tune).
//
//   autotune_log::NoiseLog log("noise.jsonl", model->parameters(), /*micro_batch=*/b, /*micro_batches=*/K);
//   for (int step = 0; step < steps; ++step) {
//     optimizer.zero_grad();
//     for (int k = 0; k < K; ++k) {
//       (loss_fn(model->forward(x[k]), y[k]) / K).backward();
//       log.micro_batch_done();
//     }
//     log.step(total_loss);  // before optimizer.step(): the gradients are the step's
//     optimizer.step();
//   }
//
// Cost: one extra copy of the gradients and a few passes over them per micro-batch, plus a host sync for the norms;
// Options::every = N logs every N-th step only. An existing file is never overwritten (the constructor throws).
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace autotune_log {

class NoiseLog {
 public:
  struct Options {
    bool loss_divided = true;         ///< each micro-batch's loss was divided by micro_batches before backward
    int every = 1;                    ///< log every N-th optimizer step
    std::int64_t samples_before = 0;  ///< samples trained before this log began (a resumed run)
    std::string started = "random init";  ///< or "checkpoint"
    std::string data;                 ///< what the loop trains on, in words
  };

  NoiseLog(const std::string& path, const std::vector<torch::Tensor>& parameters, std::int64_t micro_batch, int micro_batches)
      : NoiseLog(path, parameters, micro_batch, micro_batches, Options()) {}

  NoiseLog(const std::string& path, const std::vector<torch::Tensor>& parameters, std::int64_t micro_batch, int micro_batches,
           Options o)
      : b_(micro_batch), k_total_(micro_batches), o_(std::move(o)), samples_(o_.samples_before) {
    for (const auto& p : parameters)
      if (p.requires_grad()) params_.push_back(p);
    if (params_.empty()) throw std::invalid_argument("NoiseLog: the model has no trainable parameters");
    if (k_total_ < 2)
      throw std::invalid_argument("NoiseLog: micro_batches=" + std::to_string(k_total_) +
                                  "; the noise scale needs at least 2 micro-batches per step");
    if (b_ < 1) throw std::invalid_argument("NoiseLog: micro_batch=" + std::to_string(b_) + "; allowed: 1 or more");
    if (o_.every < 1) throw std::invalid_argument("NoiseLog: every=" + std::to_string(o_.every) + "; allowed: 1 or more");
    if (o_.started != "random init" && o_.started != "checkpoint")
      throw std::invalid_argument("NoiseLog: started='" + o_.started + "'; allowed: 'random init', 'checkpoint'");
    file_ = std::fopen(path.c_str(), "wx");  // "x": an existing file is never overwritten
    if (!file_) throw std::runtime_error("NoiseLog: cannot create " + path + " (it exists, or its folder is not writable)");
    std::int64_t elements = 0;
    for (const auto& p : params_) elements += p.numel();
    std::fprintf(file_,
                 "{\"autotune_noise_log\": 1, \"logger\": \"c++\", \"mode\": \"accumulation\", \"micro_batch\": %lld, "
                 "\"micro_batches\": %d, \"parameters\": %lld, \"tensors\": %zu, \"started\": \"%s\", \"data\": \"%s\"}\n",
                 static_cast<long long>(b_), k_total_, static_cast<long long>(elements), params_.size(), escaped(o_.started).c_str(),
                 escaped(o_.data).c_str());
    std::fflush(file_);
  }
  NoiseLog(const NoiseLog&) = delete;
  NoiseLog& operator=(const NoiseLog&) = delete;
  ~NoiseLog() { close(); }

  /// After each micro-batch's backward: this micro-batch's gradient is what the accumulated one grew by.
  void micro_batch_done() {
    if (k_ >= k_total_)
      throw std::logic_error("NoiseLog: micro_batch_done() called more than micro_batches=" + std::to_string(k_total_) +
                             " times in one step");
    if (logging()) {
      torch::NoGradGuard no_grad;
      const auto g = grads();
      const double scale = o_.loss_divided ? k_total_ : 1;
      double sq = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        const auto d = k_ == 0 ? g[i] : g[i] - prev_[i];  // zero_grad before the first micro-batch
        sq += d.to(torch::kDouble).pow(2).sum().item<double>();
      }
      small_ += sq * scale * scale;
      if (prev_.empty())
        for (const auto& t : g) prev_.push_back(t.detach().clone());
      else
        for (size_t i = 0; i < g.size(); ++i) prev_[i].copy_(g[i]);
    }
    ++k_;
  }

  /// Once per optimizer step, after the last micro-batch's backward and before optimizer.step(). `loss`: NaN for none;
  /// `grad_scale`: a loss scaler's scale (the norms are unscaled by it).
  void step(double loss = std::numeric_limits<double>::quiet_NaN(), double grad_scale = 1.0) {
    if (k_ != k_total_)
      throw std::logic_error("NoiseLog: step() after " + std::to_string(k_) + " micro_batch_done() calls; the log was opened with " +
                             "micro_batches=" + std::to_string(k_total_));
    samples_ += b_ * k_total_;
    if (logging()) {
      double big = 0;
      {
        torch::NoGradGuard no_grad;
        for (const auto& t : grads()) big += t.to(torch::kDouble).pow(2).sum().item<double>();
      }
      if (!o_.loss_divided) big /= static_cast<double>(k_total_) * k_total_;
      const double unscale = 1.0 / (grad_scale * grad_scale);
      const double small = small_ / k_total_ * unscale;
      big *= unscale;
      std::string line = "{\"step\": " + std::to_string(step_ + 1) + ", \"samples\": " + std::to_string(samples_) +
                         ", \"small_sq\": " + number(small) + ", \"big_sq\": " + number(big);
      if (std::isfinite(loss)) line += ", \"loss\": " + number(loss);
      line += "}\n";
      std::fputs(line.c_str(), file_);
      std::fflush(file_);
    }
    ++step_;
    k_ = 0;
    small_ = 0;
  }

  void close() {
    if (file_) std::fclose(file_);
    file_ = nullptr;
  }

 private:
  bool logging() const { return (step_ + 1) % o_.every == 0; }
  std::vector<torch::Tensor> grads() const {
    std::vector<torch::Tensor> g;
    for (const auto& p : params_) g.push_back(p.grad().defined() ? p.grad() : torch::zeros_like(p));
    return g;
  }
  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }
  static std::string escaped(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      out += c;
    }
    return out;
  }

  std::vector<torch::Tensor> params_, prev_;
  std::int64_t b_;
  int k_total_;
  Options o_;
  std::int64_t samples_;
  std::int64_t step_ = 0;
  int k_ = 0;
  double small_ = 0;
  std::FILE* file_ = nullptr;
};

}  // namespace autotune_log
