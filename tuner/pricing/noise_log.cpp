#include "tuner/pricing/noise_log.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "knobs/error.h"
#include "knobs/protocol.h"
#include "knobs/numbers.h"
#include "tuner/pricing/run_length.h"

namespace autotune {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// The header's fields, each checked; `bad` names what is wrong in one clause.
void read_header(NoiseLog& log, const json& h) {
  const auto where = [&](const std::string& what) {
    return UsageError(fmt::format("--noise-log {}: {}", log.path, what));
  };
  if (!h.is_object() || !h.contains("autotune_noise_log"))
    throw where("not an autotune noise log (its first line must be the header the loggers in logger/ write, "
                "{\"autotune_noise_log\": 1, …})");
  if (!h["autotune_noise_log"].is_number_integer() || h["autotune_noise_log"].get<int>() != kNoiseLogVersion)
    throw where(fmt::format("format version {} is not known; allowed: {}", h["autotune_noise_log"].dump(), kNoiseLogVersion));
  try {
    log.logger = h.value("logger", "");
    log.mode = h.value("mode", "accumulation");
    log.micro_batch = h.at("micro_batch").get<std::int64_t>();
    log.micro_batches = h.at("micro_batches").get<int>();
    log.parameters = h.at("parameters").get<std::int64_t>();
    log.tensors = h.at("tensors").get<int>();
    log.started = h.value("started", "random init");
    log.data = h.value("data", "");
  } catch (const json::exception& e) {
    throw where(fmt::format("its header lacks a field or has one of the wrong type ({})", e.what()));
  }
  if (log.mode != "accumulation" && log.mode != "ranks")
    throw where(fmt::format("mode '{}' is not known; allowed: accumulation, ranks", log.mode));
  if (log.micro_batches < 2)
    throw where(fmt::format("it has {} micro-batch{} per step; the noise scale needs at least 2 (log a loop that accumulates "
                            "gradients over 2 or more micro-batches, or one rank's and the all-reduced gradient)",
                            log.micro_batches, log.micro_batches == 1 ? "" : "es"));
  if (log.micro_batch < 1) throw where(fmt::format("micro_batch {} is not a batch size; allowed: 1 or more", log.micro_batch));
  if (log.parameters < 1 || log.tensors < 1)
    throw where(fmt::format("the header's model has {} parameters in {} tensors; allowed: 1 or more", log.parameters, log.tensors));
  if (log.started != "random init" && log.started != "checkpoint")
    throw where(fmt::format("started '{}' is not known; allowed: random init, checkpoint", log.started));
}

/// One step line into the log; false when the line is not a complete step record.
bool read_step(NoiseLog& log, const std::string& line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception&) {
    return false;
  }
  if (!j.is_object() || !j.contains("samples") || !j.contains("small_sq") || !j.contains("big_sq")) return false;
  const auto number = [](const json& v) {
    return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();  // null: a non-finite norm
  };
  if (!j["samples"].is_number_integer()) return false;
  NoiseStep s;
  s.small_sq = number(j["small_sq"]);
  s.big_sq = number(j["big_sq"]);
  if (!std::isfinite(s.small_sq) || !std::isfinite(s.big_sq)) ++log.dropped;
  log.steps.push_back(s);
  log.samples.push_back(j["samples"].get<std::int64_t>());
  log.step_numbers.push_back(j.value("step", static_cast<std::int64_t>(log.steps.size())));
  log.losses.push_back(j.contains("loss") ? number(j["loss"]) : std::numeric_limits<double>::quiet_NaN());
  return true;
}

}  // namespace

std::string NoiseLog::describe() const {
  return fmt::format("{} ({} logger, {} steps of {} × {}{}, from {})", path, logger.empty() ? "an unnamed" : logger, steps.size(),
                     micro_batches, micro_batch, mode == "ranks" ? " ranks" : "", started);
}

NoiseLog read_noise_log(const std::string& path) {
  NoiseLog log;
  log.path = path;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(fmt::format("--noise-log {}: cannot read it (no such file, or not readable)", path));
  const std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  if (bytes.empty()) throw UsageError(fmt::format("--noise-log {}: the file is empty; allowed: a log the loggers in logger/ write", path));
  size_t pos = 0;
  int line_no = 0;
  while (pos < bytes.size()) {
    const size_t nl = bytes.find('\n', pos);
    const bool complete = nl != std::string::npos;
    const std::string line = bytes.substr(pos, complete ? nl - pos : std::string::npos);
    pos = complete ? nl + 1 : bytes.size();
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line_no == 1) {
      json h;
      try {
        h = json::parse(line);
      } catch (const json::exception&) {
      }
      read_header(log, h);
      continue;
    }
    if (!read_step(log, line)) {
      if (!complete)
        throw UsageError(fmt::format("--noise-log {}: truncated: its last line (line {}) is cut short; allowed: a log whose every line is "
                                     "a whole record (drop the last line, or let the logger close the file)",
                                     path, line_no));
      throw UsageError(fmt::format("--noise-log {}: line {} is not a step record (it needs samples, small_sq and big_sq)", path, line_no));
    }
    const size_t n = log.samples.size();
    if (n >= 2 && log.samples[n - 1] <= log.samples[n - 2])
      throw UsageError(fmt::format("--noise-log {}: line {}: samples {} does not grow past the step before ({}); a log counts the "
                                   "samples trained since the first step",
                                   path, line_no, log.samples[n - 1], log.samples[n - 2]));
  }
  const int finite = static_cast<int>(log.steps.size()) - log.dropped;
  if (finite < kNoiseLogMinSteps)
    throw UsageError(fmt::format("--noise-log {}: {} step{} with finite norms; the noise scale needs at least {}", path, finite,
                                 finite == 1 ? "" : "s", kNoiseLogMinSteps));
  return log;
}

void check_noise_log_model(const NoiseLog& log, std::int64_t parameters, int tensors, const std::string& what) {
  if (parameters <= 0)
    throw UsageError(fmt::format("--noise-log {}: {} does not record how many parameters its model has (a run from before noise "
                                 "logs), so the log's model cannot be checked; tune again with --noise-log",
                                 log.path, what));
  if (log.parameters != parameters || log.tensors != tensors)
    throw UsageError(fmt::format("--noise-log {}: it is from another model: {} trainable parameters in {} tensors; {} has {} in {}",
                                 log.path, with_commas(static_cast<double>(log.parameters)), log.tensors, what,
                                 with_commas(static_cast<double>(parameters)), tensors));
}

void check_run_covers_log(const NoiseLog& log, const std::string& run_length, double tokens_per_sample) {
  const RunLength len = parse_run_length(run_length);
  if (!len.given() || len.unit == RunLength::Unit::epochs || log.samples.empty()) return;
  const double run = run_samples(len, 0, tokens_per_sample);
  const double logged = static_cast<double>(log.samples.back());
  if (run > 0 && run < logged)
    throw UsageError(fmt::format("--run-length {} is {} samples, shorter than the {} samples your noise log {} trained; give the "
                                 "length of the whole run the log is from, or longer",
                                 describe(len), with_commas(std::round(run)), with_commas(logged), log.path));
}

std::string keep_noise_log(const std::string& tune_dir, const NoiseLog& log) {
  const fs::path path = fs::path(tune_dir) / kNoiseLogFile;
  if (fs::exists(path) && fs::weakly_canonical(path) == fs::weakly_canonical(log.path)) return path.string();  // itself
  if (fs::exists(path)) {  // the earlier one is kept
    fs::path kept;
    for (int k = 1; kept.empty() || fs::exists(kept); ++k) kept = fs::path(tune_dir) / fmt::format("noise-log-{}.jsonl", k);
    fs::rename(path, kept);
  }
  write_file_atomic(path.string(), read_file(log.path));
  return path.string();
}

std::string kept_noise_log(const std::string& tune_dir) {
  if (tune_dir.empty()) return "";
  const fs::path path = fs::path(tune_dir) / kNoiseLogFile;
  return fs::exists(path) ? path.string() : "";
}


}  // namespace autotune
