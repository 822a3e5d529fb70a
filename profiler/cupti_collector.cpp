#include "profiler/cupti_collector.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#ifdef AUTOTUNE_HAVE_CUPTI_HEADERS
#include <cupti.h>
#endif

namespace autotune::prof {

#ifndef AUTOTUNE_HAVE_CUPTI_HEADERS

CuptiCollector::CuptiCollector() = default;
CuptiCollector::~CuptiCollector() = default;
bool CuptiCollector::start(std::string& why) {
  why = "built without the CUPTI headers (no CUDA toolkit at build time): host-only profile";
  return false;
}
ActivityStream CuptiCollector::stop() { return {}; }
std::int64_t CuptiCollector::now_ns() const { return 0; }
void CuptiCollector::push(std::uint64_t) {}
void CuptiCollector::pop() {}

#else

namespace {

/// CUPTI entry points, resolved from the loaded library.
struct Api {
  void* lib = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;
  decltype(&cuptiFinalize) finalize = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push_external = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop_external = nullptr;
};

Api& api() {
  static Api a;
  return a;
}

template <typename F>
bool resolve(F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(api().lib, name));
  return f != nullptr;
}

/// dlopen CUPTI: the copy already in the process (LibTorch's), else the toolkit's. "" on success.
std::string load() {
  Api& a = api();
  if (a.lib) return "";
  for (const char* n : {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so.13",
                        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"})
    if ((a.lib = dlopen(n, RTLD_NOW | RTLD_GLOBAL))) break;
  if (!a.lib) return "CUPTI library not found (libcupti.so.13): host-only profile";
  const bool ok = resolve(a.enable, "cuptiActivityEnable") && resolve(a.disable, "cuptiActivityDisable") &&
                  resolve(a.register_callbacks, "cuptiActivityRegisterCallbacks") &&
                  resolve(a.flush_all, "cuptiActivityFlushAll") && resolve(a.next_record, "cuptiActivityGetNextRecord") &&
                  resolve(a.dropped, "cuptiActivityGetNumDroppedRecords") && resolve(a.result_string, "cuptiGetResultString") &&
                  resolve(a.timestamp, "cuptiGetTimestamp") && resolve(a.subscribe, "cuptiSubscribe") &&
                  resolve(a.unsubscribe, "cuptiUnsubscribe") && resolve(a.callback_name, "cuptiGetCallbackName") &&
                  resolve(a.finalize, "cuptiFinalize") && resolve(a.push_external, "cuptiActivityPushExternalCorrelationId") &&
                  resolve(a.pop_external, "cuptiActivityPopExternalCorrelationId");
  if (!ok) {
    dlclose(a.lib);
    a.lib = nullptr;
    return "the CUPTI library lacks an expected entry point (version mismatch): host-only profile";
  }
  return "";
}

/// The one checked call: returns "" or "NAME returned CODE (CUPTI_ERROR_…)" and logs it.
std::string check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return "";
  const char* s = nullptr;
  if (api().result_string) api().result_string(r, &s);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s returned %d (%s)", what, static_cast<int>(r), s ? s : "unknown");
  std::fprintf(stderr, "autotune profiler: %s\n", buf);
  return buf;
}

// Records arrive on CUPTI's thread through these callbacks.
std::mutex g_mu;
ActivityStream g_stream;
bool g_collecting = false;  // between start() and stop(): completed buffers go into g_stream
std::vector<std::pair<std::uint32_t, std::uint64_t> > g_external;  // correlation id → our external id
constexpr size_t kBufferBytes = 4 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

std::string copy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "other";
  }
}

/// The fields every GPU record shares.
template <typename R>
void gpu_fields(Activity& a, const R* r) {
  a.start_ns = static_cast<std::int64_t>(r->start);
  a.end_ns = static_cast<std::int64_t>(r->end);
  a.device = static_cast<int>(r->deviceId);
  a.stream = r->streamId;
  a.correlation = r->correlationId;
}

/// A CUPTI record as an Activity; nullopt for kinds not kept (external correlation ids are stored
/// aside in g_external, to be mapped onto the records when collection stops).
std::optional<Activity> to_activity(CUpti_Activity* rec) {
  Activity a;
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
      a.kind = ActKind::kernel;
      a.name = k->name ? k->name : "kernel";
      a.grid = {k->gridX, k->gridY, k->gridZ};
      a.block = {k->blockX, k->blockY, k->blockZ};
      gpu_fields(a, k);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(rec);
      a.kind = ActKind::memcpy;
      a.copy_kind = copy_kind(m->copyKind);
      a.name = "Memcpy " + a.copy_kind;
      a.bytes = static_cast<std::int64_t>(m->bytes);
      const uint8_t host = m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ? m->srcKind : m->dstKind;
      a.host_pinned = host == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
      gpu_fields(a, m);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(rec);
      a.kind = ActKind::memset;
      a.name = "Memset";
      a.bytes = static_cast<std::int64_t>(m->bytes);
      gpu_fields(a, m);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      auto* r = reinterpret_cast<CUpti_ActivityAPI*>(rec);
      a.kind = ActKind::runtime;
      const char* n = nullptr;
      api().callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, r->cbid, &n);
      a.name = n ? n : "cudaRuntime";
      a.start_ns = static_cast<std::int64_t>(r->start);
      a.end_ns = static_cast<std::int64_t>(r->end);
      a.tid = r->threadId;
      a.correlation = r->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      auto* e = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(rec);
      if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
        std::lock_guard<std::mutex> l(g_mu);
        const std::uint32_t corr = e->correlationId;  // packed struct: copy, do not bind
        const std::uint64_t ext = e->externalId;
        g_external.emplace_back(corr, ext);
      }
      return std::nullopt;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      auto* s = reinterpret_cast<CUpti_ActivitySynchronization2*>(rec);
      a.kind = ActKind::sync;
      a.name = s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE    ? "stream_synchronize"
               : s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? "context_synchronize"
               : s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE   ? "event_synchronize"
                                                                                    : "stream_wait_event";
      a.start_ns = static_cast<std::int64_t>(s->start);
      a.end_ns = static_cast<std::int64_t>(s->end);
      a.stream = s->streamId;
      a.correlation = s->correlationId;
      break;
    }
    default:
      return std::nullopt;
  }
  return a;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<Activity> out;
  std::int64_t zero = 0;
  CUpti_Activity* rec = nullptr;
  while (api().next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    std::optional<Activity> a = to_activity(rec);
    if (!a) continue;
    if (a->kind != ActKind::runtime && (a->start_ns == 0 || a->end_ns == 0)) {
      ++zero;  // lost data: counted, not analysed
      continue;
    }
    out.push_back(std::move(*a));
  }
  std::free(buffer);
  std::lock_guard<std::mutex> l(g_mu);
  if (g_collecting) {
    g_stream.records.insert(g_stream.records.end(), out.begin(), out.end());
    g_stream.zero_timestamps += zero;
  }
}

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET,
                                     CUPTI_ACTIVITY_KIND_RUNTIME,
                                     CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                     CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

void CUPTIAPI no_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

}  // namespace

CuptiCollector::CuptiCollector() = default;
CuptiCollector::~CuptiCollector() {
  if (active_) stop();
}

bool CuptiCollector::start(std::string& why) {
  why = load();
  if (!why.empty()) return false;
  Api& a = api();
  // One subscriber per process: if another profiler holds CUPTI, say so and stay out of its way.
  CUpti_SubscriberHandle sub = nullptr;
  const CUptiResult sr = a.subscribe(&sub, reinterpret_cast<CUpti_CallbackFunc>(no_callback), nullptr);
  if (sr == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    why = "another profiler already holds CUPTI (Nsight Systems, ncu, compute-sanitizer or torch.profiler): host-only profile";
    return false;
  }
  if (sr == CUPTI_SUCCESS) a.unsubscribe(sub);
  if (auto e = check(a.register_callbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks"); !e.empty()) {
    why = e + ": host-only profile";
    return false;
  }
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_stream = ActivityStream{};
    g_external.clear();
    g_collecting = true;
  }
  for (auto k : kKinds) {
    if (auto e = check(a.enable(k), "cuptiActivityEnable"); !e.empty()) {
      for (auto d : kKinds) a.disable(d);
      std::lock_guard<std::mutex> l(g_mu);
      g_collecting = false;
      why = e + " — no usable GPU or driver for CUPTI here: host-only profile";
      return false;
    }
  }
  active_ = true;
  return true;
}

ActivityStream CuptiCollector::stop() {
  if (!active_) return {};
  Api& a = api();
  check(a.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  for (auto k : kKinds) a.disable(k);
  size_t dropped = 0;
  a.dropped(nullptr, 0, &dropped);  // never while holding our lock (kineto's ABBA deadlock)
  active_ = false;
  std::lock_guard<std::mutex> l(g_mu);
  g_collecting = false;
  ActivityStream out = std::move(g_stream);
  g_stream = ActivityStream{};
  out.dropped = static_cast<std::int64_t>(dropped);
  // Our external ids onto the runtime calls and the GPU work they launched (same correlation id).
  std::unordered_map<std::uint32_t, std::uint64_t> ext(g_external.begin(), g_external.end());
  g_external.clear();
  for (auto& a : out.records)
    if (a.kind != ActKind::range && a.correlation)
      if (auto it = ext.find(a.correlation); it != ext.end()) a.external_id = it->second;
  return out;
}

void CuptiCollector::push(std::uint64_t id) {
  if (active_) check(api().push_external(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id), "cuptiActivityPushExternalCorrelationId");
}

void CuptiCollector::pop() {
  uint64_t last = 0;
  if (active_) check(api().pop_external(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last), "cuptiActivityPopExternalCorrelationId");
}

std::int64_t CuptiCollector::now_ns() const {
  uint64_t t = 0;
  if (api().timestamp && api().timestamp(&t) == CUPTI_SUCCESS) return static_cast<std::int64_t>(t);
  return 0;
}

#endif

}  // namespace autotune::prof
