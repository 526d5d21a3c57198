// tests/core/test_json_reader.cpp — the strict JSON reader: every class of bad input (unknown key, wrong
// type, missing field, non-positive size, truncated file, missing file) is a ConfigError whose one-line
// message names the file and the JSON path. Leaves the spec schemas to test_model_spec/test_gpu_cluster_spec.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/json_reader.h"

namespace fsdpx {
namespace {

// The ConfigError message thrown by f, or "" when f does not throw.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

void check_message(const std::string& msg, const std::string& file, const std::string& path) {
  INFO("message: " << msg);
  CHECK(msg.find(file + ": ") == 0);
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
}

const nlohmann::json kSample = nlohmann::json::parse(R"({
  "name": "x", "layers": 4, "ratio": 0.5, "flag": true,
  "inner": {"size": 3, "kind": "b"}, "list": [1, 2]
})");

}  // namespace

TEST_CASE("JsonObject reads every getter type and accepts a fully read object") {
  JsonObject o(kSample, "s.json");
  CHECK(o.string("name") == "x");
  CHECK(o.positive_integer("layers") == 4);
  CHECK(o.positive_number("ratio") == doctest::Approx(0.5));
  CHECK(o.boolean("flag"));
  JsonObject inner = o.object("inner");
  CHECK(inner.path() == "/inner");
  CHECK(inner.integer("size") == 3);
  CHECK(inner.choice("kind", {"a", "b"}) == "b");
  inner.finish();
  const auto items = o.array("list");
  REQUIRE(items.size() == 2);
  CHECK(items[1].second == "/list/1");
  CHECK(!o.optional_string("absent").has_value());
  CHECK_NOTHROW(o.finish());
}

TEST_CASE("unknown key is an error naming the file and the key's path") {
  JsonObject o(kSample, "s.json");
  o.string("name");
  o.integer("layers");
  o.number("ratio");
  o.boolean("flag");
  o.ignore("list");
  // "inner" never read: the typo case (a key the schema does not know).
  const auto msg = error_of([&] { o.finish(); });
  check_message(msg, "s.json", "/inner");
  CHECK(msg.find("unknown key") != std::string::npos);

  JsonObject inner = JsonObject(kSample, "s.json").object("inner");
  inner.integer("size");
  check_message(error_of([&] { inner.finish(); }), "s.json", "/inner/kind");
}

TEST_CASE("wrong type is an error naming the path, the expected type and the value found") {
  JsonObject o(kSample, "s.json");
  auto msg = error_of([&] { o.positive_integer("name"); });
  check_message(msg, "s.json", "/name");
  CHECK(msg.find("positive integer") != std::string::npos);
  CHECK(msg.find("\"x\"") != std::string::npos);
  check_message(error_of([&] { o.string("layers"); }), "s.json", "/layers");
  check_message(error_of([&] { o.boolean("ratio"); }), "s.json", "/ratio");
  check_message(error_of([&] { o.object("list"); }), "s.json", "/list");
  check_message(error_of([&] { o.array("inner"); }), "s.json", "/inner");
  // A fractional size is not an integer.
  check_message(error_of([&] { o.positive_integer("ratio"); }), "s.json", "/ratio");
  // A choice outside the allowed set lists the allowed values.
  msg = error_of([&] { JsonObject(kSample, "s.json").object("inner").choice("kind", {"a", "c"}); });
  check_message(msg, "s.json", "/inner/kind");
  CHECK(msg.find("a, c") != std::string::npos);
}

TEST_CASE("missing field and non-positive size name the path") {
  JsonObject o(kSample, "s.json");
  auto msg = error_of([&] { o.positive_integer("hidden"); });
  check_message(msg, "s.json", "/hidden");
  CHECK(msg.find("missing") != std::string::npos);

  const auto j = nlohmann::json::parse(R"({"zero": 0, "neg": -2, "negf": -0.5})");
  JsonObject n(j, "n.json");
  check_message(error_of([&] { n.positive_integer("zero"); }), "n.json", "/zero");
  check_message(error_of([&] { n.positive_integer("neg"); }), "n.json", "/neg");
  check_message(error_of([&] { n.positive_number("negf"); }), "n.json", "/negf");
  check_message(error_of([&] { n.non_negative_number("negf"); }), "n.json", "/negf");
  CHECK(n.non_negative_number("zero") == 0);
}

TEST_CASE("optional getters: absent gives nullopt, present but invalid is still an error") {
  const auto j = nlohmann::json::parse(R"({"n": null, "bad": "3"})");
  JsonObject o(j, "o.json");
  CHECK(!o.optional_positive_number("n").has_value());  // null = unset
  CHECK(!o.optional_positive_integer("absent").has_value());
  check_message(error_of([&] { o.optional_positive_integer("bad"); }), "o.json", "/bad");
}

TEST_CASE("truncated or malformed JSON text is an error naming the file") {
  const auto msg = error_of([] { parse_json_text(R"({"layers": 4, "hidden": 40)", "t.json"); });
  check_message(msg, "t.json", "/");
  CHECK(msg.find("invalid JSON") != std::string::npos);
  check_message(error_of([] { parse_json_text("", "empty.json"); }), "empty.json", "/");
}

TEST_CASE("a file that is missing, truncated or not an object is an error naming it") {
  const std::string data = FSDPX_TEST_DATA_DIR;
  auto msg = error_of([&] { load_json_file(data + "/bad/does_not_exist.json"); });
  CHECK(msg.find("does_not_exist.json") != std::string::npos);
  CHECK(msg.find("cannot open") != std::string::npos);
  check_message(error_of([&] { load_json_file(data + "/bad/truncated.json"); }), data + "/bad/truncated.json",
                "/");
  const auto arr = nlohmann::json::parse("[1, 2]");
  check_message(error_of([&] { JsonObject(arr, "a.json"); }), "a.json", "/");
}

}  // namespace fsdpx
