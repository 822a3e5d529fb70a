#include "knobs/model_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "knobs/error.h"

namespace autotune {
namespace {

using nlohmann::json;

std::string error_of(const json& j) {
  try {
    parse_model_spec(j, "m.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelSpec, AFullSpecReadsBackAsItsWords) {
  const ModelSpec s = parse_model_spec(json::parse(R"({
    "inputs": [{"name": "idx", "shape": ["B", 16], "dtype": "int64", "vocab": 64},
               {"name": "mask", "shape": ["B", 16], "dtype": "float32", "range": [0, 1]}],
    "target": {"kind": "classes", "classes": 64, "shape": ["B", 16]},
    "loss": "model", "flops_per_sample": 1.5e6, "default_batch_size": 8,
    "python": "net.py:TinyGPT", "python_kwargs": {"n_layer": 2, "bias": false, "dropout": null, "name": "t"}})"),
                                       "m.json");
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].shape, (std::vector<std::int64_t>{-1, 16}));
  EXPECT_EQ(s.inputs[0].vocab, 64);
  EXPECT_EQ(s.inputs[1].hi, 1);
  EXPECT_EQ(s.target.shape, (std::vector<std::int64_t>{-1, 16}));
  EXPECT_EQ(s.default_batch_size, 8);
  EXPECT_EQ(s.python, "net.py:TinyGPT");
  // JSON literals become Python's (keys in JSON object order: nlohmann sorts them).
  EXPECT_EQ(s.python_kwargs, "bias=False, dropout=None, n_layer=2, name=\"t\"");
  EXPECT_EQ(s.text(), "idx: (B, 16) int64 ids < 64, mask: (B, 16) float32 in [0, 1); target: classes 0..63 (B, 16); loss model");
}

TEST(ModelSpec, EachBadFieldIsOneLineNamingWhatIsAllowed) {
  const json x =
      json::parse(R"({"inputs": [{"shape": ["B", 4]}], "target": {"kind": "regression", "shape": ["B", 4]}, "loss": "mse"})");
  EXPECT_EQ(error_of(x), "");
  auto with = [&](const char* key, json v) {
    json j = x;
    j[key] = std::move(v);
    return error_of(j);
  };
  EXPECT_NE(with("loss", "l1").find("m.json: loss 'l1' is not allowed; allowed: cross_entropy, mse, model"), std::string::npos)
      << with("loss", "l1");
  EXPECT_NE(with("lr", 0.1).find("key 'lr' is not allowed"), std::string::npos);
  EXPECT_NE(with("python", "torchvision.models.resnet18").find("python must be \"module:factory\""), std::string::npos);
  EXPECT_NE(with("python_kwargs", json::array({1})).find("python_kwargs must be a JSON object"), std::string::npos);
  EXPECT_NE(with("default_batch_size", 0).find("default_batch_size must be ≥ 1"), std::string::npos);
  for (const std::string& e : {with("loss", "l1"), with("lr", 0.1), with("python", 3)})
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(ModelSpec, WeightsAndTrainingModeReadBackAndAreChecked) {
  const ModelSpec s = parse_model_spec(
      json::parse(R"({"inputs": [{"name": "x", "shape": ["B", 4], "dtype": "float32"}], "target": {"kind": "classes", "classes": 3},
                      "weights": "random", "train_mode": "training mode: dropout in 2 layers (p 0.1) live"})"),
      "m.json");
  EXPECT_EQ(s.weights, "random");
  EXPECT_EQ(s.train_mode, "training mode: dropout in 2 layers (p 0.1) live");
  EXPECT_NE(error_of(json::parse(R"({"weights": "pretrained"})")).find("weights must be \"random\" or \"given\""), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"train_mode": 1})")).find("train_mode must be a sentence"), std::string::npos);
}

TEST(ModelSpec, TheFlagFormsParse) {
  const auto in = parse_input_flag("B,3,32,32:float32:0..1;B,7:int64:100");
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].shape, (std::vector<std::int64_t>{-1, 3, 32, 32}));
  EXPECT_EQ(in[0].lo, 0);
  EXPECT_EQ(in[0].hi, 1);
  EXPECT_EQ(in[1].vocab, 100);
  EXPECT_EQ(parse_target_flag("classes:512:B,128").shape, (std::vector<std::int64_t>{-1, 128}));
  EXPECT_EQ(parse_target_flag("regression:B,10").kind, "regression");
  EXPECT_THROW(parse_input_flag("3,B,32"), UsageError);
  EXPECT_THROW(parse_target_flag("labels:10"), UsageError);
}

}  // namespace
}  // namespace autotune
