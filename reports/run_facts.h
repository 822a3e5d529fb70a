#pragma once
// What a run tuned and on what, as sentences every report shares (each format escapes for itself):
// the user's model (file, content hash, batch spec, FLOPs and where they come from) and the real data
// (path, size, what was read and skipped). Built-in workloads on synthetic data have neither.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "knobs/protocol.h"
#include "reports/apply.h"
#include "reports/summary.h"

namespace autotune {

/// "TorchScript model m.pt (sha256 …); batch: x: (B, 3, 32, 32) float32 …; 9.73e+06 FLOP/sample (counted from …)";
/// "" for a built-in workload.
std::string model_sentence(const WorkloadInfo& w);

/// "/data/imgs (image folder, jpeg_crop_scale): 1,024 images; the winner's measured trial read 640, skipped 3 (corrupt 2,
/// truncated 1; e.g. a/b.jpg: corrupt)"; "" for synthetic data.
std::string data_sentence(const DataStats& d);

/// When the winner's speedup over the baseline is not significant at 95% (its CI reaches 1.0× or below):
/// "not significant at 95%: …" with what would narrow it; "" when it is, when there is no speedup, or
/// when the winner is the baseline itself.
std::string speedup_caveat(const RunSummary& s);
/// The first screen's two figures as plain text after their labels ("Winner:", "Speedup over the baseline:"), in the
/// words the console and every report use: the winner with its samples/s (the interleaved confirmation's when it ran,
/// 95% CI, and the search's), and the speedup with its interval, basis and caveat. `code` wraps a config.
struct Headline {
  std::string winner, speedup;
};
Headline headline(const RunSummary& s, const std::function<std::string(const std::string&)>& code);
/// Whether the reports flag the winner's speedup (speedup_caveat is not ""): there is one, the winner is
/// not the baseline, and its 95% interval reaches 1.0×.
bool speedup_not_significant(const RunSummary& s);

/// How the noise and drift limits relate to this host's own noise (NoiseCalibration): "this host's windows
/// varied by a median 5.8% …: noise limit raised from 5% to 12.1% …"; "" when not calibrating or before
/// enough configs were measured.
std::string noise_sentence(const RunSummary& s);

/// What the winner changed from the baseline, each knob with its measured effect (the ablation's or the
/// measured neighbour's ratio): {"precision: fp32 → amp_bf16", "1.82× (95% CI 1.60–2.05×)"}, largest first.
struct Change {
  std::string what, effect;
};
std::vector<Change> winner_changes(const RunSummary& s);
/// How the knob effects were measured, one sentence without its full stop: in the effect rounds (one reference, the
/// same rounds as the baseline) or, in journals from before them, from search and ablation runs.
std::string effects_basis(const RunSummary& s);

/// The time objective (docs/time-to-train.md) in sentences, each "" when it does not apply: answer (a)
/// at the user's batch, answer (b) at another, the noise scale (value, interval, the state it was
/// measured in, what it means), the learning rate to start from, and why a changed batch is not ranked.
/// Markdown-free plain text; `code` wraps a config (each report formats it its own way).
struct TimeFacts {
  std::string answer_a, answer_b, answer_c, noise, lr;  ///< answer_c: reports/ramp_facts.h
  /// The learning rates lr-sweeps measured from the run (RunSummary::lr_measured): (a) and (b) priced at them, and what
  /// stays at the batch rule's rate; "" without a sweep.
  std::string lr_measured;
};
TimeFacts time_facts(const RunSummary& s, const std::function<std::string(const std::string&)>& code);

/// A row label of the time-per-phase table: "winner (batch 64)", or for several ranks "winner (rank 0 of 2, batch 64
/// per rank)": the phases are one rank's host times per 1,000 of its own samples, not the job's.
std::string phase_label(const std::string& who, const ConfigSummary& c);

/// "peak RSS 412 MiB, 1.31× the baseline's 315 MiB" (device peak on a GPU); "" without both measurements.
std::string memory_vs_baseline(const RunSummary& s, const ConfigSummary& c);

/// What torch.compile cost config `i` and how the run priced it (tuner/search/ranking.h, compile_factor), from its measured
/// attempt's record: `present` false for a config without a compile.
struct CompileFacts {
  bool present = false;
  double factor = 1;              ///< its samples/s × this, the compile paid once over the run it is priced over
  std::string priced_over;        ///< "your run (one pass over the data: …)" | "3,600 s of training (…)"
  double break_even_steps = 0;    ///< steps after which it has paid its compile back against the baseline; < 0: never
  std::string sentence;           ///< the whole fact, one sentence (console, report.md, report.html)
};
CompileFacts compile_facts(const RunSummary& s, std::size_t i);

/// The run's name in a report's title: the workload's, or for a user's Python factory the file (or module) and the
/// factory ("odd.py:make", not "make", which names nothing the user would recognise alone).
std::string run_title(const RunSummary& s);

/// The data line every report shows: the real data's sentence, else what the workload trains on (synthetic).
std::string data_line(const RunSummary& s);
/// "Other programs used up to 0.73 of 2 CPUs while 5 of 14 trials were timed …"; "" when no trial was timed on a busy host.
std::string busy_host_line(const RunSummary& s);
/// Why no config can be recommended, when none can (winner −1), as one sentence after "No stable config:" in the console
/// and every report: how many configs were measured and what rejected them, whether the budget left room to measure
/// them again (one trial's length, and the budget a search needs), and whether other programs were using the host.
std::string no_stable_config_line(const RunSummary& s);
/// Whether some measured config is stable (eligible); in a run without a winner, stable but not ranked.
bool any_stable(const RunSummary& s);
/// The label before no_stable_config_line: "No stable config", or "No winner" when some config is stable but none could
/// be ranked (a run without a winner whose table has stable rows must not say that nothing was stable).
std::string no_winner_label(const RunSummary& s);
/// Why stable config `i` is not the answer of a run without one (winner −1): a changed batch with no usable noise scale,
/// or with nothing stable at the user's batch to compare it with; "" when there is a winner or `i` is not stable.
std::string unranked_reason(const RunSummary& s, std::size_t i);
/// True when the loss curves come from synthetic batches (a small pool the model memorises).
bool synthetic_data(const RunSummary& s);

/// The fallbacks folded into one table: proposals that ran as the same config, with the settings that did not
/// apply there and why (each reason once, without its per-value "k=v: … ran with …" wrapping).
struct FoldRow {
  std::string runs_as;               ///< as its change from the baseline
  std::vector<std::string> ignored;  ///< each proposal's part that did not apply ("bucket_mb=1")
  std::vector<std::string> why;      ///< distinct reasons, each with the knobs it covers ("bucket_mb, comm_hook: only with …")
};
std::vector<FoldRow> fold_rows(const RunSummary& s);

/// The baseline's name, "PyTorch 2.11's defaults for a Python script" ("PyTorch defaults" for journals from
/// before the frontend was recorded), and the frontend in words ("Python (torch)", "C++ (LibTorch)").
std::string baseline_label(const RunSummary& s);
std::string frontend_words(const RunSummary& s);
/// Which worker measured the run, in one sentence, where the frontend makes it matter ("" otherwise).
std::string trainer_words(const RunSummary& s);

/// The baseline's value of every knob it sets (and batch_size: the workload's default unless the baseline sets
/// one): what the how-to-apply snippets leave out as already the user's.
std::map<std::string, std::string> baseline_defaults(const RunSummary& s);

/// The learning rate to start from at a changed batch under the rule of the user's optimizer's family
/// (WorkloadInfo::optimizer_family: SGD-like × r, Adam-like × √r; the built-in workloads train with AdamW): the rate
/// (0 when the family has no rule: none is invented) and the rule in words ("torch.optim.SGD, SGD-like: × r").
struct FamilyLr {
  double lr = 0;
  std::string rule;
};
FamilyLr family_lr(const RunSummary& s, const LrAdvice& a);

/// The learning-rate line of the how-to-apply snippets when the winner changes the batch (answer b), else none.
LrHint lr_hint(const RunSummary& s);

/// Config `i`'s verdict in the reports' table of configs: the winner (as `winner` spells it in the format),
/// "stable" or "rejected: REASON" (the reason through `cell`, the format's escaping), what the confirmation said of a
/// confirmed runner-up, "marked unsettled" and "(baseline)".
std::string config_verdict(const RunSummary& s, std::size_t i, const std::string& winner,
                           const std::function<std::string(const std::string&)>& cell);

/// The confirmation row's result: "pass", "FAIL" (its rounds ran and did not reproduce it) or "not run" (its detail says why).
std::string confirmation_result(const Confirmation& c);

/// "batch_size=64 precision=amp_bf16" → the knobs of `c` that differ from the run's baseline.
std::string changed_knobs(const RunSummary& s, const Config& c);
/// A run with slots (docs/scale-out.md): its facts as (label, sentence) pairs — the slots, time against
/// device-seconds, the interference, and a warning when a finalist ran beside another. Empty with one slot.
std::vector<std::pair<std::string, std::string>> scale_out_facts(const RunSummary& s);

}  // namespace autotune
