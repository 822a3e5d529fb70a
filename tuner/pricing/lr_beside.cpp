#include "tuner/pricing/lr_beside.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "knobs/protocol.h"
#include "reports/lr_sweep_report.h"
#include "tuner/pricing/kept_beside.h"

namespace autotune {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kSchema = "autotune.lr-sweep-beside/1";

std::string stem_of(const std::string& at) { return "lr-sweep-" + at; }

/// TUNE_DIR/lr-sweep-<at>.json, when there and readable; an unreadable one is named in `refused`.
LrSwept read_one(const std::string& tune_dir, const std::string& at, std::string& refused) {
  LrSwept w;
  const fs::path path = fs::path(tune_dir) / (stem_of(at) + ".json");
  if (tune_dir.empty() || !fs::exists(path)) return w;
  try {
    const json j = json::parse(read_file(path.string()));
    if (j.value("schema", "") != kSchema) throw std::runtime_error(fmt::format("its schema is not {}", kSchema));
    w.at = j.at("at").get<std::string>();
    w.sweep_dir = j.at("sweep_dir").get<std::string>();
    w.date = j.value("date", "");
    w.global_batch = j.at("global_batch").get<std::int64_t>();
    w.centre_lr = j.at("centre_lr").get<double>();
    w.best_lr = j.at("best_lr").get<double>();
    w.verdict = j.at("verdict").get<std::string>();
    w.gain = j.at("gain").get<double>();
    w.gain_lo = j.at("gain_lo").get<double>();
    w.gain_hi = j.at("gain_hi").get<double>();
    w.headline = j.value("headline", "");
    w.present = w.at == at;
  } catch (const std::exception& e) {
    refused += fmt::format("{}{} is unreadable ({}), left out", refused.empty() ? "" : "; ", path.string(), e.what());
    return LrSwept{};
  }
  return w;
}

}  // namespace

std::string write_lr_sweep_beside(const std::string& tune_dir, const LrSweepSummary& s, const std::string& date) {
  const LrVerdict& v = s.verdict;
  const json j = {{"schema", kSchema},
                  {"at", s.at},
                  {"sweep_dir", fs::absolute(s.out_dir).lexically_normal().string()},
                  {"date", date},
                  {"global_batch", s.global_batch},
                  {"centre_lr", s.user_lr},
                  // about right: the rate swept around is the one to train at, whichever arm's loss was lowest within the spread
                  {"best_lr", v.verdict == "about right" ? s.user_lr : s.user_lr * v.best_multiple},
                  {"verdict", v.verdict},
                  {"gain", v.gain},
                  {"gain_lo", v.gain_lo},
                  {"gain_hi", v.gain_hi},
                  {"headline", lr_sweep_headline(s)}};
  return write_beside_run(tune_dir, stem_of(s.at), j.dump(2) + "\n");
}

LrMeasured read_lr_sweeps_beside(const std::string& tune_dir, std::int64_t user_batch, std::int64_t b_batch,
                                 double b_time_ratio) {
  LrMeasured m;
  m.at_user = read_one(tune_dir, "your-batch", m.refused);
  m.at_b = read_one(tune_dir, "changed-batch", m.refused);
  const auto check = [&](LrSwept& w, std::int64_t batch, const char* which) {
    if (!w.present || w.global_batch == batch) return;
    m.refused += fmt::format("{}the lr-sweep {} swept global batch {}, not {} {}; left out", m.refused.empty() ? "" : "; ",
                             w.sweep_dir, w.global_batch, which,
                             batch > 0 ? fmt::format("({})", batch) : std::string("(the run has none now)"));
    w = LrSwept{};
  };
  check(m.at_user, user_batch, "your batch");
  check(m.at_b, b_batch, "answer (b)'s");
  if (m.at_b.prices() && b_time_ratio > 0) m.b_over_a = b_time_ratio * m.at_b.gain / m.at_user.priced_gain();
  return m;
}

RampAtMeasured ramp_at_measured_rates(const RampAnswer& r, const LrMeasured& m) {
  RampAtMeasured out;
  if (!r.proposed || r.seconds <= 0) return out;
  for (const RampPhaseSummary& p : r.phases) {
    RampPhaseAtMeasured q;
    q.global_batch = p.global_batch;
    q.seconds = p.seconds;
    for (const LrSwept* w : {&m.at_user, &m.at_b})  // the sweep at this phase's batch, if one prices it
      if (w->prices() && w->global_batch == p.global_batch && q.priced_by.empty()) {
        q.priced_by = w->at;
        q.lr = w->best_lr;
        q.gain = w->gain;
        q.seconds = p.seconds / w->gain;
      }
    out.seconds += q.seconds;
    out.phases.push_back(q);
  }
  if (out.measured() == 0 || out.seconds <= 0) return RampAtMeasured{};
  out.vs_a = r.a_seconds / m.at_user.priced_gain() / out.seconds;
  if (r.b_seconds > 0) out.vs_b = r.b_seconds / m.at_b.priced_gain() / out.seconds;
  return out;
}

}  // namespace autotune
