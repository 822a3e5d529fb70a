#include "knobs/model_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/protocol.h"

namespace autotune {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kDtypes = {"float32", "float16", "bfloat16", "int64"};
const std::vector<std::string> kLosses = {"cross_entropy", "mse", "model"};
const std::vector<std::string> kTargets = {"classes", "regression", "none"};

void require_one_of(const std::string& where, const std::string& field, const std::string& v,
                    const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    throw UsageError(
        fmt::format("{}: {} '{}' is not allowed; allowed: {}{}", where, field, v, join(allowed), did_you_mean(v, allowed)));
}

/// ["B", 3, 224] → {-1, 3, 224}: "B" exactly once, every other dimension ≥ 1.
std::vector<std::int64_t> parse_shape(const json& j, const std::string& where, const std::string& field) {
  if (!j.is_array() || j.empty())
    throw UsageError(fmt::format("{}: {} must be a list of dimensions with \"B\" for the batch", where, field));
  std::vector<std::int64_t> shape;
  for (const auto& d : j) {
    if (d.is_string() && d.get<std::string>() == "B") shape.push_back(-1);
    else if (d.is_number_integer() && d.get<std::int64_t>() >= 1) shape.push_back(d.get<std::int64_t>());
    else throw UsageError(fmt::format("{}: {} has the dimension {}; allowed: \"B\" or an integer ≥ 1", where, field, d.dump()));
  }
  if (shape.front() != -1 || std::count(shape.begin(), shape.end(), -1) != 1)
    throw UsageError(fmt::format("{}: {} must start with \"B\" (the batch dimension), once", where, field));
  return shape;
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + (s[i] < 0 ? std::string("B") : std::to_string(s[i]));
  return t + ")";
}

InputSpec parse_input(const json& j, const std::string& where, size_t i) {
  const std::string f = fmt::format("inputs[{}]", i);
  InputSpec in;
  in.name = j.value("name", fmt::format("input{}", i));
  in.shape = parse_shape(j.value("shape", json()), where, f + ".shape");
  in.dtype = j.value("dtype", std::string("float32"));
  require_one_of(where, f + ".dtype", in.dtype, kDtypes);
  if (in.dtype == "int64") {
    in.vocab = j.value("vocab", std::int64_t{0});
    if (in.vocab < 1) throw UsageError(fmt::format("{}: {} is int64: give its \"vocab\" (ids 0..vocab−1)", where, f));
  } else if (auto r = j.find("range"); r != j.end()) {
    if (!r->is_array() || r->size() != 2 || !(*r)[0].is_number() || !(*r)[1].is_number() ||
        (*r)[0].get<double>() >= (*r)[1].get<double>())
      throw UsageError(fmt::format("{}: {}.range must be [lo, hi] with lo < hi", where, f));
    in.lo = (*r)[0];
    in.hi = (*r)[1];
  }
  return in;
}

TargetSpec parse_target(const json& j, const std::string& where) {
  TargetSpec t;
  t.kind = j.value("kind", std::string("none"));
  require_one_of(where, "target.kind", t.kind, kTargets);
  if (t.kind == "classes") {
    t.classes = j.value("classes", std::int64_t{0});
    if (t.classes < 2) throw UsageError(fmt::format("{}: target.classes must be ≥ 2", where));
    t.shape = j.contains("shape") ? parse_shape(j["shape"], where, "target.shape") : std::vector<std::int64_t>{-1};
  } else if (t.kind == "regression") {
    t.shape = parse_shape(j.value("shape", json()), where, "target.shape");
  }
  return t;
}

void check_complete(const ModelSpec& s, const std::string& where) {
  if (s.inputs.empty()) throw UsageError(fmt::format("{}: the spec has no inputs; give \"inputs\" or --model-input", where));
  if (s.loss != "model" && s.target.kind == "none")
    throw UsageError(fmt::format("{}: loss {} needs a target (classes or regression); or use loss \"model\"", where, s.loss));
  if (s.loss == "cross_entropy" && s.target.kind != "classes")
    throw UsageError(fmt::format("{}: loss cross_entropy needs a target of kind \"classes\"", where));
  if (s.loss == "mse" && s.target.kind != "regression")
    throw UsageError(fmt::format("{}: loss mse needs a target of kind \"regression\"", where));
}

}  // namespace

std::string ModelSpec::text() const {
  std::string s;
  for (const auto& in : inputs)
    s += fmt::format("{}{}: {} {}{}", s.empty() ? "" : ", ", in.name, shape_text(in.shape), in.dtype,
                     in.dtype == "int64" ? fmt::format(" ids < {}", in.vocab) : fmt::format(" in [{:g}, {:g})", in.lo, in.hi));
  if (target.kind == "classes") s += fmt::format("; target: classes 0..{} {}", target.classes - 1, shape_text(target.shape));
  else if (target.kind == "regression") s += fmt::format("; target: regression {}", shape_text(target.shape));
  return s + "; loss " + loss;
}

ModelSpec parse_model_spec(const json& j, const std::string& where) {
  if (!j.is_object()) throw UsageError(fmt::format("{}: a model spec is a JSON object", where));
  static const std::vector<std::string> keys = {"inputs",      "target", "loss",         "flops_per_sample", "default_batch_size",
                                                "description", "python", "python_kwargs", "python_build",
                                                "python_forward", "weights",     "train_mode"};
  for (const auto& [k, v] : j.items()) require_one_of(where, "key", k, keys);
  ModelSpec s;
  if (auto in = j.find("inputs"); in != j.end()) {
    if (!in->is_array()) throw UsageError(fmt::format("{}: inputs must be a list", where));
    for (size_t i = 0; i < in->size(); ++i) s.inputs.push_back(parse_input((*in)[i], where, i));
  }
  if (auto t = j.find("target"); t != j.end()) s.target = parse_target(*t, where);
  s.loss = j.value("loss", s.loss);
  require_one_of(where, "loss", s.loss, kLosses);
  s.flops_per_sample = j.value("flops_per_sample", 0.0);
  s.default_batch_size = j.value("default_batch_size", s.default_batch_size);
  if (s.default_batch_size < 1) throw UsageError(fmt::format("{}: default_batch_size must be ≥ 1", where));
  s.description = j.value("description", std::string());
  if (auto p = j.find("python"); p != j.end()) {
    if (!p->is_string() || p->get<std::string>().find(':') == std::string::npos)
      throw UsageError(fmt::format("{}: python must be \"module:factory\" or \"file.py:Class\"", where));
    s.python = p->get<std::string>();
  }
  if (auto k = j.find("python_kwargs"); k != j.end()) {
    if (!k->is_object()) throw UsageError(fmt::format("{}: python_kwargs must be a JSON object", where));
    for (const auto& [name, v] : k->items()) {
      // JSON literals as Python literals (true → True, null → None); strings and numbers read the same.
      const std::string lit = v.is_boolean() ? (v.get<bool>() ? "True" : "False") : v.is_null() ? "None" : v.dump();
      s.python_kwargs += (s.python_kwargs.empty() ? "" : ", ") + name + "=" + lit;
    }
  }
  if (auto b = j.find("python_build"); b != j.end()) {
    if (!b->is_array()) throw UsageError(fmt::format("{}: python_build must be a list of Python lines", where));
    for (const auto& line : *b) {
      if (!line.is_string()) throw UsageError(fmt::format("{}: python_build must be a list of Python lines", where));
      s.python_build += (s.python_build.empty() ? "" : "\n") + line.get<std::string>();
    }
  }
  if (auto f = j.find("python_forward"); f != j.end()) {
    if (!f->is_string()) throw UsageError(fmt::format("{}: python_forward must be a Python expression of x (and y)", where));
    s.python_forward = f->get<std::string>();
  }
  if (auto w = j.find("weights"); w != j.end()) {
    if (!w->is_string() || (*w != "random" && *w != "given"))
      throw UsageError(fmt::format("{}: weights must be \"random\" or \"given\"", where));
    s.weights = w->get<std::string>();
  }
  if (auto t = j.find("train_mode"); t != j.end()) {
    if (!t->is_string()) throw UsageError(fmt::format("{}: train_mode must be a sentence", where));
    s.train_mode = t->get<std::string>();
  }
  return s;
}

namespace {

/// "a:b:c" → {"a", "b", "c"}.
std::vector<std::string> fields_of(const std::string& text, char sep) {
  std::vector<std::string> f;
  for (size_t a = 0, b; a <= text.size(); a = b + 1) {
    b = std::min(text.find(sep, a), text.size());
    f.push_back(text.substr(a, b - a));
  }
  return f;
}

/// A number in a flag, or a usage error naming the flag.
double number(const std::string& text, const std::string& where) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("{}: '{}' is not a number", where, text));
}

}  // namespace

std::vector<InputSpec> parse_input_flag(const std::string& text) {
  std::vector<InputSpec> out;
  for (const std::string& one : fields_of(text, ';')) {
    const std::string where = "--model-input '" + one + "'";
    const auto f = fields_of(one, ':');
    if (f.size() < 2 || f.size() > 3)
      throw UsageError(where + ": allowed forms: B,3,224,224:float32[:LO..HI] or B,128:int64:VOCAB");
    json j = {{"name", fmt::format("input{}", out.size())}, {"shape", json::array()}, {"dtype", f[1]}};
    for (const auto& d : split_list(f[0], where))
      j["shape"].push_back(d == "B" ? json("B") : json(static_cast<std::int64_t>(number(d, where))));
    if (f[1] == "int64") {
      if (f.size() != 3) throw UsageError(where + ": an int64 input takes its vocabulary: B,128:int64:VOCAB");
      j["vocab"] = static_cast<std::int64_t>(number(f[2], where));
    } else if (f.size() == 3) {
      const auto dots = f[2].find("..");
      if (dots == std::string::npos) throw UsageError(where + ": a float range is LO..HI");
      j["range"] = {number(f[2].substr(0, dots), where), number(f[2].substr(dots + 2), where)};
    }
    out.push_back(parse_input(j, where, out.size()));
  }
  return out;
}

TargetSpec parse_target_flag(const std::string& text) {
  const std::string where = "--model-target '" + text + "'";
  const auto f = fields_of(text, ':');
  json j = {{"kind", f[0]}};
  auto shape = [&](const std::string& dims) {
    json s = json::array();
    for (const auto& d : split_list(dims, where))
      s.push_back(d == "B" ? json("B") : json(static_cast<std::int64_t>(number(d, where))));
    return s;
  };
  const bool ok = (f[0] == "classes" && (f.size() == 2 || f.size() == 3)) || (f[0] == "regression" && f.size() == 2) ||
                  (f[0] == "none" && f.size() == 1);
  if (!ok) throw UsageError(where + ": allowed forms: classes:N, classes:N:B,T, regression:B,D, none");
  if (f[0] == "classes") {
    j["classes"] = static_cast<std::int64_t>(number(f[1], where));
    if (f.size() == 3) j["shape"] = shape(f[2]);
  } else if (f[0] == "regression") {
    j["shape"] = shape(f[1]);
  }
  return parse_target(j, where);
}

ModelSpec load_model_spec(const TrialSetup& setup) {
  const fs::path model(setup.model);
  const std::string file = !setup.model_spec.empty() ? setup.model_spec : fs::path(model).replace_extension(".json").string();
  ModelSpec s;
  std::string where = "--model-* flags";
  if (fs::exists(file)) {
    json j;
    try {
      j = json::parse(read_file(file));
    } catch (const json::exception& e) {
      throw UsageError(fmt::format("{}: not valid JSON: {}", file, e.what()));
    }
    s = parse_model_spec(j, file);
    where = file;
  } else if (!setup.model_spec.empty()) {
    throw UsageError(fmt::format("--model-spec {}: no such file", file));
  } else if (setup.model_input.empty()) {
    throw UsageError(
        fmt::format("--model {}: no batch spec: write {} (see docs/models.md) or give --model-input, --model-target and "
                    "--model-loss",
                    setup.model, file));
  }
  if (!setup.model_input.empty()) s.inputs = parse_input_flag(setup.model_input);
  if (!setup.model_target.empty()) s.target = parse_target_flag(setup.model_target);
  if (!setup.model_loss.empty()) s.loss = setup.model_loss;
  if (setup.model_flops > 0) s.flops_per_sample = setup.model_flops;
  check_complete(s, where);
  return s;
}

std::string task_of(const std::string& model) { return model.rfind("task:", 0) == 0 ? model.substr(5) : ""; }

bool is_python_model(const std::string& model) {
  if (model.rfind("hf:", 0) == 0 || !task_of(model).empty()) return true;
  const auto colon = model.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == model.size()) return false;
  std::error_code ec;
  return !fs::exists(model, ec);  // a file whose name holds a ':' is still a file
}

std::string trainer_of(const TrialSetup& setup) {
  if (!setup.trainer.empty()) return setup.trainer;
  return is_python_model(setup.model) ? "python" : "cpp";
}

std::string absolute_model(const std::string& model) {
  auto abs = [](const std::string& p) { return fs::absolute(p).lexically_normal().string(); };
  if (model.empty()) return model;
  if (!is_python_model(model)) return abs(model);
  if (const std::string t = task_of(model); !t.empty()) {  // a task file (absolute) or a task module (kept)
    return t.size() > 3 && t.compare(t.size() - 3, 3, ".py") == 0 ? "task:" + abs(t) : model;
  }
  if (model.rfind("hf:", 0) == 0) {  // a folder holding a config.json, or a model type
    std::error_code ec;
    return fs::is_directory(model.substr(3), ec) ? "hf:" + abs(model.substr(3)) : model;
  }
  const auto colon = model.rfind(':');
  const std::string where = model.substr(0, colon);
  return where.size() > 3 && where.compare(where.size() - 3, 3, ".py") == 0 ? abs(where) + model.substr(colon) : model;
}

}  // namespace autotune
