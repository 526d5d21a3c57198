// tests/tools/test_cli_numbers.cpp — the strict parser of command-line numbers (tools/cli_numbers.h) on a
// CLI11 app shaped like fsdpx's: unsigned, signed, int, optional and float options are refused for -1 where
// unsigned, an exponent, 2^64, octal and hexadecimal spellings, nan, inf and subnormals, and take plain
// decimal values; cli_range applies a limit of core/input_ranges.h.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cli_numbers.h"

namespace fsdpx {
namespace {

struct Values {
  std::uint64_t seed = 0;
  std::int64_t steps = 0;
  int top = 0;
  std::optional<int> nodes;
  double limit = 0;
};

// Parses `args` after "fsdpx run"; "" on success, else CLI11's message.
std::string parse(const std::vector<std::string>& args, Values& v) {
  CLI::App app;
  CLI::App* sub = app.add_subcommand("run");
  sub->add_option_function<std::uint64_t>("--seed", [&v](std::uint64_t s) { v.seed = s; });
  sub->add_option("--steps", v.steps)->check(cli_range({1, std::int64_t{1} << 40}));
  sub->add_option("--top", v.top);
  sub->add_option("--nodes", v.nodes);
  sub->add_option("--memory-limit", v.limit);
  CHECK(make_numbers_strict(app) == 5);
  std::vector<std::string> argv{"fsdpx", "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  for (std::string& a : argv) ptrs.push_back(a.data());
  try {
    app.parse(int(ptrs.size()), ptrs.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("cli numbers: plain decimal values are taken") {
  Values v;
  REQUIRE(parse({"--seed", "18446744073709551615", "--steps", "7", "--top", "-3", "--nodes", "2", "--memory-limit",
                 "1.5e2"},
                v) == "");
  CHECK(v.seed == UINT64_MAX);
  CHECK(v.steps == 7);
  CHECK(v.top == -3);
  CHECK(v.nodes == 2);
  CHECK(v.limit == 150.0);
}

TEST_CASE("cli numbers: hostile integers are refused naming the option, never wrapped") {
  for (const std::string bad : {"-1", "1e23", "18446744073709551616", "2^64", "010", "0x10", " 7", "+7", "1.0", "",
                                "99999999999999999999999"}) {
    CAPTURE(bad);
    Values v;
    const std::string err = parse({"--seed", bad}, v);
    CHECK(err.find("--seed") != std::string::npos);
    CHECK(v.seed == 0);
  }
  Values v;
  CHECK(parse({"--steps", "1e20"}, v).find("--steps") != std::string::npos);
  CHECK(parse({"--steps", "9223372036854775808"}, v).find("outside the signed 64-bit integers") != std::string::npos);
  CHECK(parse({"--steps", "2199023255552"}, v).find("expected an integer from 1 to 1099511627776") != std::string::npos);
  CHECK(parse({"--top", "4294967296"}, v).find("--top") != std::string::npos);  // beyond int: CLI11's round trip
  CHECK(v.steps == 0);
}

TEST_CASE("cli numbers: floats must be finite and normal") {
  for (const std::string bad : {"nan", "inf", "-inf", "1e309", "1e-320", "0x1p3", "1,5", "abc"}) {
    CAPTURE(bad);
    Values v;
    CHECK(parse({"--memory-limit", bad}, v).find("--memory-limit") != std::string::npos);
  }
  CHECK(check_float_text("0") == "");
  CHECK(check_float_text("-2.5e-3") == "");
  CHECK(check_integer_text("0", false) == "");
  CHECK(check_integer_text("-0", true) == "");
  CHECK(check_integer_text("-1", false) == "expected a non-negative integer (decimal digits), got '-1'");
}

}  // namespace
}  // namespace fsdpx
