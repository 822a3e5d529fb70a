#include "tuner/exec/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "tuner/exec/subprocess.h"

namespace autotune {

namespace {

namespace fs = std::filesystem;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class SlotExecutor : public Executor {
 public:
  SlotExecutor(std::string name, TrialRunner runner, std::vector<Slot> slots)
      : name_(std::move(name)), runner_(std::move(runner)), slots_(std::move(slots)), host_(this_host()) {
    if (slots_.empty()) slots_.push_back(Slot{});
    busy_.assign(slots_.size(), false);
  }
  ~SlotExecutor() override { drain(); }

  std::string name() const override { return name_; }
  int slots() const override { return static_cast<int>(slots_.size()); }
  int in_flight() const override {
    std::lock_guard<std::mutex> l(m_);
    return static_cast<int>(running_.size());
  }
  bool has_free_slot() const override {
    std::lock_guard<std::mutex> l(m_);
    return std::find(busy_.begin(), busy_.end(), false) != busy_.end();
  }

  void start(TrialJob job) override {
    std::lock_guard<std::mutex> l(m_);
    const auto free = std::find(busy_.begin(), busy_.end(), false);
    if (free == busy_.end()) throw std::logic_error("executor: start() with every slot busy");
    if (job.whole_host && !running_.empty()) throw std::logic_error("executor: a whole-host trial beside others");
    const int slot = job.whole_host ? -1 : static_cast<int>(free - busy_.begin());
    if (job.whole_host) busy_.assign(busy_.size(), true);
    else busy_[static_cast<std::size_t>(slot)] = true;
    running_.emplace_back();
    Running& r = running_.back();
    r.seq = job.seq;
    r.slot = slot;
    r.t0 = now_s();
    for (auto& other : running_)  // every trial still running is a neighbour of the new one, and it of them
      if (&other != &r && !other.done) {
        other.neighbours.insert(r.seq);
        r.neighbours.insert(other.seq);
      }
    Running* rp = &r;  // std::list: stable while it runs
    r.thread = std::thread([this, rp, job = std::move(job)] {
      TrialRecord rec;
      std::exception_ptr err;
      try {
        rec = runner_.run(job.plan, job.kind, job.seq, slot_of(rp->slot));
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lk(m_);
      rp->record = std::move(rec);
      rp->error = err;
      rp->done = true;
      rp->t1 = now_s();
      cv_.notify_all();
    });
  }

  Finished wait_any() override {
    std::unique_lock<std::mutex> l(m_);
    if (running_.empty()) throw std::logic_error("executor: wait_any() with nothing in flight");
    std::list<Running>::iterator it;
    cv_.wait(l, [&] {
      // The earliest finished first: a deterministic order when several ended together.
      it = std::find_if(running_.begin(), running_.end(), [](const Running& r) { return r.done; });
      return it != running_.end();
    });
    std::thread t = std::move(it->thread);
    Finished f;
    f.seq = it->seq;
    f.record = std::move(it->record);
    f.error = it->error;
    f.seconds = it->t1 - it->t0;
    const Slot& s = slot_of(it->slot);
    Placement p;
    p.host = host_;
    p.executor = name();
    p.seq = it->seq;
    p.slot = it->slot;
    p.slots = static_cast<int>(slots_.size());
    p.cpus = cpu_list(s.cpus);
    p.devices = s.gpu;
    if (s.wrap) read_where(fs::path(runner_.options().trials_dir()) / fmt::format("{:04d}", it->seq), p);
    p.neighbours.assign(it->neighbours.begin(), it->neighbours.end());
    if (f.record.result.placement) p.lost = f.record.result.placement->lost;  // the runner's attempts set aside
    f.record.result.placement = p;
    if (it->slot < 0) busy_.assign(busy_.size(), false);
    else busy_[static_cast<std::size_t>(it->slot)] = false;
    running_.erase(it);
    l.unlock();
    t.join();  // the thread only signals and returns after `done`
    return f;
  }

  void drain() override {
    while (in_flight() > 0) (void)wait_any();
  }

 private:
  /// Where Slurm put a wrapped trial, as its tasks saw it (tuner/exec/slurm.cpp): rank 0's where.0 gives the host, CPU
  /// list and GPUs; with several ranks each where.N its rank's host.
  static void read_where(const fs::path& dir, Placement& p) {
    p.host = "";
    for (int rank = 0;; ++rank) {
      std::ifstream in(dir / fmt::format("where.{}", rank));
      std::string line, host, cpus, devices;
      if (!std::getline(in, line)) break;
      std::istringstream fields(line);
      std::getline(fields, host, '\t');
      std::getline(fields, cpus, '\t');
      std::getline(fields, devices, '\t');
      if (rank == 0) std::tie(p.host, p.cpus, p.devices) = std::tie(host, cpus, devices);
      p.rank_hosts.push_back(host);
    }
    if (p.rank_hosts.size() < 2) p.rank_hosts.clear();
  }

  /// Slot −1: the whole host, unpinned, every GPU (a data-parallel trial of a local parallel run).
  const Slot& slot_of(int i) const { return i < 0 ? whole_ : slots_[static_cast<std::size_t>(i)]; }
  struct Running {
    int seq = 0, slot = 0;
    std::thread thread;
    bool done = false;
    double t0 = 0, t1 = 0;
    TrialRecord record;
    std::exception_ptr error;
    std::set<int> neighbours;
  };
  std::string name_;
  TrialRunner runner_;
  std::vector<Slot> slots_;
  Slot whole_;
  std::vector<bool> busy_;
  std::string host_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::list<Running> running_;
};

}  // namespace

std::unique_ptr<Executor> make_executor(std::string name, TrialRunner runner, std::vector<Slot> slots) {
  return std::make_unique<SlotExecutor>(std::move(name), std::move(runner), std::move(slots));
}

std::unique_ptr<Executor> make_local_executor(TrialRunner runner, std::vector<Slot> slots) {
  std::string name = slots.size() > 1 ? "local slots" : "local";
  return make_executor(std::move(name), std::move(runner), std::move(slots));
}

}  // namespace autotune
