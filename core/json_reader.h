// core/json_reader.h — strict reading of JSON objects for configs and plans. Every error names the
// file and the JSON pointer path and says what was expected; unknown keys are errors, so a typo never
// falls back to a default (nlohmann's own macros accept unknown keys and, before 3.12, unknown enum
// strings). Leaves out schema generation and writing.
#pragma once

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

namespace fsdpx {

// Parses `text` as JSON; a syntax error (truncated file...) becomes a ConfigError naming `file`.
nlohmann::json parse_json_text(std::string_view text, const std::string& file);
// Reads and parses a file; a missing or unreadable file is a ConfigError.
nlohmann::json load_json_file(const std::string& path);

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

// "<file>: <path>: <what>" — the one-line format of every input error.
[[noreturn]] void throw_config_error(const std::string& file, const std::string& path,
                                     std::string_view what);

// Short description of a JSON value's type for messages ("a string", "a number"...).
std::string json_type_name(const nlohmann::json& j);

}  // namespace fsdpx
