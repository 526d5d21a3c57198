// tests/fuzz/json_mutator.cpp — the edits of json_mutator.h.
#include "tests/fuzz/json_mutator.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace fsdpx::fuzz {

namespace {

using nlohmann::json;

void collect(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) collect(it.value(), at / it.key(), out);
  else if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) collect(j[i], at / i, out);
}

// A number token (digits after ':', ',', '[' or a space) at or after `from`: [begin, end), or npos.
std::pair<std::size_t, std::size_t> number_token(const std::string& t, std::size_t from) {
  for (std::size_t i = from; i < t.size(); ++i) {
    const bool starts = (t[i] == '-' || (t[i] >= '0' && t[i] <= '9')) && i > 0 && std::strchr(":,[ ", t[i - 1]);
    if (!starts) continue;
    std::size_t e = i + 1;
    while (e < t.size() && std::strchr("+-.eE0123456789", t[e]) != nullptr) ++e;
    return {i, e};
  }
  return {std::string::npos, std::string::npos};
}

}  // namespace

std::vector<json::json_pointer> all_pointers(const json& j) {
  std::vector<json::json_pointer> out;
  collect(j, json::json_pointer(), out);
  return out;
}

void JsonMutator::note(const std::string& what) { description_ += (description_.empty() ? "" : "; ") + what; }

json JsonMutator::extreme_value() {
  static const std::vector<json> kValues = {
      0, -1, 1, 2, 3, 7, std::int64_t{1} << 31, (std::int64_t{1} << 31) - 1, std::int64_t{1} << 53,
      std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min(),
      std::numeric_limits<std::uint64_t>::max(), 1e308, -1e308, 1e-300, 5e-324, -0.0, 0.5, 1e-9, 1e9, 1e12,
      1000000, 2048, 65536, "", "x", "lla\nma", std::string(100000, 'a'), std::string("\x01\x7f\x1b[31m"),
      nullptr, true, false, json::array(), json::object(), json::array({1, 2}), json::object({{"a", 1}})};
  return kValues[below(kValues.size())];
}

// A nearby or related value of the same kind: +-1, x2, /2, x10^k, 2^k, a third. Integers stay integers.
void JsonMutator::tweak_number(json& v) {
  const bool integer = v.is_number_integer();
  const double x = v.get<double>();
  double y = x;
  switch (below(6)) {
    case 0: y = x + 1; break;
    case 1: y = x - 1; break;
    case 2: y = x * 2; break;
    case 3: y = integer ? std::floor(x / 2) : x / 3; break;
    case 4: y = x * std::pow(10.0, double(below(7)) - 3); break;
    default: y = std::ldexp(1.0, int(below(64)));
  }
  if (integer && std::abs(y) < 9e18) v = std::int64_t(std::llround(y));
  else v = y;
}

void JsonMutator::mutate_tree(json& j) {
  const auto pointers = all_pointers(j);
  const json::json_pointer at = pointers[below(pointers.size())];
  json& v = j[at];
  const std::string where = at.to_string().empty() ? "/" : at.to_string();
  if (v.is_number() && below(2) == 0) {  // half the edits of a number keep it a plausible number
    tweak_number(v);
    note("tweak " + where + " to " + v.dump());
    return;
  }
  switch (below(8)) {
    case 0: v = extreme_value(); note("replace " + where + " with " + v.dump().substr(0, 40)); break;
    case 1: {
      const int power = int(below(25)) - 12;
      if (v.is_number()) v = v.get<double>() * std::pow(10.0, power);
      else v = std::pow(10.0, power);
      note("scale " + where + " by 1e" + std::to_string(power));
      break;
    }
    case 2: {
      if (at.empty()) break;
      json& parent = j[at.parent_pointer()];
      if (parent.is_object()) parent.erase(at.back());
      else parent.erase(std::stoul(at.back()));
      note("delete " + where);
      break;
    }
    case 3:
      if (v.is_object()) v["zz_unknown_key"] = 1, note("add a key under " + where);
      break;
    case 4:
      if (!at.empty() && j[at.parent_pointer()].is_object()) {
        json& parent = j[at.parent_pointer()];
        std::string key = at.back();
        if (!key.empty()) key[below(key.size())] ^= 1;
        parent[key] = v;
        parent.erase(at.back());
        note("rename key " + where);
      }
      break;
    case 5: {
      const std::size_t depth = 1 + below(70);
      for (std::size_t d = 0; d < depth; ++d) v = json::array({v});
      note("nest " + where + " " + std::to_string(depth) + " deep");
      break;
    }
    case 6: {  // a long array, of at most about a megabyte
      const std::size_t copies = v.dump(-1, ' ', false, json::error_handler_t::replace).size() < 200 ? 5000 : 10;
      v = json(std::vector<json>(copies, v));
      note("repeat " + where + " " + std::to_string(copies) + " times");
      break;
    }
    default: v = "\n" + std::string(below(2) ? 100000 : 3, '\t') + "\x02"; note("control characters at " + where);
  }
}

std::string JsonMutator::mutate_text(std::string t) {
  if (t.empty()) return t;
  const std::size_t at = below(t.size());
  switch (below(8)) {
    case 0: t[at] = char(t[at] ^ (1 << below(8))); note("flip a bit at byte " + std::to_string(at)); break;
    case 1: t.resize(at); note("cut at byte " + std::to_string(at)); break;
    case 2: t.erase(at, 1 + below(16)); note("delete bytes at " + std::to_string(at)); break;
    case 3: t.insert(below(t.size()), t.substr(at, 1 + below(64))); note("repeat a span"); break;
    case 4: {
      const std::size_t brace = t.find("{\"", at);
      if (brace == std::string::npos) break;
      const std::size_t end = t.find('"', brace + 2);
      if (end == std::string::npos) break;
      t.insert(brace + 1, t.substr(brace + 1, end - brace) + ": 0, ");
      note("duplicate key " + t.substr(brace + 1, end - brace));
      break;
    }
    case 5: {
      static const char* kNumbers[] = {"1e309", "-1e999", "1e-400", "18446744073709551616", "9223372036854775808",
                                       "-9223372036854775809", "0.0000000000000000000000001", "1E+2", "-0"};
      const auto [b, e] = number_token(t, at);
      if (b == std::string::npos) break;
      const char* n = kNumbers[below(std::size(kNumbers))];
      t.replace(b, e - b, n);
      note(std::string("number ") + n + " at byte " + std::to_string(b));
      break;
    }
    case 6: {
      const auto [b, e] = number_token(t, at);
      if (b == std::string::npos) break;
      t.replace(b, e - b, std::string(100000, '[') + std::string(100000, ']'));
      note("nesting 100000 deep at byte " + std::to_string(b));
      break;
    }
    default: t.insert(at, 1, char(below(256))); note("insert a byte at " + std::to_string(at));
  }
  return t;
}

std::string JsonMutator::mutate(const json& seed, const std::string& text) {
  description_.clear();
  // One to three edits, two in three on the tree; tree edits first, then text edits on its dump.
  std::uint64_t tree_edits = 0, text_edits = 0;
  for (std::uint64_t i = 1 + below(3); i > 0; --i) ++(below(3) != 0 ? tree_edits : text_edits);
  json j = seed;
  for (std::uint64_t i = 0; i < tree_edits; ++i) mutate_tree(j);
  std::string out = tree_edits > 0 ? j.dump(-1, ' ', false, json::error_handler_t::replace) : text;
  for (std::uint64_t i = 0; i < text_edits; ++i) out = mutate_text(out);
  return out;
}

std::string JsonMutator::mutate_bytes(const std::string& bytes) {
  description_.clear();
  std::string out = bytes;
  const std::uint64_t edits = 1 + below(3);
  for (std::uint64_t i = 0; i < edits && !out.empty(); ++i) {
    const std::size_t at = below(out.size());
    switch (below(4)) {
      case 0: out[at] = char(out[at] ^ (1 << below(8))); note("flip a bit at byte " + std::to_string(at)); break;
      case 1: out.resize(at); note("cut at byte " + std::to_string(at)); break;
      case 2: out.replace(at, std::min<std::size_t>(8, out.size() - at), "\xff\xff\xff\xff\xff\xff\xff\x7f");
        note("0x7fff... at byte " + std::to_string(at));
        break;
      default: out.insert(below(out.size()), out.substr(at, 1 + below(64))); note("repeat a span");
    }
  }
  return out;
}

}  // namespace fsdpx::fuzz
