// tools/cli_options.h — strict command-line enums (an unknown value is an error listing the allowed ones)
// and the checks that several subcommands share. The names themselves are tools/cli_names.h, which
// does not include CLI11.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cli_names.h"

namespace fsdpx {

// Numeric checks with short messages (CLI11's own range validators print the whole double range).
inline std::string check_number(const std::string& v, bool allow_zero) {
  double x = 0;
  try {
    x = std::stod(v);
  } catch (const std::exception&) {
    return "expected a number, got " + v;
  }
  if (x > 0 || (allow_zero && x == 0)) return {};
  return (allow_zero ? "expected a number >= 0, got " : "expected a positive number, got ") + v;
}
inline const CLI::Validator kPositive([](std::string& v) { return check_number(v, false); }, "POSITIVE");
inline const CLI::Validator kNonNegative([](std::string& v) { return check_number(v, true); }, "NON-NEGATIVE");

// An option whose value must be one of `names`; the error lists them ("--recompute: sometimes not in
// {full,none,selective}") instead of CLI11's internal mapping. `value` is a T, or a std::optional<T>
// that stays empty when the option is left out.
template <typename T, typename Value>
CLI::Option* add_enum_option(CLI::App* sub, const std::string& name, Value& value,
                             const std::map<std::string, T>& names, const std::string& help) {
  std::vector<std::string> keys;
  for (const auto& [k, _] : names) keys.push_back(k);
  return sub->add_option_function<std::string>(name, [&value, &names](const std::string& s) { value = names.at(s); },
                                               help)
      ->check(CLI::IsMember(keys));
}

// -o FILE of the commands whose main output is their report (tools/main_output.h writes it).
inline CLI::Option* add_main_output_option(CLI::App* sub, std::string& path) {
  return sub->add_option("-o,--output", path, "Write the output (text or JSON, as --format) to this file, not stdout");
}

}  // namespace fsdpx
