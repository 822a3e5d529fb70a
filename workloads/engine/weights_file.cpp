#include "workloads/engine/weights_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "knobs/error.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

std::string shape_text(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

}  // namespace

void save_weights(const NamedTensors& state, const std::string& path) {
  if (fs::exists(path)) throw UsageError(fmt::format("{}: already exists; a weights file is never overwritten (choose another path)", path));
  torch::serialize::OutputArchive archive;
  std::set<std::string> seen;
  for (const auto& [name, t] : state)
    if (seen.insert(name).second) archive.write(name, t.detach().to(torch::kCPU), /*is_buffer=*/true);
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  archive.save_to(tmp);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw std::runtime_error(fmt::format("{}: cannot write the weights: {}", path, ec.message()));
  }
}

void load_weights(NamedTensors& state, const std::string& path) {
  if (!fs::is_regular_file(path)) throw UsageError(fmt::format("--init-from {}: no such file", path));
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error&) {
    throw UsageError(fmt::format("--init-from {}: not a weights file written by autotune (LibTorch cannot read it as an archive; "
                                 "write one with autotune converge --save)",
                                 path));
  }
  std::vector<torch::Tensor> values;
  std::set<std::string> names;
  for (const auto& [name, t] : state) {
    names.insert(name);
    torch::Tensor v;
    if (!archive.try_read(name, v, /*is_buffer=*/true))
      throw UsageError(fmt::format("--init-from {} does not match the model: it has no '{}' (the model has {} tensors); nothing "
                                   "was loaded",
                                   path, name, state.size()));
    if (v.sizes() != t.sizes())
      throw UsageError(fmt::format("--init-from {} does not match the model: '{}' is {} in the file and {} in the model; nothing "
                                   "was loaded",
                                   path, name, shape_text(v), shape_text(t)));
    values.push_back(v);
  }
  for (const auto& key : archive.keys())
    if (!names.count(key))
      throw UsageError(fmt::format("--init-from {} does not match the model: the file has '{}', which the model lacks; nothing "
                                   "was loaded",
                                   path, key));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < state.size(); ++i) state[i].second.copy_(values[i]);
}

}  // namespace autotune
