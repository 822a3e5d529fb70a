#include "profiler/kineto_trace.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace autotune::prof {

using nlohmann::json;

namespace {

const std::set<std::string> kPhases = {"data", "h2d", "forward", "backward", "optimizer", "other"};
const std::string kStepPrefix = "ProfilerStep#";

std::int64_t ns_of(const json& us) { return us.is_number() ? std::llround(us.get<double>() * 1e3) : 0; }

std::int64_t int_arg(const json& args, const char* key, std::int64_t otherwise = 0) {
  auto it = args.find(key);
  return it != args.end() && it->is_number() ? it->get<std::int64_t>() : otherwise;
}

/// A host id (pid or tid): kineto writes numbers; a string one (its "Spans" rows) is not a thread of ours.
std::int64_t host_id(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_number_integer() ? it->get<std::int64_t>() : -1;
}

/// Direction and host memory kind of a copy: args "copy kind" ("HtoD (pinned)", trace_export's), else
/// kineto's name "Memcpy HtoD (Pinned -> Device)".
void copy_kind_of(const json& e, const json& args, Activity& a) {
  std::string text = args.value("copy kind", std::string());
  if (text.empty()) {
    text = e.value("name", std::string());
    if (text.rfind("Memcpy ", 0) == 0) text = text.substr(7);
  }
  a.copy_kind = text.substr(0, text.find(' '));
  a.host_pinned = text.find("Pinned") != std::string::npos || text.find("pinned") != std::string::npos;
}

/// kineto's synchronisation names ("Stream Sync", CUpti_ActivitySynchronizationType) as the collector names them.
std::string sync_name(const std::string& n) {
  if (n == "Stream Sync") return "stream_synchronize";
  if (n == "Context Sync") return "context_synchronize";
  if (n == "Event Sync") return "event_synchronize";
  if (n == "Stream Wait Event") return "stream_wait_event";
  return n;
}

/// The GPU-side fields every GPU record carries.
void gpu_fields(const json& e, const json& args, Activity& a) {
  a.device = static_cast<int>(int_arg(args, "device", host_id(e, "pid")));
  a.stream = int_arg(args, "stream", host_id(e, "tid"));
  a.correlation = static_cast<std::uint32_t>(int_arg(args, "correlation"));
}

/// The activity of one complete event, or false for an event the analysis does not read.
bool activity_of(const json& e, Activity& a) {
  const std::string cat = e.value("cat", std::string());
  const json args = e.value("args", json::object());
  a.name = e.value("name", std::string());
  a.start_ns = ns_of(e.value("ts", json()));
  a.end_ns = a.start_ns + ns_of(e.value("dur", json()));
  a.tid = host_id(e, "tid");
  a.external_id = static_cast<std::uint64_t>(int_arg(args, "external id"));  // trace_export's phase ids (kineto's "External id" is its op's)
  if (cat == "user_annotation" && (a.name.rfind("gloo:", 0) == 0 || a.name.rfind("nccl:", 0) == 0)) {
    // a collective as the backend's worker thread records it, start to completion: "gloo:all_reduce" → "gloo:allreduce"
    a.kind = ActKind::comm;
    a.name.erase(std::remove(a.name.begin() + 5, a.name.end(), '_'), a.name.end());
    return true;
  }
  if (cat == "user_annotation") {
    a.kind = ActKind::range;
    if (a.name.rfind(kStepPrefix, 0) == 0) {
      a.step = std::atoi(a.name.c_str() + kStepPrefix.size());
      a.name = "step";
    }
    return true;
  }
  if (cat == "kernel") {
    a.kind = ActKind::kernel;
    gpu_fields(e, args, a);
    for (int d = 0; d < 3; ++d) {
      if (args.contains("grid") && args["grid"].size() == 3) a.grid[d] = args["grid"][d].get<std::int32_t>();
      if (args.contains("block") && args["block"].size() == 3) a.block[d] = args["block"][d].get<std::int32_t>();
    }
    return true;
  }
  if (cat == "gpu_memcpy" || cat == "gpu_memset") {
    a.kind = cat == "gpu_memcpy" ? ActKind::memcpy : ActKind::memset;
    gpu_fields(e, args, a);
    a.bytes = int_arg(args, "bytes");
    if (a.kind == ActKind::memcpy) copy_kind_of(e, args, a);
    return true;
  }
  if (cat == "cuda_runtime" || cat == "cuda_driver") {
    a.kind = ActKind::runtime;
    a.correlation = static_cast<std::uint32_t>(int_arg(args, "correlation"));
    return true;
  }
  if (cat == "cuda_sync") {
    a.kind = ActKind::sync;
    a.name = sync_name(a.name);
    a.stream = int_arg(args, "stream", -1);
    a.correlation = static_cast<std::uint32_t>(int_arg(args, "correlation"));
    return true;
  }
  if (cat == "cpu_op" && args.contains("Collective name")) {
    a.kind = ActKind::comm;
    if (a.name.find(':') == std::string::npos) a.name = "c10d:" + args["Collective name"].get<std::string>();
    a.bytes = int_arg(args, "bytes");
    return true;
  }
  return false;
}

}  // namespace

ActivityStream read_kineto_trace(const json& trace) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw TraceFormatError("not a Chrome trace: no traceEvents array (torch.profiler's export_chrome_trace writes one)");
  ActivityStream s;
  std::vector<std::pair<std::int64_t, Activity>> annotations;  // (pid, range)
  std::set<std::pair<std::int64_t, std::int64_t>> step_threads;  // (pid, tid) holding ProfilerStep ranges
  for (const json& e : trace["traceEvents"]) {
    if (!e.is_object() || e.value("ph", std::string()) != "X") continue;
    Activity a;
    if (!activity_of(e, a)) continue;
    if (a.kind == ActKind::range) {
      if (a.name == "step") {
        step_threads.emplace(host_id(e, "pid"), a.tid);
        if (s.pid == 0) s.pid = static_cast<int>(host_id(e, "pid"));
      }
      annotations.emplace_back(host_id(e, "pid"), std::move(a));
      continue;
    }
    if (is_gpu_op(a.kind) && (a.start_ns == 0 || a.end_ns < a.start_ns)) ++s.zero_timestamps;
    s.records.push_back(std::move(a));
  }
  for (auto& [pid, a] : annotations)  // the steps, and the phases on their threads; the user's own annotations stay out
    if (a.name == "step" || (kPhases.count(a.name) && step_threads.count({pid, a.tid}))) s.records.push_back(std::move(a));
  int device = -1;
  for (const auto& a : s.records)
    if (is_gpu_op(a.kind)) {
      device = a.device;
      break;
    }
  if (device >= 0)
    for (const json& p : trace.value("deviceProperties", json::array()))
      if (p.is_object() && p.value("id", -1) == device) s.device_name = p.value("name", std::string());
  return s;
}

ActivityStream read_kineto_trace_file(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)
    throw TraceFormatError(path + ": a gzipped trace; gunzip it first (this reads plain JSON)");
  std::ifstream in(path);
  if (!in) throw TraceFormatError(path + ": cannot open it");
  json trace = json::parse(in, nullptr, false);
  if (trace.is_discarded()) throw TraceFormatError(path + ": not JSON");
  try {
    return read_kineto_trace(trace);
  } catch (const TraceFormatError& e) {
    throw TraceFormatError(path + ": " + e.what());
  } catch (const json::exception& e) {
    throw TraceFormatError(path + ": an event has a field of the wrong type (" + std::string(e.what()) + ")");
  }
}

}  // namespace autotune::prof
