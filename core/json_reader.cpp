// core/json_reader.cpp — strict JSON object reading with file + JSON-pointer error messages.
#include "core/json_reader.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace fsdpx {

void throw_config_error(const std::string& file, const std::string& path, std::string_view what) {
  throw ConfigError(fmt::format("{}: {}: {}", file, path.empty() ? "/" : path, what));
}

std::string json_type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return fmt::format("the string \"{}\"", j.get<std::string>());
    case nlohmann::json::value_t::boolean: return j.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return fmt::format("the number {}", j.dump());
    default: return "an unsupported value";
  }
}

nlohmann::json parse_json_text(std::string_view text, const std::string& file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the position where parsing stopped; a truncated file stops at its end.
    throw_config_error(file, "/", fmt::format("invalid JSON at byte {} (truncated or malformed)", e.byte));
  }
}

nlohmann::json load_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json_text(buffer.str(), path);
}

JsonObject::JsonObject(const nlohmann::json& j, std::string file, std::string path)
    : j_(&j), file_(std::move(file)), path_(std::move(path)) {
  if (!j.is_object()) throw_config_error(file_, path_, fmt::format("expected an object, got {}", json_type_name(j)));
}

std::string JsonObject::path_of(std::string_view key) const { return fmt::format("{}/{}", path_, key); }

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
  if (!(x > 0)) fail(key, fmt::format("expected a positive number, got {}", j_->at(key).dump()));
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
  if (x < 0) fail(key, fmt::format("expected a number >= 0, got {}", j_->at(key).dump()));
  return x;
}

std::int64_t JsonObject::integer(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_number_integer()) fail(key, fmt::format("expected an integer, got {}", json_type_name(v)));
  return v.get<std::int64_t>();
}

std::int64_t JsonObject::positive_integer(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
    fail(key, fmt::format("expected a positive integer, got {}", json_type_name(v)));
  return v.get<std::int64_t>();
}

std::optional<std::int64_t> JsonObject::optional_positive_integer(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return positive_integer(key);
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
  fail(key, fmt::format("expected one of {}, got \"{}\"", fmt::join(allowed, ", "), s));
}

void JsonObject::finish() const {
  for (const auto& [key, _] : j_->items())
    if (!read_.contains(key)) fail(key, "unknown key (check the spelling; unknown keys are never ignored)");
}

}  // namespace fsdpx
