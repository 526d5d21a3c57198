// tests/tools/test_format.cpp — tools/format.h's line wrapping: lines within the width break at spaces
// with the continuation indent, a word longer than the width stays whole, trailing spaces and an indent
// as wide as the line neither throw nor loop.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "tools/format.h"

namespace fsdpx {
namespace {

std::size_t widest_line(const std::string& text) {
  std::istringstream in(text);
  std::size_t w = 0;
  for (std::string line; std::getline(in, line);) w = std::max(w, line.size());
  return w;
}

std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " " : "") + std::string("word") + std::to_string(i);
  return s;
}

TEST_CASE("wrap_line keeps every line within the width, continuations indented") {
  const std::string wrapped = wrap_line("  " + words(60), 6, 40);
  CHECK(widest_line(wrapped) <= 40);
  CHECK(wrapped.find("\n      word") != std::string::npos);
  std::string joined = wrapped;
  for (std::size_t p; (p = joined.find("\n      ")) != std::string::npos;) joined.replace(p, 7, " ");
  CHECK(joined == "  " + words(60));  // nothing lost or reordered
}

TEST_CASE("wrap_line: a word longer than the width stays whole; short lines are unchanged") {
  const std::string longword(50, 'x');
  CHECK(wrap_line("a " + longword + " b", 2, 20) == "a\n  " + longword + "\n  b");
  CHECK(wrap_line("short line", 4, 20) == "short line");
}

TEST_CASE("wrap_line: trailing spaces past the width and an indent wider than the line end") {
  CHECK(wrap_line(words(3) + std::string(30, ' '), 2, 20) == words(3));
  const std::string wrapped = wrap_line(words(40), 500, 30);  // the indent is capped at half the width
  CHECK(widest_line(wrapped) <= 30);
}

TEST_CASE("wrap_text wraps each line at its own indent and keeps the line breaks") {
  const std::string text = "head\n  " + words(40) + "\nlast\n";
  const std::string wrapped = wrap_text(text, 50);
  CHECK(widest_line(wrapped) <= 50);
  CHECK(wrapped.rfind("head\n", 0) == 0);
  CHECK(wrapped.find("\n      word") != std::string::npos);  // 2 + 4 spaces
  CHECK(wrapped.size() >= 6);
  CHECK(wrapped.substr(wrapped.size() - 6) == "\nlast\n");
}

}  // namespace
}  // namespace fsdpx
