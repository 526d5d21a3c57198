// tests/fuzz/json_mutator.h — seeded mutations of JSON inputs for the fuzz test (tests/fuzz/fuzz_inputs.cpp).
// Tree edits on the parsed seed: a value replaced by an extreme one (0, -1, 2^31, 2^63-1, 2^64-1, 1e308,
// 5e-324, a 100k-character string, a string with control characters, null, [], {}), scaled by powers of
// ten, deleted, wrapped in nesting, repeated into a long array; a key added, renamed or dropped. Text
// edits on its bytes: bit flips, cuts, deleted and repeated spans, a duplicate key, a number beyond double,
// nesting 100,000 deep. One to three edits per case; the same seed always gives the same inputs.
// Leaves out coverage guidance (the libFuzzer harness, fuzz_libfuzzer.cpp, is for exploration).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsdpx::fuzz {

class JsonMutator {
 public:
  explicit JsonMutator(std::uint64_t seed) : rng_(seed) {}

  // A mutated copy of `seed` (its parsed form and its text). `description()` says what was done.
  std::string mutate(const nlohmann::json& seed, const std::string& text);
  // Byte-level edits only (binary inputs: shard files, safetensors).
  std::string mutate_bytes(const std::string& bytes);
  const std::string& description() const { return description_; }

  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

 private:
  void mutate_tree(nlohmann::json& j);
  void tweak_number(nlohmann::json& v);
  std::string mutate_text(std::string text);
  nlohmann::json extreme_value();
  void note(const std::string& what);

  std::mt19937_64 rng_;
  std::string description_;
};

// Every JSON pointer in `j` ("" for the root), parents before children.
std::vector<nlohmann::json::json_pointer> all_pointers(const nlohmann::json& j);

}  // namespace fsdpx::fuzz
