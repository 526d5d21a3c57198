// tests/executor/checkpoint_fixtures.h — a tiny model's modules, unit groupings, sharded states whose every
// element holds a value derived from (module, element), and the checks on them, shared by the checkpoint
// tests (test_checkpoint.cpp, test_checkpoint_verify.cpp, test_checkpoint_processes.cpp).
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fstream>

#include <nlohmann/json.hpp>

#include "executor/checkpoint/checkpoint_verify.h"
#include "executor/checkpoint/reshard.h"
#include "executor/runtime/train_state.h"

namespace fsdpx::test {

namespace fs = std::filesystem;

// A tiny model's modules in forward order with their sizes; the tied head has no elements of its own.
inline const std::vector<std::pair<std::string, std::int64_t>> kTiedModel{
    {"embedding", 10}, {"block.0", 7}, {"block.1", 33}, {"final_norm", 1}, {"head", 0}};
inline const std::vector<std::pair<std::string, std::int64_t>> kUntiedModel{
    {"embedding", 10}, {"block.0", 7}, {"block.1", 33}, {"final_norm", 1}, {"head", 12}};

using Grouping = std::vector<std::vector<std::string>>;  // module names per unit
// gpt-tiny's 4-rank plan: the tied embedding joins the head's unit, last.
inline const Grouping kTiedLast{{"block.0"}, {"block.1"}, {"embedding", "final_norm", "head"}};
// Its 1-rank plan: one unit in forward order.
inline const Grouping kOneUnit{{"embedding", "block.0", "block.1", "final_norm", "head"}};
// The per-block wrapping of a tied model: the embedding after the head.
inline const Grouping kEmbeddingAfterHead{{"block.0", "block.1"}, {"final_norm", "head", "embedding"}};
inline const Grouping kForward{{"embedding", "block.0"}, {"block.1"}, {"final_norm", "head"}};

inline std::vector<std::vector<UnitModule>> unit_modules(const Grouping& g,
                                                  const std::vector<std::pair<std::string, std::int64_t>>& model) {
  std::vector<std::vector<UnitModule>> out;
  for (const auto& names : g) {
    std::vector<UnitModule>& unit = out.emplace_back();
    std::int64_t at = 0;
    for (const std::string& n : names) {
      const auto m = std::find_if(model.begin(), model.end(), [&](const auto& x) { return x.first == n; });
      unit.push_back(UnitModule{n, at, m->second});
      at += m->second;
    }
  }
  return out;
}

inline TrainerState layout(const Grouping& g, int dp_shard, bool tied = true) {
  return even_shard_layout(unit_modules(g, tied ? kTiedModel : kUntiedModel), dp_shard);
}

// Element j of module "name" has params id·1000 + j (id: the module's 1-based forward index), m = -params,
// v = params / 2: distinct everywhere, so an element in the wrong place is seen.
inline float value(const std::string& name, std::int64_t j) {
  const auto m = std::find_if(kTiedModel.begin(), kTiedModel.end(), [&](const auto& x) { return x.first == name; });
  return float(m - kTiedModel.begin() + 1) * 1000.0f + float(j);
}

// The value unit element i should hold (0 in the padding).
inline float expected(const UnitShardState& u, std::int64_t i) {
  for (const UnitModule& m : u.modules)
    if (i >= m.offset && i < m.offset + m.numel) return value(m.name, i - m.offset);
  return 0.0f;
}

inline TrainerState filled_state(const Grouping& g, int dp_shard, bool tied = true) {
  TrainerState s = layout(g, dp_shard, tied);
  s.step = 6, s.data.next_sample = 48, s.seed = 0xfedcba9876543210ULL;
  for (RankState& r : s.ranks)
    for (UnitShardState& sh : r.units)
      for (std::size_t k = 0; k < sh.params.size(); ++k) {
        const float x = expected(sh, sh.shard_offset + std::int64_t(k));
        sh.params[k] = x, sh.exp_avg[k] = -x, sh.exp_avg_sq[k] = x / 2;
      }
  return s;
}

inline void check_holds_values(const TrainerState& s) {
  for (const RankState& r : s.ranks)
    for (std::size_t u = 0; u < r.units.size(); ++u) {
      const UnitShardState& sh = r.units[u];
      for (std::size_t k = 0; k < sh.params.size(); ++k) {
        const std::int64_t i = sh.shard_offset + std::int64_t(k);
        const float x = expected(sh, i);
        INFO("rank " << r.rank << " unit " << u << " element " << i);
        REQUIRE(sh.params[k] == x);
        REQUIRE(sh.exp_avg[k] == -x);
        REQUIRE(sh.exp_avg_sq[k] == x / 2);
      }
    }
}

inline bool same_state(const TrainerState& a, const TrainerState& b) {
  if (a.step != b.step || a.data.next_sample != b.data.next_sample || a.seed != b.seed || a.dp_shard != b.dp_shard ||
      a.ranks.size() != b.ranks.size())
    return false;
  for (std::size_t r = 0; r < a.ranks.size(); ++r)
    for (std::size_t u = 0; u < a.ranks[r].units.size(); ++u) {
      const auto &x = a.ranks[r].units[u], &y = b.ranks[r].units[u];
      if (x.shard_offset != y.shard_offset || x.modules != y.modules || x.params != y.params ||
          x.exp_avg != y.exp_avg || x.exp_avg_sq != y.exp_avg_sq)
        return false;
    }
  return true;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("fsdpx-test-ckpt-" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

inline nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); }
// Writes an edited manifest with a checksum that matches it, as a writer with a bug would: only the
// checks on content can reject it.
inline void write_manifest(const fs::path& dir, nlohmann::json j) {
  j["checksum"] = manifest_checksum(j);
  std::ofstream(dir / "manifest.json") << j.dump(2);
}

}  // namespace fsdpx::test
