// core/json_reader.h — strict reading of JSON objects for configs and plans. Every error names the
// file and the JSON pointer path and says what was expected, on one line, quoting at most a short
// excerpt of the value; unknown keys, duplicate keys and sizes outside their documented range
// (core/input_ranges.h) are errors, so a typo never falls back to a default (nlohmann's own macros
// accept unknown keys and, before 3.12, unknown enum strings). Leaves out schema generation and writing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/input_ranges.h"

namespace fsdpx {

// Deepest nesting of objects and arrays accepted in an input file (fsdpx's own files need 6).
inline constexpr std::size_t kMaxJsonDepth = 64;
// Largest input file read (configs, plans, case files and manifests are kilobytes).
inline constexpr std::uintmax_t kMaxJsonFileBytes = std::uintmax_t{64} << 20;

// Parses `text` as JSON (core/json_parse.cpp). A syntax error, a number beyond double, a duplicate key
// or nesting deeper than kMaxJsonDepth is a ConfigError naming `file` and the path where it stopped.
nlohmann::json parse_json_text(std::string_view text, const std::string& file);
// Reads and parses a file; a missing, unreadable, non-regular or oversized file is a ConfigError.
nlohmann::json load_json_file(const std::string& path);
// One JSON pointer reference token: "~" -> "~0", "/" -> "~1" (RFC 6901).
std::string json_pointer_token(std::string_view key);

// A view of one JSON object at `path` inside `file`. Each getter marks its key as read; finish()
// rejects any key that was never read. Copies are cheap (the json is held by pointer).
class JsonObject {
 public:
  JsonObject(const nlohmann::json& j, std::string file, std::string path = "");

  bool has(std::string_view key) const;
  const nlohmann::json& raw(std::string_view key);  // required, any type

  std::string string(std::string_view key);
  std::optional<std::string> optional_string(std::string_view key);
  bool boolean(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  double number(std::string_view key);
  double positive_number(std::string_view key);
  std::optional<double> optional_positive_number(std::string_view key);
  double non_negative_number(std::string_view key);
  std::int64_t integer(std::string_view key);
  std::int64_t positive_integer(std::string_view key);
  std::optional<std::int64_t> optional_positive_integer(std::string_view key);
  // Sizes and rates within their documented range; the error gives the range.
  std::int64_t integer_in(std::string_view key, IntRange range);
  std::optional<std::int64_t> optional_integer_in(std::string_view key, IntRange range);
  double number_in(std::string_view key, NumberRange range);
  std::optional<double> optional_number_in(std::string_view key, NumberRange range);  // null = absent
  JsonObject object(std::string_view key);
  std::optional<JsonObject> optional_object(std::string_view key);
  // Array at key; each element is visited with its own path.
  std::vector<std::pair<const nlohmann::json*, std::string>> array(std::string_view key);

  // One of `allowed`, e.g. enum names. The error lists the allowed values.
  std::string choice(std::string_view key, std::initializer_list<std::string_view> allowed);

  // Marks keys as known without reading them (documentation-only keys such as "source").
  void ignore(std::string_view key);
  // Throws on the first key that no getter read.
  void finish() const;

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const;
  [[noreturn]] void fail(std::string_view key, std::string_view what) const;

 private:
  const nlohmann::json& get(std::string_view key);
  const nlohmann::json* j_;
  std::string file_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

// "<file>: <path>: <what>" — the one-line format of every input error (control characters escaped,
// an overlong path or text cut).
[[noreturn]] void throw_config_error(const std::string& file, const std::string& path,
                                     std::string_view what);
// Runs fn(); a ConfigError naming `from` as its file ("plan: /training/global_batch: ...", how the
// simulator names the plan it was given) is re-thrown naming `file` instead.
template <class F>
auto with_errors_naming(const std::string& file, std::string_view from, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const ConfigError& e) {
    const std::string_view msg = e.what();
    if (!msg.starts_with(from) || msg.substr(from.size(), 2) != ": ") throw;
    throw ConfigError(file + std::string(msg.substr(from.size())));
  }
}

// The same checks as JsonObject's ranged getters, for values read another way (array elements).
void check_in_range(double value, NumberRange range, const std::string& file, const std::string& path);

// Short description of a JSON value for messages ("an object", "the string \"ab...\"", "the number 3").
std::string json_type_name(const nlohmann::json& j);
// At most `max_chars` characters of the value's compact JSON text, "..." marking a cut; never
// recurses deeper than the cut needs and never throws on invalid UTF-8.
std::string json_excerpt(const nlohmann::json& j, std::size_t max_chars = 60);
// `text` on one line: control characters escaped (\n, \x01), cut to `max_chars` with "...".
std::string one_line(std::string_view text, std::size_t max_chars);

}  // namespace fsdpx
