// core/json_parse.cpp — JSON text to a value, strictly: nesting deeper than kMaxJsonDepth and duplicate
// keys are errors (nlohmann keeps the last duplicate silently, and printing or copying a value nested
// 65,000 deep overflows the stack), and every error names the file and the JSON path where parsing
// stopped. The path is tracked through nlohmann's parser callback. Leaves out comments and JSON5.
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "core/json_reader.h"

namespace fsdpx {

namespace {

using nlohmann::json;

// Where the parser is: one frame per open object or array.
class PathTracker {
 public:
  explicit PathTracker(const std::string& file) : file_(file) {}

  bool on_event(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (frames_.size() >= kMaxJsonDepth)
          throw_config_error(file_, path(),
                             fmt::format("nesting deeper than {} levels (no fsdpx input needs more)", kMaxJsonDepth));
        frames_.push_back(Frame{event == json::parse_event_t::object_start, {}, 0, {}});
        break;
      case json::parse_event_t::key: on_key(parsed.get_ref<const std::string&>()); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        element_done();
        break;
      case json::parse_event_t::value: element_done(); break;
    }
    return true;
  }

  // "/a/0/b": the keys and indices of the open containers, RFC 6901 escaped.
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      p += '/';
      p += f.object ? json_pointer_token(f.key) : std::to_string(f.index);
    }
    return p;
  }

 private:
  struct Frame {
    bool object;
    std::string key;    // objects: the key being read
    std::size_t index;  // arrays: the element being read
    std::set<std::string> keys;
  };

  void on_key(const std::string& key) {
    Frame& f = frames_.back();
    f.key = key;
    if (!f.keys.insert(key).second)
      throw_config_error(file_, path(), "duplicate key (each key may appear once in an object)");
  }

  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  const std::string& file_;
  std::vector<Frame> frames_;
};

}  // namespace

std::string json_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& file) {
  if (text.size() > kMaxJsonFileBytes)
    throw_config_error(file, "/", fmt::format("{} bytes, more than the {} MiB an input may have", text.size(),
                                              kMaxJsonFileBytes >> 20));
  PathTracker tracker(file);
  const json::parser_callback_t callback = [&tracker](int, json::parse_event_t event, json& parsed) {
    return tracker.on_event(event, parsed);
  };
  try {
    return json::parse(text, callback);
  } catch (const json::parse_error& e) {
    // e.byte is the position where parsing stopped; a truncated file stops at its end.
    throw_config_error(file, tracker.path(),
                       fmt::format("invalid JSON at byte {} (truncated or malformed)", e.byte));
  } catch (const json::out_of_range&) {
    // nlohmann's only range error while parsing: a number beyond double (out_of_range.406, "1e309").
    throw_config_error(file, tracker.path(), "number out of range (beyond +-1.8e308)");
  }
}

nlohmann::json load_json_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw ConfigError(fmt::format("{}: not a regular file", path));
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxJsonFileBytes)
    throw ConfigError(fmt::format("{}: {} bytes, more than the {} MiB an input file may have", path, size,
                                  kMaxJsonFileBytes >> 20));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw ConfigError(fmt::format("{}: cannot read file", path));
  return parse_json_text(buffer.str(), path);
}

}  // namespace fsdpx
