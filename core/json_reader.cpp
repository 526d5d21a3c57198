// core/json_reader.cpp — strict JSON object reading with file + JSON-pointer error messages, ranged
// getters, and the one-line excerpts messages quote. Parsing itself is core/json_parse.cpp.
#include "core/json_reader.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace fsdpx {

namespace {

// Longest path and text a message carries: a 100 KB key or value is quoted as an excerpt.
constexpr std::size_t kMaxPathChars = 200;
constexpr std::size_t kMaxWhatChars = 600;

void excerpt_into(const nlohmann::json& j, std::string& out, std::size_t limit) {
  const auto dump_string = [](std::string_view s, std::size_t n) {
    return nlohmann::json(std::string(s.substr(0, n))).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (j.is_object() || j.is_array()) {
    out += j.is_object() ? '{' : '[';
    bool first = true;
    for (auto it = j.begin(); it != j.end() && out.size() <= limit; ++it, first = false) {
      if (!first) out += ',';
      if (j.is_object()) out += dump_string(it.key(), limit) + ":";
      excerpt_into(it.value(), out, limit);
    }
    out += j.is_object() ? '}' : ']';
  } else if (j.is_string()) {
    out += dump_string(j.get_ref<const std::string&>(), limit);
  } else {
    out += j.dump();
  }
}

}  // namespace

std::string one_line(std::string_view text, std::size_t max_chars) {
  std::string out;
  std::size_t i = 0;
  for (; i < text.size() && out.size() < max_chars; ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u == '\n') out += "\\n";
    else if (u == '\r') out += "\\r";
    else if (u == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += text[i];
  }
  if (i == text.size()) return out;
  // Cut at a character boundary: bytes >= 0x80 are copied as they are, so a UTF-8 sequence cut in the
  // middle is removed whole.
  while (i > 0 && !out.empty() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) {
    out.pop_back();
    --i;
  }
  return out + "...";
}

std::string json_excerpt(const nlohmann::json& j, std::size_t max_chars) {
  std::string out;
  excerpt_into(j, out, max_chars);
  return one_line(out, max_chars);
}

void throw_config_error(const std::string& file, const std::string& path, std::string_view what) {
  throw ConfigError(
      fmt::format("{}: {}: {}", file, path.empty() ? "/" : one_line(path, kMaxPathChars), one_line(what, kMaxWhatChars)));
}

void check_in_range(double value, NumberRange range, const std::string& file, const std::string& path) {
  if (!(value >= range.min && value <= range.max))
    throw_config_error(file, path,
                       fmt::format("expected a number in [{}, {}] (docs/input-ranges.md), got {}", range.min,
                                   range.max, value));
}

std::string json_type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return fmt::format("the string {}", json_excerpt(j));
    case nlohmann::json::value_t::boolean: return j.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return fmt::format("the number {}", j.dump());
    default: return "an unsupported value";
  }
}

JsonObject::JsonObject(const nlohmann::json& j, std::string file, std::string path)
    : j_(&j), file_(std::move(file)), path_(std::move(path)) {
  if (!j.is_object()) throw_config_error(file_, path_, fmt::format("expected an object, got {}", json_type_name(j)));
}

std::string JsonObject::path_of(std::string_view key) const {
  return fmt::format("{}/{}", path_, json_pointer_token(key));
}

void JsonObject::fail(std::string_view key, std::string_view what) const {
  throw_config_error(file_, path_of(key), what);
}

bool JsonObject::has(std::string_view key) const { return j_->contains(key); }

namespace {

// Levenshtein distance, for "did you mean" hints on misspelled keys.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

const nlohmann::json& JsonObject::get(std::string_view key) {
  auto it = j_->find(key);
  if (it == j_->end()) {
    // A required key is often missing because it is misspelled: name the sibling it probably is.
    for (const auto& [other, _] : j_->items())
      if (!read_.contains(other) && edit_distance(other, key) <= 2)
        fail(key, fmt::format("missing required field (found unknown key '{}': a misspelling?)", other));
    fail(key, "missing required field");
  }
  read_.insert(std::string(key));
  return *it;
}

const nlohmann::json& JsonObject::raw(std::string_view key) { return get(key); }

void JsonObject::ignore(std::string_view key) { read_.insert(std::string(key)); }

std::string JsonObject::string(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", json_type_name(v)));
  return v.get<std::string>();
}

std::optional<std::string> JsonObject::optional_string(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return string(key);
}

bool JsonObject::boolean(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", json_type_name(v)));
  return v.get<bool>();
}

std::optional<bool> JsonObject::optional_boolean(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return boolean(key);
}

double JsonObject::number(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_number()) fail(key, fmt::format("expected a number, got {}", json_type_name(v)));
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, "expected a finite number");
  return x;
}

double JsonObject::positive_number(std::string_view key) {
  const double x = number(key);
  // A denormal is below every measurable size or rate and turns into inf when divided by.
  if (!(x >= DBL_MIN)) fail(key, fmt::format("expected a positive number (at least {}), got {}", DBL_MIN, x));
  return x;
}

std::optional<double> JsonObject::optional_positive_number(std::string_view key) {
  if (!has(key) || j_->at(key).is_null()) {
    if (has(key)) ignore(key);
    return std::nullopt;
  }
  return positive_number(key);
}

double JsonObject::non_negative_number(std::string_view key) {
  const double x = number(key);
  if (x < 0) fail(key, fmt::format("expected a number >= 0, got {}", x));
  return x;
}

std::int64_t JsonObject::integer(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_number_integer()) fail(key, fmt::format("expected an integer, got {}", json_type_name(v)));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
    fail(key, fmt::format("expected an integer of at most {}, got {}", INT64_MAX, v.dump()));
  return v.get<std::int64_t>();
}

std::int64_t JsonObject::positive_integer(std::string_view key) {
  const auto& v = get(key);
  const bool positive =
      v.is_number_integer() && (v.is_number_unsigned() ? v.get<std::uint64_t>() > 0 : v.get<std::int64_t>() > 0);
  if (!positive)
    fail(key, fmt::format("expected a positive integer, got {}", json_type_name(v)));
  return integer(key);
}

std::optional<std::int64_t> JsonObject::optional_positive_integer(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return positive_integer(key);
}

std::int64_t JsonObject::integer_in(std::string_view key, IntRange range) {
  const auto& v = get(key);
  // nlohmann reads every integer >= 0 as unsigned; one beyond INT64_MAX must not wrap into range.
  const bool fits = v.is_number_integer() && (!v.is_number_unsigned() || v.get<std::uint64_t>() <= INT64_MAX);
  const bool in = fits && v.get<std::int64_t>() >= range.min && v.get<std::int64_t>() <= range.max;
  if (!in)
    fail(key, fmt::format("expected an integer in [{}, {}] (docs/input-ranges.md), got {}", range.min, range.max,
                          json_type_name(v)));
  return v.get<std::int64_t>();
}

std::optional<std::int64_t> JsonObject::optional_integer_in(std::string_view key, IntRange range) {
  if (!has(key)) return std::nullopt;
  return integer_in(key, range);
}

double JsonObject::number_in(std::string_view key, NumberRange range) {
  const double x = number(key);
  check_in_range(x, range, file_, path_of(key));
  return x;
}

std::optional<double> JsonObject::optional_number_in(std::string_view key, NumberRange range) {
  if (!has(key) || j_->at(key).is_null()) {
    if (has(key)) ignore(key);
    return std::nullopt;
  }
  return number_in(key, range);
}

JsonObject JsonObject::object(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_object()) fail(key, fmt::format("expected an object, got {}", json_type_name(v)));
  return JsonObject(v, file_, path_of(key));
}

std::optional<JsonObject> JsonObject::optional_object(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return object(key);
}

std::vector<std::pair<const nlohmann::json*, std::string>> JsonObject::array(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_array()) fail(key, fmt::format("expected an array, got {}", json_type_name(v)));
  std::vector<std::pair<const nlohmann::json*, std::string>> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.emplace_back(&v[i], fmt::format("{}/{}", path_of(key), i));
  return out;
}

std::string JsonObject::choice(std::string_view key, std::initializer_list<std::string_view> allowed) {
  const std::string s = string(key);
  for (auto a : allowed)
    if (a == s) return s;
  fail(key, fmt::format("expected one of {}, got {}", fmt::join(allowed, ", "), json_excerpt(nlohmann::json(s))));
}

void JsonObject::finish() const {
  for (const auto& [key, _] : j_->items())
    if (!read_.contains(key)) fail(key, "unknown key (check the spelling; unknown keys are never ignored)");
}

}  // namespace fsdpx
