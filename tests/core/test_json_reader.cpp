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

// Issue 15, item 1: a value nested 65,000 deep crashed with a stack overflow while the message printed it.
TEST_CASE("nesting deeper than kMaxJsonDepth is an error at parse time, at any depth") {
  for (std::size_t depth : {kMaxJsonDepth + 1, std::size_t{65000}, std::size_t{1000000}}) {
    const std::string text = "{\"name\": " + std::string(depth, '[') + std::string(depth, ']') + "}";
    const auto msg = error_of([&] { parse_json_text(text, "deep.json"); });
    check_message(msg, "deep.json", "/name/0/0");
    CHECK(msg.find("nesting deeper than") != std::string::npos);
    CHECK(msg.size() < 1000);
  }
  const std::string ok = "{\"a\": " + std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']') + "}";
  CHECK_NOTHROW(parse_json_text(ok, "ok.json"));
}

// Item 8: nlohmann keeps the last of two equal keys; loading is strict, so a duplicate is an error.
TEST_CASE("a duplicate key is an error naming its path, at any depth") {
  auto msg = error_of([] { parse_json_text(R"({"layers": 32, "layers": 33})", "dup.json"); });
  check_message(msg, "dup.json", "/layers");
  CHECK(msg.find("duplicate key") != std::string::npos);
  msg = error_of([] { parse_json_text(R"({"a": [{"x": 1}, {"y": 1, "y": 2}]})", "dup.json"); });
  check_message(msg, "dup.json", "/a/1/y");
  // Equal keys in different objects are fine.
  CHECK_NOTHROW(parse_json_text(R"({"a": {"x": 1}, "b": {"x": 1}, "x": [{"x": 2}, {"x": 3}]})", "ok.json"));
}

// Item 7: "1e309" printed [json.exception.out_of_range.406] with neither file nor path.
TEST_CASE("a number beyond double names the file and the path") {
  auto msg = error_of([] { parse_json_text(R"({"name": "x", "layers": 1e309})", "big.json"); });
  check_message(msg, "big.json", "/layers");
  CHECK(msg.find("out of range") != std::string::npos);
  msg = error_of([] { parse_json_text(R"({"curve": [[1, 0.5], [2, -1e400]]})", "big.json"); });
  check_message(msg, "big.json", "/curve/1/1");
  // A syntax error deep inside names where parsing stopped.
  check_message(error_of([] { parse_json_text(R"({"a": {"b": [1, 2, x]}})", "syn.json"); }), "syn.json", "/a/b/2");
}

// Item 1 and 9: messages quote a short single-line excerpt, whatever the value holds.
TEST_CASE("messages quote at most a short single-line excerpt of a value or key") {
  const nlohmann::json j = {{"arch", "lla\nma"},
                            {"name", std::string(100000, 'x')},
                            {"list", nlohmann::json::array({std::string(100000, 'y'), 1, 2})},
                            {std::string(5000, 'k') + "\n", 1}};
  JsonObject o(j, "m.json");
  auto msg = error_of([&] { o.choice("arch", {"llama", "gpt"}); });
  check_message(msg, "m.json", "/arch");
  CHECK(msg.find("lla\\nma") != std::string::npos);  // the newline is shown escaped
  msg = error_of([&] { o.positive_integer("name"); });
  check_message(msg, "m.json", "/name");
  CHECK(msg.size() < 300);
  CHECK(json_excerpt(j["list"]).size() <= 63);
  o.string("arch");
  o.string("name");
  o.ignore("list");
  msg = error_of([&] { o.finish(); });  // the unknown 5,000-character key with a newline
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(msg.size() < 1000);
  CHECK(one_line("a\tb\x01", 100) == "a\\tb\\x01");
  CHECK(one_line("abcdef", 3) == "abc...");
  CHECK(one_line("ab\xc3\xa9", 3) == "ab...");  // never cuts inside a UTF-8 character
  CHECK(json_excerpt(nlohmann::json("\xff\xfe")).find('"') == 0);  // invalid UTF-8 does not throw
}

// Items 2 and 9: denormals passed the "positive" check and printed inf results.
TEST_CASE("ranged getters and positive numbers reject denormals, out-of-range values and wrapped integers") {
  const auto j = nlohmann::json::parse(
      R"({"den": 5e-324, "tiny": 1e-300, "big": 18446744073709551615, "ok": 7, "f": 0.5, "n": null})");
  JsonObject o(j, "r.json");
  auto msg = error_of([&] { o.positive_number("den"); });
  check_message(msg, "r.json", "/den");
  CHECK(msg.find("at least") != std::string::npos);
  check_message(error_of([&] { o.number_in("tiny", {1e-3, 1e6}); }), "r.json", "/tiny");
  check_message(error_of([&] { o.integer("big"); }), "r.json", "/big");
  check_message(error_of([&] { o.positive_integer("big"); }), "r.json", "/big");
  msg = error_of([&] { o.integer_in("big", {1, 2048}); });
  check_message(msg, "r.json", "/big");
  CHECK(msg.find("[1, 2048]") != std::string::npos);
  check_message(error_of([&] { o.integer_in("ok", {1, 6}); }), "r.json", "/ok");
  check_message(error_of([&] { o.integer_in("f", {0, 6}); }), "r.json", "/f");
  CHECK(o.integer_in("ok", {1, 7}) == 7);
  CHECK(o.number_in("f", {0.5, 0.5}) == 0.5);
  CHECK(!o.optional_number_in("n", {1, 2}).has_value());
  CHECK(!o.optional_integer_in("absent", {1, 2}).has_value());
}

TEST_CASE("a directory or an oversized file is refused before reading") {
  const std::string data = FSDPX_TEST_DATA_DIR;
  auto msg = error_of([&] { load_json_file(data); });
  CHECK(msg.find("not a regular file") != std::string::npos);
}

}  // namespace fsdpx
