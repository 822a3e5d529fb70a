#include "tuner/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <ostream>
#include <regex>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "tuner/exec/interrupt.h"
#include "tuner/commands/command.h"

namespace autotune {

namespace {

/// "autotune tune: unknown option '--budgt'; allowed: … (did you mean '--budget'?)" for what CLI11
/// left over (allow_extras), or "" when nothing was.
std::string unknown_argument(const cli::Command& cmd, CLI::App* sub) {
  if (sub->remaining().empty()) return "";
  const std::string bad = sub->remaining().front();
  std::vector<std::string> flags;
  for (const CLI::Option* opt : sub->get_options())
    for (const auto& l : opt->get_lnames()) flags.push_back("--" + l);
  const std::string head = bad.substr(0, bad.find('='));
  return fmt::format("autotune {}: unknown {} '{}'; allowed: {}{}\n", cmd.name, bad.rfind("-", 0) == 0 ? "option" : "argument",
                     bad, join(flags), did_you_mean(head, flags));
}

/// CLI11's validator texts in our words: "--reps: Value 0 not in range 1 to 1000" becomes "--reps 0 is not
/// allowed; allowed: 1..1000" (numbers as %g, not 1.000000), and a choice check names the choices.
std::string tidy_cli11_message(const std::string& what) {
  static const std::regex range(R"(^(--[\w-]+): Value (\S+) not in range (\S+) to (\S+)$)");
  static const std::regex member(R"(^(--[\w-]+): (\S+) not in \{(.*)\}$)");
  auto num = [](const std::string& s) {
    try {
      return fmt::format("{:g}", std::stod(s));
    } catch (const std::exception&) {
      return s;
    }
  };
  static const std::regex ours(R"(^(--[\w-]+): (\S+ is .*)$)");  // our own validators' words, after CLI11's "--flag: "
  std::smatch m;
  if (std::regex_match(what, m, ours)) return m[1].str() + " " + m[2].str();
  if (std::regex_match(what, m, range))
    return fmt::format("{} {} is not allowed; allowed: {}..{}", m[1].str(), m[2].str(), num(m[3]), num(m[4]));
  if (std::regex_match(what, m, member))
    return fmt::format("{} '{}' is not allowed; allowed: {}", m[1].str(), m[2].str(), std::regex_replace(m[3].str(), std::regex(","), ", "));
  return what;
}

/// Every numeric option of `sub` refuses what CLI11 would silently take: a float that is not finite (nan, inf: it
/// passes any range check) and an integer beyond its type (CLI11 saturates 99999999999999999999 to the largest one).
/// A text that is no number at all is left to CLI11, which names it.
void guard_numbers(CLI::App* sub) {
  const auto integer = [](auto bound) {
    using T = decltype(bound);
    return CLI::Validator(
        [](std::string& text) -> std::string {
          T v{};
          const char* end = text.data() + text.size();
          const auto [ptr, ec] = std::from_chars(text.data(), end, v);
          if (ec == std::errc::result_out_of_range && ptr == end)
            return fmt::format("{} is out of range; allowed: {}..{}", text, std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
          return "";
        },
        "", "");
  };
  for (CLI::Option* opt : sub->get_options()) {
    const std::string type = opt->get_type_name();  // "FLOAT", or "FLOAT:in [0, 1]" with a range check
    const auto is = [&](const char* t) { return type.rfind(t, 0) == 0 && (type.size() == std::strlen(t) || type[std::strlen(t)] == ':'); };
    if (is("FLOAT"))
      opt->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double v = 0;
            try {
              v = std::stod(text);
            } catch (const std::exception&) {
              return "";
            }
            return std::isfinite(v) ? "" : fmt::format("{} is not a finite number; allowed: a finite number", text);
          },
          "", ""));
    else if (is("INT"))
      opt->check(integer(std::int64_t{}));
    else if (is("UINT"))
      opt->check(integer(std::uint64_t{}));
  }
}

/// Runs one command; its errors become the exit status: 2 for bad input, 1 for a failure at run time.
int run_command(const cli::Command& cmd, std::ostream& out, std::ostream& err) {
  try {
    return cmd.run(out);
  } catch (const Interrupted& e) {  // a check, trial or profile stopped by SIGINT/SIGTERM: no worker is left
    err << fmt::format("autotune {}: {}; its running worker was stopped\n", cmd.name, e.what());
    return e.exit_status();
  } catch (const UsageError& e) {
    err << fmt::format("autotune {}: {}\n", cmd.name, e.what());
    return 2;
  } catch (const std::exception& e) {
    err << fmt::format("autotune {}: error: {}\n", cmd.name, e.what());
    return 1;
  }
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"autotune: finds the fastest stable way to train your PyTorch model on this machine"};
  app.name("autotune");
  app.add_flag("--version", "print autotune's version and the Python, torch and CUDA its workers run with");  // run above
  app.require_subcommand(1);
  const std::vector<cli::Command> commands = {cli::tune_command(),    cli::check_command(),    cli::trial_command(),   cli::apply_command(),
                                              cli::profile_command(), cli::report_command(),   cli::converge_command(),   cli::lr_sweep_command(), cli::memory_command(),
                                              cli::prepare_data_command(),
                                              cli::knobs_command(),   cli::workloads_command()};
  std::vector<std::string> names;
  std::vector<CLI::App*> subs;
  for (const auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    sub->allow_extras();  // unknown flags are reported below, with a did-you-mean
    c.setup(sub);
    guard_numbers(sub);
    subs.push_back(sub);
    names.push_back(c.name);
  }
  if (args.size() == 1 && args[0] == "--version") return cli::version(out);
  // An unknown command gets the commands and a did-you-mean (CLI11 would say "arguments were not expected").
  if (!args.empty() && args[0].rfind("-", 0) != 0 && std::find(names.begin(), names.end(), args[0]) == names.end()) {
    err << fmt::format("autotune: unknown command '{}'; commands: {}{}\n", args[0], join(names), did_you_mean(args[0], names));
    return 2;
  }
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes a reversed vector
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help on a subcommand
    if (args.empty() || args[0].rfind("-", 0) == 0) {
      err << fmt::format("autotune: a command is required; commands: {} (autotune COMMAND --help)\n", join(names));
      return 2;
    }
    err << fmt::format("autotune {}: {}\n", args[0], tidy_cli11_message(e.what()));
    return 2;
  }
  for (size_t i = 0; i < commands.size(); ++i) {
    if (!subs[i]->parsed()) continue;
    if (const std::string bad = unknown_argument(commands[i], subs[i]); !bad.empty()) {
      err << bad;
      return 2;
    }
    // The README's commands are checked by a test without running them (tests/docs/readme_commands_test.py): the
    // whole command line is parsed and validated as above, then nothing runs.
    if (const char* only = std::getenv("AUTOTUNE_PARSE_ONLY"); only != nullptr && std::strcmp(only, "1") == 0) {
      out << fmt::format("autotune {}: the command line parses (AUTOTUNE_PARSE_ONLY=1: nothing was run)\n", commands[i].name);
      return 0;
    }
    return run_command(commands[i], out, err);
  }
  return 2;
}

}  // namespace autotune
