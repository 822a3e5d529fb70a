#include "workloads/input/pipeline.h"

#include <fmt/format.h>

#include <filesystem>

#include "knobs/error.h"
#include "data/cache_file.h"

namespace autotune {

DataOptions DataOptions::images(const BuildOptions& o, std::int64_t image_size) {
  DataOptions d;
  d.data = o.setup.data;
  d.cache = o.setup.data_cache;
  d.decode = o.settings.decode;
  d.num_workers = o.settings.num_workers;
  d.prefetch = o.settings.prefetch;
  d.batch_size = o.settings.batch_size;
  d.image_size = image_size;
  d.seed = o.setup.data_seed();
  d.max_bad_share = o.setup.max_bad_share;
  d.augment_on_device = o.settings.augment_device == "gpu";
  d.rank = o.rank;
  d.world = o.world;
  return d;
}

DataOptions DataOptions::tokens(const BuildOptions& o) {
  DataOptions d = images(o, 0);
  d.cache = "";
  d.decode = "tokens";
  d.augment_on_device = false;
  return d;
}

namespace {

constexpr float kMean[3] = {0.485f * 255, 0.456f * 255, 0.406f * 255};
constexpr float kInvStd[3] = {1 / (0.229f * 255), 1 / (0.224f * 255), 1 / (0.225f * 255)};

/// Batch k covers positions k·B … k·B + B − 1 of the endless epoch sequence (with W ranks, rank r's
/// batch k covers k·W·B + r·B …: each epoch's order is split into disjoint slices, one per rank): calls
/// f(epoch, first position in that epoch, offset in the batch, count) for each run within one epoch.
template <typename F>
void for_each_run(std::uint64_t k, std::int64_t b, std::size_t n, int rank, int world, F&& f) {
  const std::uint64_t base = (k * static_cast<std::uint64_t>(world) + static_cast<std::uint64_t>(rank)) * static_cast<std::uint64_t>(b);
  for (std::int64_t i = 0; i < b;) {
    const std::uint64_t pos = base + static_cast<std::uint64_t>(i);
    const std::uint64_t epoch = pos / n, first = pos % n;
    const int take = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(b - i), n - first));
    f(epoch, first, i, take);
    i += take;
  }
}

/// What every pipeline reports of its loader: threads, prefetch depth, batches delivered, the training
/// thread's wait and the workers' busy time.
DataStats loader_stats(const data::BatchLoader& loader, int prefetch) {
  DataStats d;
  d.num_workers = loader.num_workers();
  d.prefetch = prefetch;
  d.batches = static_cast<std::int64_t>(loader.delivered());
  d.wait_seconds = loader.wait_seconds();
  d.worker_busy_seconds = loader.busy_seconds();
  return d;
}

}  // namespace

ImagePipeline::ImagePipeline(const DataOptions& o) : opts_(o) {
  const data::DecodeMode mode = data::decode_mode_from_string(o.decode);
  if (mode == data::DecodeMode::cache) {
    if (o.cache.empty()) throw UsageError("decode=cache needs a cache file (--cache FILE from autotune prepare-data)");
    source_ = data::make_cache_source(o.cache);
  } else {
    source_ = data::make_folder_source(data::ImageFolder::scan(o.data), mode);
  }
  const std::int64_t b = o.batch_size, s = o.image_size;
  const std::size_t n = source_->size();
  if (o.augment_on_device) {
    if (source_->raw_side() <= 0)
      throw UsageError(
          "augment_device=gpu needs decode=cache: the GPU crops the cache's fixed-size images (JPEG files differ in size)");
    const std::size_t per = static_cast<std::size_t>(source_->raw_side()) * source_->raw_side() * 3;
    loader_ =
        std::make_unique<data::BatchLoader>(o.num_workers, o.prefetch, [this, b, n, per](std::uint64_t k, data::BatchSlot& slot) {
          slot.bytes.resize(per * static_cast<std::size_t>(b));
          slot.ints.resize(static_cast<std::size_t>(b));
          slot.floats.resize(static_cast<std::size_t>(5 * b));
          for_each_run(k, b, n, opts_.rank, opts_.world, [&](std::uint64_t epoch, std::uint64_t first, std::int64_t i, int take) {
            data::fill_raw_batch(*source_, *order(epoch), opts_.seed, epoch, first, take, slot.bytes.data() + per * i,
                                 slot.ints.data() + i, slot.floats.data() + 5 * i, bad_);
          });
        });
    return;
  }
  loader_ =
      std::make_unique<data::BatchLoader>(o.num_workers, o.prefetch, [this, b, s, n](std::uint64_t k, data::BatchSlot& slot) {
        const std::size_t per = static_cast<std::size_t>(s) * s * 3;
        thread_local std::vector<std::uint8_t> u8;
        u8.resize(per * static_cast<std::size_t>(b));
        slot.ints.resize(static_cast<std::size_t>(b));
        for_each_run(k, b, n, opts_.rank, opts_.world, [&](std::uint64_t epoch, std::uint64_t first, std::int64_t i, int take) {
          data::fill_image_batch(*source_, *order(epoch), opts_.seed, epoch, first, take, static_cast<int>(s),
                                 u8.data() + per * i, slot.ints.data() + i, bad_);
        });
        // uint8 NHWC → float32 NCHW, normalised, in the worker.
        slot.bytes.resize(per * static_cast<std::size_t>(b) * sizeof(float));
        float* out = reinterpret_cast<float*>(slot.bytes.data());
        const std::size_t plane = static_cast<std::size_t>(s) * s;
        for (std::int64_t im = 0; im < b; ++im) {
          const std::uint8_t* src = u8.data() + per * im;
          float* dst = out + per * im;
          for (std::size_t p = 0; p < plane; ++p)
            for (int c = 0; c < 3; ++c) dst[c * plane + p] = (static_cast<float>(src[3 * p + c]) - kMean[c]) * kInvStd[c];
        }
      });
}

std::shared_ptr<const std::vector<std::uint32_t>> ImagePipeline::order(std::uint64_t epoch) {
  std::lock_guard<std::mutex> l(order_mu_);
  auto it = orders_.find(epoch);
  if (it != orders_.end()) return it->second;
  auto o = std::make_shared<const std::vector<std::uint32_t>>(data::epoch_order(source_->size(), opts_.seed, epoch));
  orders_[epoch] = o;
  while (orders_.size() > 4) orders_.erase(orders_.begin());  // workers are at most a few epochs apart
  return o;
}

Batch ImagePipeline::next() {
  const data::BatchSlot& slot = loader_->next();
  const std::int64_t b = opts_.batch_size, s = opts_.image_size;
  // The slot is reused by the loader: the batch leaves it as its own tensors.
  Batch out;
  out.target = torch::from_blob(const_cast<std::int64_t*>(slot.ints.data()), {b}, torch::kInt64).clone();
  if (opts_.augment_on_device) {
    const std::int64_t r = source_->raw_side();
    out.input = torch::from_blob(const_cast<std::uint8_t*>(slot.bytes.data()), {b, r, r, 3}, torch::kUInt8).clone();
    out.crops = torch::from_blob(const_cast<float*>(slot.floats.data()), {b, 5}, torch::kFloat32).clone();
  } else {
    out.input = torch::from_blob(const_cast<std::uint8_t*>(slot.bytes.data()), {b, 3, s, s}, torch::kFloat32).clone();
  }
  return out;
}

torch::Tensor augment_on_device(const torch::Tensor& u8_nhwc, const torch::Tensor& crops, std::int64_t out_size) {
  TORCH_CHECK(u8_nhwc.dim() == 4 && u8_nhwc.size(3) == 3 && u8_nhwc.scalar_type() == torch::kUInt8,
              "augment_on_device: images must be uint8 (B, H, W, 3)");
  TORCH_CHECK(crops.dim() == 2 && crops.size(0) == u8_nhwc.size(0) && crops.size(1) == 5,
              "augment_on_device: crops must be (B, 5)");
  torch::NoGradGuard no_grad;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(u8_nhwc.device());
  const std::int64_t B = u8_nhwc.size(0);
  const double H = static_cast<double>(u8_nhwc.size(1)), W = static_cast<double>(u8_nhwc.size(2));
  const auto x = u8_nhwc.permute({0, 3, 1, 2}).to(torch::kFloat32);  // (B, 3, H, W), 0..255
  const auto c = crops.to(opts);
  const auto cx = c.select(1, 0) + 0.5 * c.select(1, 2), cy = c.select(1, 1) + 0.5 * c.select(1, 3);
  // affine_grid maps output coordinates in [-1, 1] to input ones: scale w/W (negated for a flip),
  // centre 2·cx/W − 1; with align_corners=false that is exactly the pixel-centre mapping above.
  const auto sx = c.select(1, 2) / W * (1 - 2 * c.select(1, 4)), sy = c.select(1, 3) / H;
  const auto zero = torch::zeros({B}, opts);
  const auto theta = torch::stack({torch::stack({sx, zero, 2 * cx / W - 1}, 1), torch::stack({zero, sy, 2 * cy / H - 1}, 1)}, 1);
  const auto grid = torch::nn::functional::affine_grid(theta, {B, 3, out_size, out_size}, /*align_corners=*/false);
  auto y = torch::nn::functional::grid_sample(x, grid,
                                              torch::nn::functional::GridSampleFuncOptions()
                                                  .mode(torch::kBilinear)
                                                  .padding_mode(torch::kBorder)
                                                  .align_corners(false));
  // Per-channel scalars (a small constant tensor would be a host-to-device copy on every call).
  for (int ch = 0; ch < 3; ++ch) y.select(1, ch).sub_(kMean[ch]).mul_(kInvStd[ch]);
  return y;
}

DataStats ImagePipeline::stats() const {
  DataStats d = loader_stats(*loader_, opts_.prefetch);
  d.source = opts_.decode == "cache" ? opts_.cache : opts_.data;
  d.decode = opts_.decode;
  d.dataset_size = static_cast<std::int64_t>(source_->size());
  d.images_ok = bad_.ok();
  d.images_bad = bad_.bad();
  for (const auto& [k, v] : bad_.by_reason()) d.bad_by_reason.emplace_back(k, v);
  const auto ex = bad_.examples();
  if (!ex.empty()) d.bad_example = ex.front();
  return d;
}

TokenPipeline::TokenPipeline(const DataOptions& o, int block_size, std::int64_t vocab_size) : opts_(o), t_(block_size) {
  file_ = std::make_unique<data::TokenFile>(o.data, static_cast<std::size_t>(block_size) + 2);
  const auto mx = file_->max_token();
  if (mx >= vocab_size)
    throw std::runtime_error(
        fmt::format("token file {}: token id {} is outside the model's vocabulary of {}", o.data, mx, vocab_size));
  const std::int64_t b = o.batch_size;
  loader_ = std::make_unique<data::BatchLoader>(o.num_workers, o.prefetch, [this, b](std::uint64_t k, data::BatchSlot& slot) {
    slot.ints.resize(static_cast<std::size_t>(2 * b * t_));
    // Keyed by the sample's position in the endless stream (batch k of rank r starts at (k·W + r)·b), not
    // by (batch, index): the same samples in the same order at any batch size, grad_accum or rank count,
    // so two trials at different batch sizes train on the same data (autotune converge).
    const std::uint64_t first = (k * static_cast<std::uint64_t>(opts_.world) + static_cast<std::uint64_t>(opts_.rank)) *
                                static_cast<std::uint64_t>(b);
    file_->fill_batch(opts_.seed, 0, static_cast<int>(b), t_, slot.ints.data(), slot.ints.data() + b * t_, first);
  });
}

std::pair<torch::Tensor, torch::Tensor> TokenPipeline::next() {
  const data::BatchSlot& slot = loader_->next();
  const std::int64_t b = opts_.batch_size;
  auto all = torch::from_blob(const_cast<std::int64_t*>(slot.ints.data()), {2, b, t_}, torch::kInt64).clone();
  return {all[0], all[1]};
}

DataStats TokenPipeline::stats() const {
  DataStats d = loader_stats(*loader_, opts_.prefetch);
  d.source = opts_.data;
  d.decode = "tokens";
  d.dataset_size = static_cast<std::int64_t>(file_->size());
  return d;
}

void check_data(const TrialSetup& setup, const WorkloadInfo& info) {
  try {
    // A file where a folder belongs (or the reverse) is the tuner's to name (tuner/options/tune_options.cpp).
    std::error_code ec;
    if (!setup.data.empty() && info.token_vocab > 0 && std::filesystem::is_regular_file(setup.data, ec)) {
      const data::TokenFile f(setup.data, static_cast<std::size_t>(info.block_size) + 2);
      if (const auto mx = f.max_token(); mx >= info.token_vocab)
        throw std::runtime_error(fmt::format("token file {}: token id {} is outside the model's vocabulary of {}", setup.data,
                                             mx, info.token_vocab));
    } else if (info.image_data) {
      if (!setup.data_cache.empty()) (void)data::CacheFile(setup.data_cache);  // the header, checked against the file
      if (setup.data_cache.empty() && std::filesystem::is_directory(setup.data, ec)) (void)data::ImageFolder::scan(setup.data);
    }
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

}  // namespace autotune
