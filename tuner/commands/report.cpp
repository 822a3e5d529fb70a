// autotune report: every output regenerated from a run's journal.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <ostream>

#include "knobs/error.h"
#include "reports/reporter.h"
#include "tuner/commands/command.h"
#include "tuner/converge/converge.h"
#include "tuner/summary/summarize.h"

namespace autotune::cli {

namespace {

struct ReportArgs {
  std::string dir, out_dir, noise_log;
  bool step_summary = false;
};

int run(const ReportArgs& a, std::ostream& o) {
  if (is_converge_run(a.dir)) {  // a converge folder: converge.md, converge.html, converge.json
    if (!a.noise_log.empty())
      throw UsageError(fmt::format("--noise-log prices a tuning run; {} is a converge run (give the tune folder it came from)", a.dir));
    const ConvergeSummary c = load_converge_summary(a.dir);
    const std::string dest = a.out_dir.empty() ? a.dir : a.out_dir;
    std::filesystem::create_directories(dest);
    print_outputs(write_converge_reports(c, dest), o);
    return 0;
  }
  const RunSummary s = load_run_summary(a.dir, a.noise_log);
  const std::string dest = a.out_dir.empty() ? a.dir : a.out_dir;
  std::filesystem::create_directories(dest);
  print_outputs(write_reports(s, dest), o);
  if (a.step_summary) write_step_summary(s, o);
  return s.winner >= 0 ? 0 : 1;
}

}  // namespace

Command report_command() {
  auto a = std::make_shared<ReportArgs>();
  return {"report", "regenerate best.json, report.md, report.html, results.json and junit.xml from a run's journal",
          [a](CLI::App* c) {
            c->add_option("dir", a->dir, "the run folder (holds journal.sqlite)")->required();
            c->add_option("--out", a->out_dir, "write the outputs here instead of into the run folder");
            c->add_option("--noise-log", a->noise_log,
                          "price a changed batch with this noise log from your own training loop (logger/); it is kept "
                          "beside the run as noise-log.jsonl, where later reports find it");
            c->add_flag("--summary", a->step_summary,
                        "also append report.md to $GITHUB_STEP_SUMMARY (GitHub Actions job summary)");
          },
          [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
