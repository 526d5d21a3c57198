// tools/cli_numbers.cpp — strict text checks of numeric command-line values. See cli_numbers.h.
#include "tools/cli_numbers.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

namespace fsdpx {

namespace {

std::string shown(const std::string& text) { return text.size() > 40 ? text.substr(0, 40) + "..." : text; }

template <typename T>
bool parses_whole(const std::string& text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

}  // namespace

std::string check_integer_text(const std::string& text, bool is_signed) {
  const std::string digits = !text.empty() && text[0] == '-' ? text.substr(1) : text;
  const bool decimal = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos &&
                       (digits.size() == 1 || digits[0] != '0');
  if (!decimal || (!is_signed && text[0] == '-'))
    return fmt::format("expected {} integer (decimal digits), got '{}'", is_signed ? "an" : "a non-negative",
                       shown(text));
  bool fits = false;
  if (is_signed) {
    std::int64_t v = 0;
    fits = parses_whole(text, v);
  } else {
    std::uint64_t v = 0;
    fits = parses_whole(text, v);
  }
  if (!fits)
    return fmt::format("{} is outside the {} 64-bit integers", shown(text), is_signed ? "signed" : "unsigned");
  return {};
}

std::string check_float_text(const std::string& text) {
  double v = 0;
  const bool plain = !text.empty() && text.find_first_not_of("0123456789.eE-") == std::string::npos;
  if (!plain || !parses_whole(text, v)) return fmt::format("expected a decimal number, got '{}'", shown(text));
  if (!std::isfinite(v) || (v != 0 && std::abs(v) < std::numeric_limits<double>::min()))
    return fmt::format("{} is outside the normal double range (about 2.2e-308 to 1.8e308)", shown(text));
  return {};
}

int make_numbers_strict(CLI::App& app) {
  int made = 0;
  for (CLI::Option* opt : app.get_options()) {
    const std::string full = opt->get_type_name();  // "INT", or "INT:POSITIVE" with described validators
    const std::string type = full.substr(0, full.find(':'));
    if (type == "INT" || type == "UINT") {
      const bool is_signed = type == "INT";
      opt->check(CLI::Validator([is_signed](std::string& v) { return check_integer_text(v, is_signed); }, ""));
      ++made;
    } else if (type == "FLOAT") {
      opt->check(CLI::Validator([](std::string& v) { return check_float_text(v); }, ""));
      ++made;
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) made += make_numbers_strict(*sub);
  return made;
}

CLI::Validator cli_range(IntRange range) {
  return CLI::Validator(
      [range](std::string& v) -> std::string {
        std::int64_t x = 0;
        if (!parses_whole(v, x)) return {};  // not an integer: make_numbers_strict's check says so
        if (x >= range.min && x <= range.max) return {};
        return fmt::format("expected an integer from {} to {}, got {}", range.min, range.max, v);
      },
      fmt::format("INT in [{} - {}]", range.min, range.max));
}

}  // namespace fsdpx
