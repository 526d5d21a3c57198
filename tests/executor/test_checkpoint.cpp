// tests/executor/test_checkpoint.cpp — checksums against published check values, resharding N -> M
// ranks against the logical element values, save/load round trips, and detection of torn, truncated
// and corrupted checkpoints with fallback to the previous good one.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/config_paths.h"
#include "core/errors.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/reshard.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;

const std::vector<std::int64_t> kUnitNumel{10, 7, 33, 1};

// Logical element i of unit u has params u·1000 + i, m = -params, v = params / 2 (distinct everywhere).
float value(std::size_t u, std::int64_t i) { return float(u) * 1000.0f + float(i); }

TrainerState filled_state(int dp_shard) {
  TrainerState s = even_shard_layout(kUnitNumel, dp_shard);
  s.step = 6, s.data.next_sample = 48, s.seed = 0xfedcba9876543210ULL;
  for (RankState& r : s.ranks)
    for (std::size_t u = 0; u < r.units.size(); ++u) {
      UnitShardState& sh = r.units[u];
      for (std::size_t k = 0; k < sh.params.size(); ++k) {
        const std::int64_t i = sh.shard_offset + std::int64_t(k);
        const float x = i < sh.unit_numel ? value(u, i) : 0.0f;
        sh.params[k] = x, sh.exp_avg[k] = -x, sh.exp_avg_sq[k] = x / 2;
      }
    }
  return s;
}

void check_holds_values(const TrainerState& s) {
  for (const RankState& r : s.ranks)
    for (std::size_t u = 0; u < r.units.size(); ++u) {
      const UnitShardState& sh = r.units[u];
      for (std::size_t k = 0; k < sh.params.size(); ++k) {
        const std::int64_t i = sh.shard_offset + std::int64_t(k);
        const float x = i < sh.unit_numel ? value(u, i) : 0.0f;  // padding is zero
        INFO("rank " << r.rank << " unit " << u << " element " << i);
        REQUIRE(sh.params[k] == x);
        REQUIRE(sh.exp_avg[k] == -x);
        REQUIRE(sh.exp_avg_sq[k] == x / 2);
      }
    }
}

bool same_state(const TrainerState& a, const TrainerState& b) {
  if (a.step != b.step || a.data.next_sample != b.data.next_sample || a.seed != b.seed || a.dp_shard != b.dp_shard ||
      a.ranks.size() != b.ranks.size())
    return false;
  for (std::size_t r = 0; r < a.ranks.size(); ++r)
    for (std::size_t u = 0; u < a.ranks[r].units.size(); ++u) {
      const auto &x = a.ranks[r].units[u], &y = b.ranks[r].units[u];
      if (x.shard_offset != y.shard_offset || x.params != y.params || x.exp_avg != y.exp_avg ||
          x.exp_avg_sq != y.exp_avg_sq)
        return false;
    }
  return true;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("fsdpx-test-ckpt-" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST_CASE("CRC-32 and FNV-1a 64 match their published check values") {
  CHECK(crc32("123456789") == 0xCBF43926u);  // CRC-32/ISO-HDLC check value
  CHECK(crc32("") == 0u);
  CHECK(fnv1a64("") == 0xcbf29ce484222325ULL);  // offset basis
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ULL);
}

TEST_CASE("resharding 4 ranks to 2, 3 and 1 keeps every logical element and zero padding") {
  const TrainerState four = filled_state(4);
  check_holds_values(four);
  for (int m : {2, 3, 1, 5}) {
    CAPTURE(m);
    const TrainerState out = reshard_state(four, even_shard_layout(kUnitNumel, m), "test");
    CHECK(out.ranks.size() == std::size_t(m));
    CHECK(out.step == 6);
    CHECK(out.data.next_sample == 48);
    CHECK(out.seed == four.seed);
    check_holds_values(out);
    CHECK(same_state(reshard_state(out, even_shard_layout(kUnitNumel, 4), "test"), four));
  }
}

// Unit u's element i is model element base(u) + i: a regrouping keeps each model element's values.
TEST_CASE("resharding 4 ranks with units {10,7,33,1} to 2 ranks with units {17,34} keeps model elements") {
  const TrainerState out = reshard_state(filled_state(4), even_shard_layout({17, 34}, 2), "test");
  const std::vector<std::int64_t> old_base{0, 10, 17, 50}, new_base{0, 17};
  for (const RankState& r : out.ranks)
    for (std::size_t u = 0; u < 2; ++u) {
      const UnitShardState& sh = r.units[u];
      for (std::size_t k = 0; k < sh.params.size(); ++k) {
        const std::int64_t i = sh.shard_offset + std::int64_t(k), model = new_base[u] + i;
        float x = 0;
        if (i < sh.unit_numel) {
          const std::size_t ou = std::size_t(std::upper_bound(old_base.begin(), old_base.end(), model) - old_base.begin() - 1);
          x = value(ou, model - old_base[ou]);
        }
        INFO("rank " << r.rank << " unit " << u << " element " << i);
        REQUIRE(sh.params[k] == x);
        REQUIRE(sh.exp_avg_sq[k] == x / 2);
      }
    }
}

TEST_CASE("resharding rejects mismatched model sizes and overlapping shards") {
  const TrainerState four = filled_state(4);
  std::vector<std::int64_t> other = kUnitNumel;
  other[2] = 34;
  CHECK_THROWS_AS(reshard_state(four, even_shard_layout(other, 2), "ck"), ConfigError);
  TrainerState overlap = four;
  overlap.ranks[1].units[0].shard_offset = 0;  // rank 1 now repeats rank 0's elements
  CHECK_THROWS_WITH_AS(reshard_state(overlap, even_shard_layout(kUnitNumel, 2), "ck"),
                       doctest::Contains("exactly 1"), ConfigError);
}

TEST_CASE("save then load gives the same state; temporary directories are ignored") {
  TempDir t;
  const TrainerState s = filled_state(4);
  const std::string dir = save_checkpoint(t.path.string(), s, "abc");
  CHECK(fs::path(dir).filename() == "step-000006");
  CHECK(fs::is_regular_file(fs::path(dir) / "manifest.json"));
  fs::create_directories(t.path / "step-000009.tmp-12345");  // a save that died before its rename
  const auto listed = list_checkpoints(t.path.string());
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].first == 6);
  const auto loaded = load_latest_checkpoint(t.path.string(), "abc");
  REQUIRE(loaded);
  CHECK(same_state(loaded->state, s));
  CHECK(loaded->rejected.empty());
  // Saved with 4 ranks, loaded into 2.
  check_holds_values(reshard_state(loaded->state, even_shard_layout(kUnitNumel, 2), loaded->dir));
}

void corrupt(const fs::path& file, bool truncate) {
  if (truncate) {
    fs::resize_file(file, fs::file_size(file) - 5);
    return;
  }
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(40);
  char c = 0;
  f.read(&c, 1);
  c = char(c ^ 0x10);
  f.seekp(40);
  f.write(&c, 1);
}

TEST_CASE("a truncated or corrupted shard is reported and the previous good checkpoint is used") {
  for (bool truncate : {true, false}) {
    CAPTURE(truncate);
    TempDir t;
    TrainerState s3 = filled_state(4), s6 = filled_state(4);
    s3.step = 3, s3.data.next_sample = 24;
    save_checkpoint(t.path.string(), s3, "fp");
    const fs::path d6 = save_checkpoint(t.path.string(), s6, "fp");
    const fs::path shard = d6 / "rank-00001.bin";
    const auto size = fs::file_size(shard);
    corrupt(shard, truncate);
    const auto loaded = load_latest_checkpoint(t.path.string(), "fp");
    REQUIRE(loaded);
    CHECK(loaded->state.step == 3);
    REQUIRE(loaded->rejected.size() == 1);
    const std::string& msg = loaded->rejected[0];
    INFO(msg);
    CHECK(msg.find("step-000006") != std::string::npos);
    CHECK(msg.find("rank-00001.bin") != std::string::npos);
    if (truncate)
      CHECK(msg.find("expected " + std::to_string(size) + " bytes, found " + std::to_string(size - 5)) !=
            std::string::npos);
    else
      CHECK(msg.find("checksum mismatch") != std::string::npos);
  }
}

TEST_CASE("no good checkpoint: nothing loads and every rejection is reported") {
  TempDir t;
  CHECK_FALSE(load_latest_checkpoint(t.path.string(), "fp"));  // no directory at all
  save_checkpoint(t.path.string(), filled_state(2), "fp");
  std::vector<std::string> rejected;
  CHECK_FALSE(load_latest_checkpoint(t.path.string(), "other", &rejected));  // another model
  REQUIRE(rejected.size() == 1);
  CHECK(rejected[0].find("fingerprint") != std::string::npos);
  fs::remove(t.path / "step-000006" / "manifest.json");
  CHECK_FALSE(load_latest_checkpoint(t.path.string(), "fp", &rejected));
  CHECK(rejected.at(0).find("manifest.json: missing") != std::string::npos);
}

TEST_CASE("the plan fingerprint ignores parallel degrees and unit grouping and sees the model") {
  const Plan p = load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4"));
  Plan q = p;
  q.parallelism.dp_shard = 2;
  q.training.global_batch = 4;
  CHECK(plan_fingerprint(q) == plan_fingerprint(p));
  Plan r = p;
  r.model.hidden *= 2;
  CHECK(plan_fingerprint(r) != plan_fingerprint(p));
  Plan theta = p;  // same shapes, other positions: the weights mean something else
  theta.model.rope_theta = 500000.0;
  CHECK(plan_fingerprint(theta) != plan_fingerprint(p));
  if (p.units.size() >= 2) {
    Plan merged = p;
    merged.units[0].modules.insert(merged.units[0].modules.end(), merged.units[1].modules.begin(),
                                   merged.units[1].modules.end());
    merged.units.erase(merged.units.begin() + 1);
    CHECK(plan_fingerprint(merged) == plan_fingerprint(p));
  }
}

}  // namespace
}  // namespace fsdpx
