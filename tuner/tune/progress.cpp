#include "tuner/tune/progress.h"

#include <fmt/format.h>

#include <ostream>

#include "knobs/numbers.h"
#include "tuner/search/stability.h"

namespace autotune {

void Progress::trial(const TrialRecord& rec, const ConfigSummary& s, const std::string& best, const std::string& what_ran) {
  const auto& r = rec.result;
  std::string what = r.status == TrialStatus::ok ? fmt::format("{:>10.0f} samples/s (IQR {:.1f}%)", s.median, 100 * s.rel_iqr)
                                                 : fmt::format("{}: {}", to_string(r.status), r.message);
  if (failed_quiet_host(s) && r.host_load)  // the busy-host guard's verdict on this config (tuner/search/stability.h)
    what += fmt::format(" — host busy: others used {:.2f} of {} CPUs", r.host_load->other_cores, r.host_load->cpus);
  out_ << fmt::format("[{:>3}] {:<9} {:<40} {}  | best {} | {} left\n", rec.id, to_string(rec.kind), what_ran, what,
                      best.empty() ? "-" : best, clock_text(budget_.left()))
       << std::flush;
}

void Progress::line(std::int64_t id, const std::string& s) { out_ << fmt::format("[{:>3}] ", id) << s << "\n" << std::flush; }

void Progress::line(std::int64_t first, std::int64_t last, const std::string& s) {
  if (first == last) return line(first, s);
  out_ << fmt::format("[{}-{}] ", first, last) << s << "\n" << std::flush;
}

void Progress::note(const std::string& s) { out_ << "      " << s << "\n" << std::flush; }

}  // namespace autotune
