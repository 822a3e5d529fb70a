#include "profiler/trace_export.h"

#include <algorithm>
#include <map>
#include <set>

namespace autotune::prof {

using nlohmann::json;

namespace {

/// Where the trace puts times: microseconds since the earliest record.
struct Timebase {
  std::int64_t base_ns = 0;
  double us(std::int64_t ns) const { return static_cast<double>(ns - base_ns) / 1e3; }
};

/// Host events sit on (process, thread), device events on (device, stream).
bool on_host(const Activity& a) { return a.kind == ActKind::range || a.kind == ActKind::runtime || a.kind == ActKind::comm; }

/// One complete ("X") event, with the args PyTorch's profiler writes (HTA and Perfetto read them).
json complete_event(const Activity& a, int pid, const Timebase& t) {
  const bool host = on_host(a);
  json e = {{"ph", "X"},
            {"name", a.name},
            {"ts", t.us(a.start_ns)},
            {"dur", static_cast<double>(a.duration_ns()) / 1e3},
            {"pid", host ? pid : a.device}};
  if (host) e["tid"] = a.tid;
  else e["tid"] = a.stream;
  json args = {{"stream", host ? -1 : a.stream}};
  if (a.kind != ActKind::range && a.kind != ActKind::comm) args["correlation"] = a.correlation;
  switch (a.kind) {
    case ActKind::range:
      e["cat"] = "user_annotation";
      if (a.name == "step") e["name"] = "ProfilerStep#" + std::to_string(a.step);
      break;
    case ActKind::runtime:
      e["cat"] = "cuda_runtime";
      break;
    case ActKind::comm:  // "gloo:allreduce": the collective's name after the backend, as PyTorch's profiler names it
      e["cat"] = "cpu_op";
      args["Collective name"] = a.name.substr(a.name.find(':') + 1);
      args["bytes"] = a.bytes;
      break;
    case ActKind::sync:
      e["cat"] = "cuda_sync";
      break;
    default:
      e["cat"] = a.kind == ActKind::kernel ? "kernel" : a.kind == ActKind::memcpy ? "gpu_memcpy" : "gpu_memset";
      args["device"] = a.device;
      if (a.kind == ActKind::kernel && a.grid[0] > 0) {  // as PyTorch's profiler names them
        args["grid"] = a.grid;
        args["block"] = a.block;
      }
      if (a.kind == ActKind::memcpy) {
        args["bytes"] = a.bytes;
        args["memory bandwidth (GB/s)"] = a.duration_ns() > 0 ? static_cast<double>(a.bytes) / a.duration_ns() : 0.0;
        args["copy kind"] =
            a.copy_kind + (a.copy_kind == "HtoD" || a.copy_kind == "DtoH" ? (a.host_pinned ? " (pinned)" : " (pageable)") : "");
      }
  }
  if (a.external_id) args["external id"] = a.external_id;
  e["args"] = args;
  return e;
}

/// The flow arrow from a launch call to the GPU work it launched, by correlation id: its start on the
/// runtime call, its end on the kernel, copy or memset; null for other records.
json flow_event(const Activity& a, int pid, const Timebase& t) {
  if (a.kind == ActKind::runtime)
    return {{"ph", "s"},  {"cat", "ac2g"}, {"name", "ac2g"},        {"id", a.correlation},
            {"pid", pid}, {"tid", a.tid},  {"ts", t.us(a.start_ns)}};
  if (is_gpu_op(a.kind))
    return {{"ph", "f"},           {"bp", "e"},       {"cat", "ac2g"},   {"name", "ac2g"},
            {"id", a.correlation}, {"pid", a.device}, {"tid", a.stream}, {"ts", t.us(a.start_ns)}};
  return nullptr;
}

json name_event(const char* what, std::int64_t pid, std::int64_t tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

json chrome_trace(const ActivityStream& s, int rank, int world_size, const std::string& backend) {
  Timebase t;
  t.base_ns = INT64_MAX;
  for (const auto& a : s.records) t.base_ns = std::min(t.base_ns, a.start_ns);
  if (t.base_ns == INT64_MAX) t.base_ns = 0;
  std::set<std::uint32_t> launched;  // correlations with a runtime call (flow start)
  for (const auto& a : s.records)
    if (a.kind == ActKind::runtime && a.correlation) launched.insert(a.correlation);
  json events = json::array();
  std::set<std::int64_t> host_tids, comm_tids;
  std::map<int, std::set<std::int64_t>> streams;  // device → its streams
  for (const auto& a : s.records) {
    events.push_back(complete_event(a, s.pid, t));
    if (a.kind == ActKind::comm) comm_tids.insert(a.tid);
    else if (on_host(a)) host_tids.insert(a.tid);
    else streams[a.device].insert(a.stream);
    if (a.correlation && launched.count(a.correlation))
      if (json f = flow_event(a, s.pid, t); !f.is_null()) events.push_back(f);
  }
  // Process and thread names.
  events.push_back(name_event("process_name", s.pid, 0, "python"));
  for (auto tid : host_tids) events.push_back(name_event("thread_name", s.pid, tid, "thread " + std::to_string(tid)));
  for (auto tid : comm_tids)
    if (!host_tids.count(tid)) events.push_back(name_event("thread_name", s.pid, tid, "c10d collectives"));
  json props = json::array();
  for (const auto& [d, ids] : streams) {
    events.push_back(name_event("process_name", d, 0, "GPU " + std::to_string(d)));
    for (auto st : ids) events.push_back(name_event("thread_name", d, st, "stream " + std::to_string(st)));
    props.push_back({{"id", d}, {"name", s.device_name}});
  }
  return {{"schemaVersion", 1},
          {"deviceProperties", props},
          {"distributedInfo", {{"backend", backend}, {"rank", rank}, {"world_size", world_size}}},
          {"displayTimeUnit", "ms"},
          {"baseTimeNanoseconds", t.base_ns},
          {"traceEvents", events}};
}

std::string trace_text(const json& trace) {
  std::string out = "{\n";
  bool first = true;
  auto put = [&](const std::string& key, const json& value) {
    out += (first ? "  " : ",\n  ") + json(key).dump() + ": " + value.dump(1);
    first = false;
  };
  if (trace.contains("distributedInfo")) put("distributedInfo", trace["distributedInfo"]);
  for (const auto& [key, value] : trace.items())
    if (key != "distributedInfo" && key != "traceEvents") put(key, value);
  if (trace.contains("traceEvents")) {
    out += std::string(first ? "  " : ",\n  ") + "\"traceEvents\": [";
    bool first_event = true;
    for (const auto& e : trace["traceEvents"]) {
      out += (first_event ? "\n    " : ",\n    ") + e.dump();
      first_event = false;
    }
    out += "\n  ]";
  }
  return out + "\n}\n";
}

}  // namespace autotune::prof
