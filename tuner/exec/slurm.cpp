#include "tuner/exec/slurm.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <tuple>

#include "knobs/error.h"
#include "tuner/exec/subprocess.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

std::string env_or(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

/// The leading integer of Slurm's counts ("2", "2(x3)", "gpu:2" → 2 after the last ':').
int leading_count(std::string s) {
  if (const auto colon = s.rfind(':'); colon != std::string::npos) s = s.substr(colon + 1);
  try {
    return std::stoi(s);
  } catch (const std::exception&) {
    return 0;
  }
}

/// Slurm's per-node CPU list ("2(x3),1"): the CPUs of all the nodes; the most on one node in `most`.
int cpus_per_node(const std::string& list, int& most) {
  int total = 0;
  std::istringstream parts(list);
  for (std::string part; std::getline(parts, part, ',');) {
    const int n = std::atoi(part.c_str());
    const auto x = part.find("(x");
    total += n * (x == std::string::npos ? 1 : std::atoi(part.c_str() + x + 2));
    most = std::max(most, n);
  }
  return total;
}

/// A command's stdout ("" when it cannot run).
std::string output_of(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
  }
  return out;
}

/// Where the task ran, written by the task itself before it execs the worker: host, CPU list, GPUs
/// (read back by the executor into the trial's placement).
const char* kWhere =
    "printf '%s\\t%s\\t%s\\n' \"$(hostname -s)\" \"$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)\" "
    "\"${CUDA_VISIBLE_DEVICES:-}\" > \"$AUTOTUNE_WHERE.${SLURM_PROCID:-0}\"";

const char* kRendezvousPort =
    "MASTER_PORT=${MASTER_PORT:-$((20000 + (${SLURM_JOB_ID:-0} * 131 + ${SLURM_STEP_ID:-0} * 7) % 20000))}; export MASTER_PORT";

/// A job's worker exit status, in the trial's folder (Slot::exit_file).
const char* kJobExitFile = "job.exit";

std::string trial_name(const std::string& run_name, const std::string& dir) {
  return fmt::format("autotune-{}-{}", run_name, fs::path(dir).filename().string());
}

/// scancel's every step (slurm-steps) or job (slurm-jobs) in the queue whose name `wanted` accepts; how many.
int scancel_where(bool steps, const std::function<bool(const std::string& name)>& wanted) {
  // Steps: "JOBID.STEPID NAME"; jobs: "JOBID NAME".
  const std::string list = output_of(steps ? "squeue -h -s -o '%i %j' 2>/dev/null" : "squeue -h -o '%i %j' 2>/dev/null");
  std::istringstream in(list);
  int n = 0;
  for (std::string id, name; in >> id >> name;)
    if (wanted(name) && std::system(("scancel " + shell_quote(id) + " >/dev/null 2>&1").c_str()) == 0) ++n;
  return n;
}

/// The nodes this run lost (Slot::lost), shared by its slots: every later trial excludes them.
struct LostNodes {
  std::mutex m;
  std::vector<std::string> nodes;
  void add(const std::string& n) {
    std::lock_guard<std::mutex> l(m);
    if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  }
  std::string exclude() {  // "--exclude=a,b", "" when none
    std::lock_guard<std::mutex> l(m);
    std::string s;
    for (const auto& n : nodes) s += (s.empty() ? "--exclude=" : ",") + n;
    return s;
  }
};

/// `KEY=value` of `scontrol show job -o` ("" when absent).
std::string field(const std::string& line, const std::string& key) {
  const std::string k = " " + key + "=";
  const auto at = (" " + line).find(k);
  if (at == std::string::npos) return "";
  const auto from = at + k.size() - 1;
  return line.substr(from, line.find(' ', from) - from);
}

/// Why a wrapped trial that left no result ended, when a node failed under it: srun's "Node failure on X" in the
/// trial's stderr (a step's, or a job's srun for several ranks); for a job, Slurm's NODE_FAIL / BOOT_FAIL state.
std::string node_lost(bool steps, const fs::path& dir) {
  std::ifstream err(dir / "stderr.log");
  for (std::string line; std::getline(err, line);)
    if (const auto at = line.find("Node failure on "); at != std::string::npos) {
      std::string node = line.substr(at + 16);
      node.erase(node.find_last_not_of(" \t\r") + 1);
      return node + "\t" + "srun: Node failure on " + node;
    }
  if (steps) return "";
  std::string id;
  std::ifstream(dir / "stdout.log") >> id;  // sbatch --parsable: "ID" or "ID;cluster"
  id = id.substr(0, id.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) return "";
  const std::string job = output_of("scontrol -o show job " + shell_quote(id) + " 2>/dev/null");
  const std::string state = field(job, "JobState"), nodes = field(job, "NodeList");
  if ((state != "NODE_FAIL" && state != "BOOT_FAIL") || nodes.empty() || nodes == "(null)") return "";
  return nodes + "\t" + fmt::format("Slurm job {} {} ({})", id, state, field(job, "Reason"));
}

}  // namespace

std::string find_on_path(const std::string& program) {
  std::istringstream in(env_or("PATH", "/usr/bin:/bin"));
  for (std::string d; std::getline(in, d, ':');)
    if (!d.empty() && access((fs::path(d) / program).c_str(), X_OK) == 0) return (fs::path(d) / program).string();
  return "";
}

bool on_path(const std::string& program) { return !find_on_path(program).empty(); }

Allocation current_allocation() {
  Allocation a;
  a.job_id = env_or("SLURM_JOB_ID");
  a.cpus = a.node_cpus = leading_count(env_or("SLURM_CPUS_ON_NODE", env_or("SLURM_JOB_CPUS_PER_NODE")));
  // Several nodes: the CPUs of all of them ("2(x3),1"), each trial a step on one node.
  if (int most = 0, total = cpus_per_node(env_or("SLURM_JOB_CPUS_PER_NODE"), most); total > 0) {
    a.cpus = total;
    a.node_cpus = most;
  }
  a.nodes = std::max(1, leading_count(env_or("SLURM_JOB_NUM_NODES", "1")));
  a.node_mem_mb = leading_count(env_or("SLURM_MEM_PER_NODE"));
  a.mem_mb = a.node_mem_mb * a.nodes;
  if (const std::string g = env_or("SLURM_GPUS_ON_NODE"); !g.empty()) {
    a.gpus = leading_count(g) * a.nodes;  // this node's; the nodes of one allocation hold alike
  } else if (const std::string all = env_or("SLURM_GPUS"); !all.empty()) {
    a.gpus = leading_count(all);
  } else if (const std::string jg = env_or("SLURM_JOB_GPUS"); !jg.empty()) {
    a.gpus = 1 + static_cast<int>(std::count(jg.begin(), jg.end(), ','));
  } else if (!a.job_id.empty()) {
    // salloc --gres=gpu:N sets no GPU variable in the allocation's shell: scontrol's JOB_GRES=gpu:N says it.
    std::istringstream in(output_of("scontrol -d show job " + shell_quote(a.job_id) + " 2>/dev/null"));
    for (std::string tok; in >> tok;)
      if (tok.rfind("JOB_GRES=", 0) == 0) {
        std::istringstream list(tok.substr(9));
        for (std::string g; std::getline(list, g, ',');)
          if (g.rfind("gpu", 0) == 0) a.gpus += leading_count(g);
      }
  }
  return a;
}

std::string slurm_run_name(const std::string& out_dir) {
  const std::string p = fs::absolute(out_dir).lexically_normal().string();
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: short, stable, no dependency
  for (unsigned char c : p) h = (h ^ c) * 1099511628211ULL;
  return fmt::format("{:08x}", static_cast<std::uint32_t>(h ^ (h >> 32)));
}

int cancel_leftovers(bool steps, const std::string& run_name) {
  const std::string prefix = fmt::format("autotune-{}-", run_name);
  return scancel_where(steps, [&](const std::string& name) { return name.rfind(prefix, 0) == 0; });
}

/// Each trial's CPUs, GPUs and memory (MB): the options', else the allocation's share (steps) or one CPU and 1 GB
/// (jobs). One-line UsageErrors for steps outside an allocation or an allocation smaller than the slots ask for.
static std::tuple<int, int, std::int64_t> trial_resources(const SlurmOptions& o) {
  int cpus = o.cpus_per_trial, gpus = o.gpus_per_trial;
  std::int64_t mem = o.mem_mb;
  if (o.steps) {
    const Allocation a = current_allocation();
    if (a.job_id.empty())
      throw UsageError("--executor slurm-steps runs trials as steps of an allocation, and this process is in none (no "
                       "SLURM_JOB_ID); allowed: run autotune inside salloc or an sbatch script, or use --executor slurm-jobs");
    if (cpus <= 0) cpus = std::min(a.cpus / o.slots, std::max(1, a.node_cpus));  // a step runs on one node
    if (gpus < 0) gpus = a.gpus >= o.slots ? 1 : 0;
    if (mem <= 0) mem = a.mem_mb > 0 ? std::min(a.mem_mb / o.slots, a.node_mem_mb) : 0;
    const std::string wants = fmt::format("{} slots × ({} CPU{}, {} GPU{}{})", o.slots, cpus, cpus == 1 ? "" : "s", gpus,
                                          gpus == 1 ? "" : "s", mem > 0 ? fmt::format(", {} MB", mem) : "");
    const std::string has = fmt::format("allocation {} holds {} CPUs, {} GPUs{}{}", a.job_id, a.cpus, a.gpus,
                                        a.mem_mb > 0 ? fmt::format(", {} MB", a.mem_mb) : "",
                                        a.nodes > 1 ? fmt::format(" over {} nodes", a.nodes) : "");
    if (cpus < 1 || cpus * o.slots > a.cpus || gpus * o.slots > a.gpus || (a.mem_mb > 0 && mem * o.slots > a.mem_mb))
      throw UsageError(fmt::format("the allocation is smaller than the trials ask for: {} but the {}; allowed: at most {} slot(s) of "
                                   "{} CPU{} here, or a larger allocation (salloc -c/--gres/--mem)",
                                   wants, has, std::max(1, a.cpus / std::max(1, cpus)), std::max(1, cpus),
                                   std::max(1, cpus) == 1 ? "" : "s"));
  } else {
    if (cpus <= 0) cpus = 1;
    if (gpus < 0) gpus = 0;
    if (mem <= 0) mem = 1024;
  }
  return {cpus, gpus, mem};
}

double slurm_seconds_left() {
  const std::string id = env_or("SLURM_JOB_ID");
  if (id.empty() || !on_path("squeue")) return -1;
  std::string left;
  std::istringstream(output_of("squeue -h -j " + shell_quote(id) + " -o %L 2>/dev/null")) >> left;
  // "[D-]HH:MM:SS", "MM:SS", "SS"; "UNLIMITED", "NOT_SET", "INVALID" mean no limit to fit
  int days = 0;
  if (const auto dash = left.find('-'); dash != std::string::npos) {
    days = leading_count(left.substr(0, dash));
    left = left.substr(dash + 1);
  }
  if (left.empty() || left.find_first_not_of("0123456789:") != std::string::npos) return -1;
  double s = 0;
  std::istringstream parts(left);
  for (std::string p; std::getline(parts, p, ':');) s = s * 60 + std::stod(p.empty() ? "0" : p);
  return days * 86400.0 + s;
}

namespace {

/// The value of `--long=V`, `--long V`, `-sV` or `-s V` among the words of `cmd` ("" when absent).
std::string option_value(const std::string& cmd, const std::string& long_name, const std::string& short_name) {
  std::istringstream in(cmd);
  std::vector<std::string> w;
  for (std::string t; in >> t;) w.push_back(t);
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i].rfind(long_name + "=", 0) == 0) return w[i].substr(long_name.size() + 1);
    if ((w[i] == long_name || w[i] == short_name) && i + 1 < w.size()) return w[i + 1];
    if (w[i].size() > short_name.size() && w[i].rfind(short_name, 0) == 0 && w[i][1] != '-') return w[i].substr(short_name.size());
  }
  return "";
}

}  // namespace

std::string launcher_overflows_allocation(const std::string& launcher, int ranks) {
  const std::string job = env_or("SLURM_JOB_ID");
  std::string cmd = launcher;
  for (std::string::size_type p; (p = cmd.find("{ranks}")) != std::string::npos;) cmd.replace(p, 7, std::to_string(ranks));
  if (job.empty() || cmd.find("srun") == std::string::npos) return "";
  const int nodes = leading_count(env_or("SLURM_JOB_NUM_NODES", env_or("SLURM_NNODES", "1")));
  const std::string where = env_or("SLURM_JOB_NODELIST", env_or("SLURM_NODELIST"));
  const std::string holds = fmt::format("allocation {} holds {} node{}{}", job, nodes, nodes == 1 ? "" : "s",
                                        where.empty() ? "" : " (" + where + ")");
  if (const int asked = leading_count(option_value(cmd, "--nodes", "-N")); asked > nodes)
    return fmt::format("--launcher '{}' asks srun for {} nodes but the {}; allowed: --nodes up to {}, or a larger "
                       "allocation (salloc -N)", launcher, asked, holds, nodes);
  // Without --overcommit srun needs one of the allocation's tasks (a CPU each when no -n was given) per rank.
  if (cmd.find("--overcommit") != std::string::npos || option_value(cmd, "--overcommit", "-O") != "") return "";
  int tasks = leading_count(env_or("SLURM_NTASKS"));
  if (int most = 0; tasks <= 0) tasks = cpus_per_node(env_or("SLURM_JOB_CPUS_PER_NODE"), most);
  if (tasks > 0 && ranks > tasks)
    return fmt::format("ranks={} asks srun for {} tasks but the {} and {} task{}; allowed: ranks up to {}, --overcommit in "
                       "the launcher, or a larger allocation (salloc -n)", ranks, ranks, holds, tasks, tasks == 1 ? "" : "s",
                       tasks);
  return "";
}

int cancel_named(const std::string& name) {
  const auto same = [&](const std::string& n) { return n == name; };
  return scancel_where(false, same) + scancel_where(true, same);
}

std::vector<Slot> plan_slurm_slots(const SlurmOptions& o) {
  const char* mode = o.steps ? "slurm-steps" : "slurm-jobs";
  const char* launcher = o.steps ? "srun" : "sbatch";
  if (!on_path(launcher) || !on_path("scancel") || !on_path("squeue"))
    throw UsageError(fmt::format("--executor {}: {}, scancel and squeue must be on PATH (Slurm's client commands; Debian: "
                                 "slurm-client); allowed without them: --executor local",
                                 mode, launcher));
  if (o.slots < 1) throw UsageError(fmt::format("--parallel {}: a run needs at least one slot; allowed: 1 or more", o.slots));
  int cpus = 0, gpus = 0;
  std::int64_t mem = 0;
  std::tie(cpus, gpus, mem) = trial_resources(o);  // plain variables: the slots' lambdas copy them
  const std::string srun = find_on_path("srun"), sbatch = find_on_path("sbatch");
  const auto lost_nodes = std::make_shared<LostNodes>();
  std::vector<Slot> out;
  for (int i = 0; i < o.slots; ++i) {
    Slot s;
    s.index = i;
    s.threads = cpus;
    const bool steps = o.steps;
    const std::string run = o.run_name;
    const std::vector<std::string> extra = o.extra;
    s.wrap = [=](const std::vector<std::string>& worker_cmd, const std::string& dir, int ranks) {
      const int per_task = std::max(1, cpus / std::max(1, ranks));
      const std::string exclude = lost_nodes->exclude();  // nodes lost earlier in this run
      std::vector<std::string> a;
      const std::string cmd = shell_command(worker_cmd);
      std::string where = fmt::format("AUTOTUNE_WHERE={}; export AUTOTUNE_WHERE; {}", shell_quote((fs::path(dir) / "where").string()), kWhere);
      // The ranks of a data-parallel trial meet on the step's first node (workloads/engine/dist/rendezvous.h), at a port
      // every task derives alike from the job and step ids: a port found free here says nothing of that node.
      if (ranks > 1) where = kRendezvousPort + std::string("; ") + where;
      if (steps) {
        a = {srun, "--exact", fmt::format("--ntasks={}", ranks), fmt::format("--cpus-per-task={}", per_task),
             "--job-name=" + trial_name(run, dir), "--kill-on-bad-exit=1", "--quiet"};
        if (mem > 0) a.push_back(fmt::format("--mem={}M", mem));
        if (gpus > 0) a.push_back(fmt::format("--gpus={}", gpus));
        if (!exclude.empty()) a.push_back(exclude);
        a.insert(a.end(), extra.begin(), extra.end());
        a.insert(a.end(), {"/bin/sh", "-c", where + "; exec " + cmd});
      } else {
        // The job's script: where it runs, then the worker (every rank through srun when ranks > 1). Its stderr
        // goes to the trial's stderr.log, which sbatch itself leaves empty when it succeeds. Its last act writes the
        // worker's exit status (Slot::exit_file), renamed into place whole: the tuner reads it as soon as it is there.
        const fs::path script = fs::path(dir) / "job.sh";
        const std::string exit_file = shell_quote((fs::path(dir) / kJobExitFile).string());
        std::ofstream(script) << "#!/bin/sh\n# written by autotune: one trial as one Slurm job\n"
                              << (ranks > 1 ? "srun --kill-on-bad-exit=1 /bin/sh -c " + shell_quote(where + "; exec " + cmd)
                                            : where + "\n" + cmd)
                              << " 2>>" << shell_quote((fs::path(dir) / "stderr.log").string()) << "\n"
                              << "status=$?\necho $status >" << exit_file << ".part && mv " << exit_file << ".part " << exit_file
                              << "\nexit $status\n";
        // --no-requeue: a job whose node fails is the tuner's to retry (Slot::lost), never rerun by Slurm behind it.
        a = {sbatch, "--parsable", "--wait", "--no-requeue", fmt::format("--ntasks={}", ranks),
             fmt::format("--cpus-per-task={}", per_task), "--job-name=" + trial_name(run, dir), fmt::format("--mem={}M", mem),
             "--output=" + (fs::path(dir) / "job.out").string()};
        if (gpus > 0) a.push_back(fmt::format("--gpus={}", gpus));
        if (!exclude.empty()) a.push_back(exclude);
        a.insert(a.end(), extra.begin(), extra.end());
        a.push_back(script.string());
      }
      return a;
    };
    if (!steps) s.exit_file = kJobExitFile;
    s.cancel = [steps, run](const std::string& dir) {
      const std::string name = trial_name(run, dir);
      scancel_where(steps, [&](const std::string& n) { return n == name; });
    };
    s.lost = [steps, lost_nodes](const std::string& dir) -> std::string {
      const std::string found = node_lost(steps, dir);
      if (found.empty()) return "";
      const auto tab = found.find('\t');
      lost_nodes->add(found.substr(0, tab));
      return fmt::format("node {} lost: {}", found.substr(0, tab), found.substr(tab + 1));
    };
    out.push_back(s);
  }
  return out;
}

}  // namespace autotune
