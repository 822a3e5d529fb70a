#include "profiler/trace_export.h"

#include <algorithm>
#include <map>
#include <set>

namespace autotune::prof {

using nlohmann::json;

json chrome_trace(const ActivityStream& s, int rank, int world_size) {
  std::int64_t base = INT64_MAX;
  for (const auto& a : s.records) base = std::min(base, a.start_ns);
  if (base == INT64_MAX) base = 0;
  auto us = [&](std::int64_t ns) { return static_cast<double>(ns - base) / 1e3; };
  const int pid = s.pid;
  json events = json::array();
  std::set<int> devices;
  std::set<std::int64_t> host_tids;
  std::map<int, std::set<std::int64_t>> streams;
  std::set<std::uint32_t> launched;  // correlations with a runtime call (flow start)
  for (const auto& a : s.records)
    if (a.kind == ActKind::runtime && a.correlation) launched.insert(a.correlation);
  for (const auto& a : s.records) {
    json e = {{"ph", "X"}, {"name", a.name}, {"ts", us(a.start_ns)}, {"dur", static_cast<double>(a.duration_ns()) / 1e3}};
    json args = json::object();
    // Host events on (process, thread); device events on (device, stream).
    const bool host = a.kind == ActKind::range || a.kind == ActKind::runtime;
    if (host) {
      e["pid"] = pid;
      e["tid"] = a.tid;
      host_tids.insert(a.tid);
    } else {
      e["pid"] = a.device;
      e["tid"] = a.stream;
      devices.insert(a.device);
      streams[a.device].insert(a.stream);
    }
    args["stream"] = host ? -1 : a.stream;
    if (a.kind != ActKind::range) args["correlation"] = a.correlation;
    switch (a.kind) {
      case ActKind::range:
        e["cat"] = "user_annotation";
        if (a.name == "step") e["name"] = "ProfilerStep#" + std::to_string(a.step);
        break;
      case ActKind::runtime:
        e["cat"] = "cuda_runtime";
        break;
      case ActKind::sync:
        e["cat"] = "cuda_sync";
        break;
      default:
        e["cat"] = a.kind == ActKind::kernel ? "kernel" : a.kind == ActKind::memcpy ? "gpu_memcpy" : "gpu_memset";
        args["device"] = a.device;
        if (a.kind == ActKind::memcpy) {
          args["bytes"] = a.bytes;
          args["memory bandwidth (GB/s)"] = a.duration_ns() > 0 ? static_cast<double>(a.bytes) / a.duration_ns() : 0.0;
          args["copy kind"] =
              a.copy_kind + (a.copy_kind == "HtoD" || a.copy_kind == "DtoH" ? (a.host_pinned ? " (pinned)" : " (pageable)") : "");
        }
    }
    if (a.external_id) args["external id"] = a.external_id;
    e["args"] = args;
    events.push_back(e);
    // Flow arrow launch → GPU work, by correlation id.
    if (a.correlation && launched.count(a.correlation)) {
      if (a.kind == ActKind::runtime)
        events.push_back({{"ph", "s"},
                          {"cat", "ac2g"},
                          {"name", "ac2g"},
                          {"id", a.correlation},
                          {"pid", pid},
                          {"tid", a.tid},
                          {"ts", us(a.start_ns)}});
      else if (a.kind == ActKind::kernel || a.kind == ActKind::memcpy || a.kind == ActKind::memset)
        events.push_back({{"ph", "f"},
                          {"bp", "e"},
                          {"cat", "ac2g"},
                          {"name", "ac2g"},
                          {"id", a.correlation},
                          {"pid", a.device},
                          {"tid", a.stream},
                          {"ts", us(a.start_ns)}});
    }
  }
  // Process and thread names.
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "python"}}}});
  for (auto t : host_tids)
    events.push_back(
        {{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", t}, {"args", {{"name", "thread " + std::to_string(t)}}}});
  for (int d : devices) {
    events.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", d}, {"tid", 0}, {"args", {{"name", "GPU " + std::to_string(d)}}}});
    for (auto st : streams[d])
      events.push_back(
          {{"ph", "M"}, {"name", "thread_name"}, {"pid", d}, {"tid", st}, {"args", {{"name", "stream " + std::to_string(st)}}}});
  }
  json props = json::array();
  for (int d : devices) props.push_back({{"id", d}, {"name", s.device_name}});
  return {{"schemaVersion", 1},
          {"deviceProperties", props},
          {"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", world_size}}},
          {"displayTimeUnit", "ms"},
          {"baseTimeNanoseconds", base},
          {"traceEvents", events}};
}

}  // namespace autotune::prof
