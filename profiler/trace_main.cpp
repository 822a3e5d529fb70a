// autotune-trace: the profiler's analysis of a Chrome trace in kineto's conventions (torch.profiler's
// export_chrome_trace, or a trace autotune wrote), printed as the `profile` object of result.json
// (knobs/profile.h). The Python worker runs it on the trace of its traced trial (pyworker/autotune_pyworker/
// traced.py); a user can run it on a torch.profiler trace of their own.
//   autotune-trace analyze TRACE.json [--flops-per-sample F] [--samples-per-step N] [--precision P] [--knobs a,b]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <set>

#include "knobs/profile.h"
#include "profiler/analysis.h"
#include "profiler/kineto_trace.h"

int main(int argc, char** argv) {
  CLI::App app{"autotune-trace: where a traced training step's time goes, from a Chrome trace (torch.profiler / kineto)"};
  app.require_subcommand(1);
  auto* analyze = app.add_subcommand("analyze", "print the profile (JSON, as result.json's `profile`) of a trace");
  std::string path, knobs;
  autotune::prof::AnalysisOptions o;
  analyze->add_option("trace", path, "the trace file (plain JSON)")->required();
  analyze->add_option("--flops-per-sample", o.flops_per_sample, "training FLOPs per sample (MFU; 0: none)")
      ->check(CLI::NonNegativeNumber);
  analyze->add_option("--samples-per-step", o.samples_per_step, "batch × grad_accum")->check(CLI::NonNegativeNumber);
  analyze->add_option("--precision", o.precision, "which peak MFU uses")
      ->check(CLI::IsMember({"fp32", "tf32", "amp_bf16", "amp_fp16"}))
      ->capture_default_str();
  analyze->add_option("--knobs", knobs, "comma-separated knobs that apply where the trace was taken: the verdict names only these");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "autotune-trace: error: " << e.what() << "\n";
    return 2;
  }
  try {
    autotune::ProfileSummary p = autotune::prof::analyze(autotune::prof::read_kineto_trace_file(path), o);
    if (analyze->count("--knobs")) {
      std::set<std::string> allowed;
      for (std::size_t a = 0, b; a <= knobs.size(); a = b + 1) {
        b = knobs.find(',', a);
        if (b == std::string::npos) b = knobs.size();
        if (b > a) allowed.insert(knobs.substr(a, b - a));
      }
      std::vector<std::string> kept;
      for (const auto& k : p.verdict_knobs)
        if (allowed.count(k)) kept.push_back(k);
      p.verdict_knobs = kept;
    }
    p.trace = path;
    std::cout << nlohmann::json(p).dump(1) << "\n";
  } catch (const autotune::prof::TraceFormatError& e) {
    std::cerr << "autotune-trace: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
