#pragma once
// The trial setup: everything a trial needs besides its knob config — the workload, the device, the
// seed, the data and how to measure. One struct, one table of settings. The CLI flags of `autotune
// tune|trial|profile`, plan.json, the journal's stored options and the worker's build all read this
// table, so a new setting is one member and one `visit` line here (docs/design.md, "Adding a setting").
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace autotune {

/// An inclusive range of numbers.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool contains(double v) const { return v >= lo && v <= hi; }
  bool bounded() const { return lo > -std::numeric_limits<double>::infinity() || hi < std::numeric_limits<double>::infinity(); }
};

/// How one setting is named and checked where it crosses a boundary. Built in the table below with
/// chained setters: SettingSpec("windows", "--windows", "help").group_in("measure").user_range(3, 1000).
struct SettingSpec {
  std::string key;                   ///< JSON key in plan.json and the journal ("windows")
  std::string flag;                  ///< CLI option(s) of tune/trial/profile ("--windows"); "" = no flag
  std::string help;                  ///< the flag's help line
  std::string group;                 ///< JSON object it sits in ("measure"), "" = top level
  Range allowed;                     ///< what a user may give on the command line (both ends finite, or unbounded)
  Range valid;                       ///< what plan.json and the journal may hold (wider: tests, halving)
  std::vector<std::string> choices;  ///< the allowed strings; empty = any
  bool path = false;                 ///< a file or folder: made absolute (the worker runs in its trial folder)
  bool omit_default = false;         ///< left out of JSON at its default (keeps plan.json short)
  bool size = false;                 ///< a size in bytes as users write it ("2G"; knobs/memory.h parse_size), "" = none

  explicit SettingSpec(std::string key_, std::string flag_ = "", std::string help_ = "")
      : key(std::move(key_)), flag(std::move(flag_)), help(std::move(help_)) {}
  SettingSpec& group_in(std::string g) {
    group = std::move(g);
    return *this;
  }
  /// The user's range; also the plan's unless plan_range() widens it.
  SettingSpec& user_range(double lo, double hi) {
    allowed = valid = {lo, hi};
    return *this;
  }
  SettingSpec& plan_range(double lo, double hi) {
    valid = {lo, hi};
    return *this;
  }
  SettingSpec& one_of(std::vector<std::string> c) {
    choices = std::move(c);
    return *this;
  }
  SettingSpec& is_path() {
    path = true;
    return *this;
  }
  SettingSpec& omitted_at_default() {
    omit_default = true;
    return *this;
  }
  SettingSpec& is_size() {
    size = true;
    return *this;
  }
};

/// How a worker measures. Defaults are the tuner's defaults for a quick CPU run.
struct MeasureOptions {
  int warmup_min_steps = 5;         ///< always run at least this many warm-up steps
  int warmup_max_steps = 500;       ///< give up waiting for the step time to settle after this many
  double warmup_min_seconds = 0.3;  ///< and at least this long
  double settle_tolerance = 0.10;   ///< settled: last two warm-up blocks' step times within 10%
  int windows = 3;                  ///< measured windows (≥ 3 for a spread)
  double window_min_seconds = 1.0;  ///< a window lasts at least this long (docs/design.md: ≥ 1 s) …
  int window_min_steps = 5;         ///< … and at least this many steps
};

/// Everything a trial needs besides the knob config (plan.json's top-level fields and `measure`).
struct TrialSetup {
  std::string workload = "mlp";
  std::string device = "auto";  ///< auto | cpu | cuda
  std::uint64_t seed = 0;
  std::int64_t image_size = 0;  ///< image workloads: input side in pixels, 0 = the workload's default
  std::string data;             ///< "" = synthetic; an image folder (ImageNet layout) or a uint16 token .bin
  std::string data_cache;       ///< image workloads: a cache file from `autotune prepare-data` (decode=cache)
  double max_bad_share = 0.01;  ///< fail the trial when more of the images met are bad
  MeasureOptions measure;
  // The user's own model instead of a built-in workload (knobs/model_spec.h).
  std::string model;         ///< a TorchScript file; "" = the built-in `workload`
  std::string model_spec;    ///< its batch spec (JSON); "" = MODEL.json beside MODEL.pt
  std::string model_input;   ///< spec override: "B,3,224,224:float32" (';' between inputs)
  std::string model_target;  ///< spec override: "classes:1000", "regression:B,10", "none"
  std::string model_loss;    ///< spec override: cross_entropy | mse | model
  double model_flops = 0;    ///< spec override: training FLOPs per sample (0: the spec's, else counted)
  // A Python model (`module:factory`, `file.py:Class`, `hf:MODEL_TYPE`), built by the Python worker (pyworker/).
  std::string model_kwargs;    ///< its factory's (or config's) keyword arguments, a JSON object
  std::string model_task;      ///< hf: models: causal-lm | sequence-classification | image-classification
  std::int64_t model_seq = 0;  ///< hf: text models: tokens per sample (0 = 128)
  std::string model_output;    ///< a forward returning several outputs: the one trained on (a key or an index)
  /// Which worker trains: "cpp" (LibTorch: built-in workloads, TorchScript files, plugins) or "python" (a Python
  /// model, trained as it is); "" = by the model (`trainer_of`).
  std::string trainer;
  std::string plugin;        ///< a shared library adding workloads (workloads/plugin.h); --workload names one
  double dist_timeout_seconds = 300;  ///< ranks > 1: rendezvous and collective timeout (c10d's, per operation)
  double lr = 0;                      ///< AdamW's learning rate; 0 = PyTorch's default (1e-3)
  /// A task's own optimizer(): its learning rates × this (converge at a changed batch; knobs/worker_info.h trained_lr);
  /// 0 = as the task builds it.
  double lr_scale = 0;
  /// AdamW's β1, β2 and ε; 0 = PyTorch's defaults (0.9, 0.999, 1e-8). `autotune converge --adam-rule sde` moves them
  /// with the batch (docs/time-to-train.md, "Adam at another batch").
  double adam_beta1 = 0, adam_beta2 = 0, adam_eps = 0;
  std::int64_t data_order = 0;        ///< another order of the same data (the weights keep `seed`): 0 = the seed's own
  std::string init_from;              ///< start from these weights (a checkpoint of `autotune converge --save`); "" = `seed`'s init
  std::string memory_cap;             ///< "" = the device as it is; else a size ("2G"): the memory a trial may use (knobs/memory.h)
  /// Whose defaults a knob the config leaves unset takes: "python" or "libtorch" = PyTorch 2.11's for that frontend
  /// (Knob::pytorch_default), "" = the catalog's first values (plans and journals from before: they keep what they ran).
  std::string defaults_of;

  /// The seed of the data's order (which sample when, crops and flips): `seed` itself for data_order 0,
  /// so runs from before the setting existed draw what they drew.
  std::uint64_t data_seed() const { return data_order == 0 ? seed : seed + 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(data_order); }
  /// The learning rate trials train with (lr, or AdamW's default).
  double learning_rate() const { return lr > 0 ? lr : 1e-3; }
  double beta1() const { return adam_beta1 > 0 ? adam_beta1 : 0.9; }
  double beta2() const { return adam_beta2 > 0 ? adam_beta2 : 0.999; }
  double eps() const { return adam_eps > 0 ? adam_eps : 1e-8; }

  /// Calls `v(spec, field...)` for every setting, in CLI order, with the same member of each of
  /// `setups` (so a visitor can compare a setup with the defaults). The one table of settings.
  template <class V, class... S>
  static void visit(V&& v, S&... setups);
};

template <class V, class... S>
void TrialSetup::visit(V&& v, S&... s) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  using Spec = SettingSpec;
  v(Spec("workload", "--workload,-w", "workload to train (see `autotune workloads`)"), s.workload...);
  v(Spec("device", "--device", "auto | cpu | cuda").one_of({"auto", "cpu", "cuda"}), s.device...);
  v(Spec("seed", "--seed", "seed for weights and data"), s.seed...);
  v(Spec("image_size", "--image-size", "image workloads: input side in pixels (default: the workload's, 224)")
        .user_range(32, 4096)
        .plan_range(0, 4096),  // 0 = the workload's default
    s.image_size...);
  v(Spec("windows", "--windows", "measured windows per trial (≥ 3)").group_in("measure").user_range(3, 1000).plan_range(1, 1000),
    s.measure.windows...);
  v(Spec("window_min_seconds", "--window-seconds", "minimum length of a window")
        .group_in("measure")
        .user_range(0.05, 600)
        .plan_range(0, inf),
    s.measure.window_min_seconds...);
  v(Spec("warmup_min_seconds", "--warmup-seconds",
         "minimum warm-up before the windows (it also runs until the step time settles)")
        .group_in("measure")
        .user_range(0, 3600)
        .plan_range(0, inf),
    s.measure.warmup_min_seconds...);
  v(Spec("warmup_min_steps").group_in("measure").plan_range(0, inf), s.measure.warmup_min_steps...);
  v(Spec("warmup_max_steps").group_in("measure").plan_range(1, inf), s.measure.warmup_max_steps...);
  v(Spec("settle_tolerance").group_in("measure").plan_range(0, inf), s.measure.settle_tolerance...);
  v(Spec("window_min_steps").group_in("measure").plan_range(1, inf), s.measure.window_min_steps...);
  v(Spec("data", "--data", "real data: an image folder (resnet; DIR/<class>/<image>.jpg) or a uint16 token .bin (gpt)")
        .is_path()
        .omitted_at_default(),
    s.data...);
  v(Spec("data_cache", "--cache", "image workloads: a pre-decoded cache of --data (autotune prepare-data), for decode=cache")
        .is_path()
        .omitted_at_default(),
    s.data_cache...);
  v(Spec("max_bad_share", "--max-bad-share", "fail a trial when more than this share of images is bad")
        .user_range(0, 1)
        .omitted_at_default(),
    s.max_bad_share...);
  v(Spec("model", "--model",
         "train your own model instead of --workload: a Python factory (file.py:Class or module:factory, trained by the "
         "Python worker), hf:MODEL_TYPE (a Hugging Face model from its config), or a TorchScript file (.pt)")
        .is_path()
        .omitted_at_default(),
    s.model...);
  v(Spec("model_spec", "--model-spec", "the model's batch spec (JSON; default: MODEL.json beside MODEL.pt)")
        .is_path()
        .omitted_at_default(),
    s.model_spec...);
  v(Spec("model_input", "--model-input", "spec override: inputs, e.g. B,3,224,224:float32 or B,128:int64:50257 (';' between)")
        .omitted_at_default(),
    s.model_input...);
  v(Spec("model_target", "--model-target", "spec override: classes:1000, classes:512:B,128, regression:B,10 or none")
        .omitted_at_default(),
    s.model_target...);
  v(Spec("model_loss", "--model-loss", "spec override: cross_entropy | mse | model (forward returns the loss)")
        .one_of({"", "cross_entropy", "mse", "model"})
        .omitted_at_default(),
    s.model_loss...);
  v(Spec("model_flops", "--model-flops", "spec override: training FLOPs per sample (default: counted from the forward's ops)")
        .user_range(0, 1e18)
        .omitted_at_default(),
    s.model_flops...);
  v(Spec("model_kwargs", "--model-kwargs", "a Python model: its factory's or config's keyword arguments (JSON object)")
        .omitted_at_default(),
    s.model_kwargs...);
  v(Spec("model_task", "--model-task", "hf: models: causal-lm, sequence-classification or image-classification")
        .one_of({"", "causal-lm", "sequence-classification", "image-classification"})
        .omitted_at_default(),
    s.model_task...);
  v(Spec("model_seq", "--model-seq", "hf: text models: tokens per sample (default 128)").user_range(0, 1 << 20).omitted_at_default(),
    s.model_seq...);
  v(Spec("model_output", "--model-output",
         "a Python model whose forward returns a dict, ModelOutput or tuple: the tensor trained on (a key or an index; hf: "
         "logits or loss)")
        .omitted_at_default(),
    s.model_output...);
  v(Spec("trainer", "--trainer",
         "which worker trains: python (a Python model as it is; the default for module:factory and hf:) or cpp (LibTorch: "
         "built-in workloads, TorchScript files, plugins; the default otherwise)")
        .one_of({"", "cpp", "python"})
        .omitted_at_default(),
    s.trainer...);
  v(Spec("plugin", "--plugin", "a shared library adding workloads (see examples/plugin); --workload then names one of them")
        .is_path()
        .omitted_at_default(),
    s.plugin...);
  v(Spec("dist_timeout_seconds", "--dist-timeout", "ranks > 1: seconds the rendezvous and each collective may take")
        .user_range(1, 86400)
        .omitted_at_default(),
    s.dist_timeout_seconds...);
  v(Spec("lr", "--lr", "the learning rate your training uses (AdamW; default 1e-3, PyTorch's): the base of the LR advice")
        .user_range(1e-12, 10)
        .plan_range(0, 10)  // 0 = PyTorch's default
        .omitted_at_default(),
    s.lr...);
  v(Spec("lr_scale").plan_range(0, 1e6).omitted_at_default(), s.lr_scale...);
  v(Spec("adam_beta1", "--adam-beta1", "AdamW's β1 (default 0.9, PyTorch's)").user_range(1e-6, 0.999999).plan_range(0, 0.999999).omitted_at_default(),
    s.adam_beta1...);
  v(Spec("adam_beta2", "--adam-beta2", "AdamW's β2 (default 0.999, PyTorch's)").user_range(1e-6, 0.999999).plan_range(0, 0.999999).omitted_at_default(),
    s.adam_beta2...);
  v(Spec("adam_eps", "--adam-eps", "AdamW's ε (default 1e-8, PyTorch's)").user_range(1e-20, 1).plan_range(0, 1).omitted_at_default(),
    s.adam_eps...);
  v(Spec("data_order", "--data-order", "another order of the same data (samples, crops, flips); the weights keep --seed")
        .user_range(0, 1000000)
        .omitted_at_default(),
    s.data_order...);
  v(Spec("init_from", "--init-from", "start from these weights (a checkpoint written by `autotune converge --save`)")
        .is_path()
        .omitted_at_default(),
    s.init_from...);
  v(Spec("memory_cap", "--memory-cap",
         "the device memory a trial may use, e.g. 2G (CPU: a counting allocator that refuses beyond it, emulating a device "
         "of that size; CUDA: the caching allocator's memory fraction); turns the memory model on")
        .is_size()
        .omitted_at_default(),
    s.memory_cap...);
  v(Spec("defaults_of").one_of({"", "python", "libtorch"}).omitted_at_default(), s.defaults_of...);
}

/// Throws UsageError naming the first setting outside its valid range or choices
/// ("device 'tpu' is not allowed; allowed: auto, cpu, cuda").
void validate(const TrialSetup& s);

/// The setup as JSON members of `j` (top level, `measure` nested); settings marked omit_default are
/// left out at their default. `from_json` reads what is present (defaults for the rest), then validates.
void to_json(nlohmann::json& j, const TrialSetup& s);
void from_json(const nlohmann::json& j, TrialSetup& s);

}  // namespace autotune
