#include "reports/reporter.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "knobs/protocol.h"
#include "reports/best_json.h"
#include "reports/gbench_json.h"
#include "reports/html.h"
#include "reports/junit.h"
#include "reports/markdown.h"

namespace autotune {

namespace {

template <typename F>
class FnReporter : public Reporter {
 public:
  FnReporter(std::string name, F f) : name_(std::move(name)), f_(std::move(f)) {}
  std::string file_name() const override { return name_; }
  std::string render(const RunSummary& s) const override { return f_(s); }

 private:
  std::string name_;
  F f_;
};

template <typename F>
std::unique_ptr<Reporter> make(std::string name, F f) {
  return std::make_unique<FnReporter<F>>(std::move(name), std::move(f));
}

}  // namespace

std::vector<std::unique_ptr<Reporter>> all_reporters() {
  std::vector<std::unique_ptr<Reporter>> r;
  r.push_back(make("best.json", [](const RunSummary& s) { return render_best_json(s).dump(2) + "\n"; }));
  r.push_back(make("report.md", [](const RunSummary& s) { return render_markdown(s); }));
  r.push_back(make("report.html", [](const RunSummary& s) { return render_html(s); }));
  r.push_back(make("results.json", [](const RunSummary& s) { return render_gbench_json(s).dump(2) + "\n"; }));
  r.push_back(make("junit.xml", [](const RunSummary& s) { return render_junit(s); }));
  return r;
}

std::vector<std::string> write_reports(const RunSummary& s, const std::string& dir) {
  std::vector<std::string> written;
  for (const auto& r : all_reporters()) {
    const std::string path = (std::filesystem::path(dir) / r->file_name()).string();
    write_file_atomic(path, r->render(s));
    written.push_back(path);
  }
  return written;
}

}  // namespace autotune
