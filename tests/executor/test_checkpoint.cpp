// tests/executor/test_checkpoint.cpp — checksums against published check values, resharding N -> M
// ranks and between unit groupings (a tied embedding in the last unit or the first) against each
// module's element values, format-1 states, save/load round trips with the manifest's module lists and
// a LoRA run's adapters file, and detection of torn, truncated and corrupted checkpoints with fallback to
// the previous good one.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <iterator>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/checkpoint_verify.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/reshard.h"
#include "executor/checkpoint/params_hash.h"
#include "tests/executor/checkpoint_fixtures.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;
using namespace test;  // checkpoint_fixtures.h

TEST_CASE("CRC-32 and FNV-1a 64 match their published check values") {
  CHECK(crc32("123456789") == 0xCBF43926u);  // CRC-32/ISO-HDLC check value
  CHECK(crc32("") == 0u);
  CHECK(fnv1a64("") == 0xcbf29ce484222325ULL);  // offset basis
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ULL);
}

TEST_CASE("the parameter hash: plain FNV-1a up to one chunk, FNV-1a of the chunks' hashes above, on any thread count") {
  const std::vector<float> small{1.0f, -2.5f, 3.25f};
  CHECK(params_hash(small) == fmt::format("{:016x}", fnv1a64(small.data(), small.size() * sizeof(float))));
  // 2.5 chunks: two whole chunks and a half one.
  std::vector<float> big(5 * kParamsHashChunkBytes / 2 / sizeof(float));
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = float(i % 9973) * 0.5f - 7.0f;
  const auto* bytes = reinterpret_cast<const unsigned char*>(big.data());
  const std::uint64_t chunks[3] = {fnv1a64(bytes, kParamsHashChunkBytes),
                                   fnv1a64(bytes + kParamsHashChunkBytes, kParamsHashChunkBytes),
                                   fnv1a64(bytes + 2 * kParamsHashChunkBytes, kParamsHashChunkBytes / 2)};
  const std::string want = fmt::format("{:016x}", fnv1a64(chunks, sizeof chunks));
  CHECK(params_hash(big, 1) == want);
  CHECK(params_hash(big, 2) == want);
  CHECK(params_hash(big, 8) == want);
  big[big.size() - 1] += 1.0f;  // the last byte of the last chunk counts
  CHECK(params_hash(big, 3) != want);
}

TEST_CASE("resharding 4 ranks to 2, 3, 1 and 5 keeps every logical element and zero padding") {
  const TrainerState four = filled_state(kTiedLast, 4);
  check_holds_values(four);
  for (int m : {2, 3, 1, 5}) {
    CAPTURE(m);
    const TrainerState out = reshard_state(four, layout(kTiedLast, m), "test");
    CHECK(out.ranks.size() == std::size_t(m));
    CHECK(out.step == 6);
    CHECK(out.data.next_sample == 48);
    CHECK(out.seed == four.seed);
    check_holds_values(out);
    CHECK(same_state(reshard_state(out, layout(kTiedLast, 4), "test"), four));
  }
}

// The bug this guards against: joining gpt-tiny's 4-rank units [block.0] [block.1] [embedding,
// final_norm, head] in order and cutting them along the 1-rank unit put block.0's weights where the
// embedding belongs. Values move by (module, element), so each element lands exactly.
TEST_CASE("resharding between unit groupings with the tied embedding in the last unit is element-exact") {
  for (const Grouping* from : {&kTiedLast, &kOneUnit, &kEmbeddingAfterHead})
    for (const Grouping* to : {&kTiedLast, &kOneUnit, &kEmbeddingAfterHead})
      for (int m : {1, 2, 3, 4}) {
        CAPTURE(m);
        const TrainerState saved = filled_state(*from, 4);
        const TrainerState out = reshard_state(saved, layout(*to, m), "test");
        check_holds_values(out);
        CHECK(same_state(reshard_state(out, layout(*from, 4), "test"), saved));
      }
  const TrainerState one = reshard_state(filled_state(kTiedLast, 4), layout(kOneUnit, 1), "test");
  const std::vector<float>& p = one.ranks[0].units[0].params;
  CHECK(p[0] == value("embedding", 0));
  CHECK(p[9] == value("embedding", 9));
  CHECK(p[10] == value("block.0", 0));
  CHECK(p[50] == value("final_norm", 0));
}

TEST_CASE("resharding rejects another module size (naming it), unknown and missing modules, overlapping shards") {
  const TrainerState four = filled_state(kTiedLast, 4);
  std::vector<std::pair<std::string, std::int64_t>> bigger = kTiedModel;
  bigger[2].second = 34;
  CHECK_THROWS_WITH_AS(reshard_state(four, even_shard_layout(unit_modules(kTiedLast, bigger), 2), "ck"),
                       "ck: module \"block.1\" has 33 elements in the checkpoint but 34 in this model", ConfigError);
  TrainerState renamed = four;
  for (RankState& r : renamed.ranks) r.units[0].modules[0].name = "block.9";
  CHECK_THROWS_WITH_AS(reshard_state(renamed, layout(kTiedLast, 2), "ck"),
                       doctest::Contains("module \"block.9\", which this model does not have"), ConfigError);
  const TrainerState fewer = filled_state({{"block.0"}, {"block.1"}}, 1);
  CHECK_THROWS_WITH_AS(reshard_state(fewer, layout(kTiedLast, 2), "ck"),
                       doctest::Contains("module \"embedding\" of this model is in no saved unit"), ConfigError);
  TrainerState torn = four;
  torn.ranks[0].units[2].modules[1].offset = 11;  // no longer back to back
  CHECK_THROWS_WITH_AS(reshard_state(torn, layout(kTiedLast, 2), "ck"), doctest::Contains("saved unit 2"), ConfigError);
  TrainerState overlap = four;
  overlap.ranks[1].units[1].shard_offset = 0;  // rank 1 now repeats rank 0's elements
  CHECK_THROWS_WITH_AS(reshard_state(overlap, layout(kTiedLast, 2), "ck"),
                       doctest::Contains("of module \"block.1\" is held by 2 saved shards (expected exactly 1)"),
                       ConfigError);
}

// Format 1 recorded unit sizes only (no module lists): read in forward order for an untied model,
// whose plans always join their units in that order; rejected for a tied one.
TEST_CASE("states without module lists load in forward order for an untied model only") {
  auto strip = [](TrainerState s) {
    for (RankState& r : s.ranks)
      for (UnitShardState& u : r.units) u.modules.clear();
    return s;
  };
  const TrainerState untied = strip(filled_state(kForward, 4, false));
  check_holds_values(reshard_state(untied, layout(kOneUnit, 3, false), "old"));
  const TrainerState tied = strip(filled_state(kTiedLast, 4));
  CHECK_THROWS_WITH_AS(reshard_state(tied, layout(kOneUnit, 1), "old"),
                       doctest::Contains("old: a format-1 checkpoint records unit sizes but not which modules"),
                       ConfigError);
  TrainerState mid = strip(filled_state({{"embedding", "block.0", "block.1"}, {"final_norm", "head"}}, 2, false));
  for (RankState& r : mid.ranks) r.units[0].unit_numel -= 3, r.units[1].unit_numel += 3;
  CHECK_THROWS_WITH_AS(reshard_state(mid, layout(kOneUnit, 1, false), "old"),
                       doctest::Contains("saved unit 0 (47 elements) does not end where a module"), ConfigError);
}

TEST_CASE("save then load gives the same state with the units' modules; temporary directories are ignored") {
  TempDir t;
  const TrainerState s = filled_state(kTiedLast, 4);
  const std::string dir = save_checkpoint(t.path.string(), s, "abc");
  CHECK(fs::path(dir).filename() == "step-000006");
  const nlohmann::json manifest = read_json(fs::path(dir) / "manifest.json");
  CHECK(manifest["format"] == "fsdpx-checkpoint/2");
  CHECK(manifest["units"][2] == nlohmann::json::parse(R"({"numel": 11, "modules": [
      {"name": "embedding", "offset": 0, "numel": 10}, {"name": "final_norm", "offset": 10, "numel": 1},
      {"name": "head", "offset": 11, "numel": 0}]})"));
  fs::create_directories(t.path / "step-000009.tmp-12345");  // a save that died before its rename
  const auto listed = list_checkpoints(t.path.string());
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].first == 6);
  const auto loaded = load_latest_checkpoint(t.path.string(), "abc");
  REQUIRE(loaded);
  CHECK(same_state(loaded->state, s));
  CHECK(loaded->rejected.empty());
  // Saved with 4 ranks and the embedding last, loaded into 2 ranks with one unit.
  check_holds_values(reshard_state(loaded->state, layout(kOneUnit, 2), loaded->dir));
}

// A pid that no process has: a child that already exited and was reaped.
long dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return long(pid);
}

TEST_CASE("a save removes the temporary directories of dead saves on this host, and only those") {
  TempDir t;
  char buf[256] = {};
  REQUIRE(::gethostname(buf, sizeof buf - 1) == 0);
  std::string host(buf);
  std::replace(host.begin(), host.end(), '-', '_');
  const long dead = dead_pid(), alive = long(::getpid());
  const fs::path dead_here = t.path / ("step-000009.tmp-" + host + "-" + std::to_string(dead));
  const fs::path legacy = t.path / ("step-000008.tmp-" + std::to_string(dead));
  const fs::path live_here = t.path / ("step-000007.tmp-" + host + "-" + std::to_string(alive));
  const fs::path other_host = t.path / ("step-000005.tmp-elsewhere-" + std::to_string(dead));
  for (const fs::path& p : {dead_here, legacy, live_here, other_host}) fs::create_directories(p / "x");
  save_checkpoint(t.path.string(), filled_state(kTiedLast, 4), "abc");
  CHECK_FALSE(fs::exists(dead_here));
  CHECK_FALSE(fs::exists(legacy));
  CHECK(fs::exists(live_here));   // may be a concurrent save
  CHECK(fs::exists(other_host));  // its pid means nothing here
  CHECK(fs::exists(t.path / "step-000006" / "manifest.json"));
}

TEST_CASE("the manifest's module lists are verified; a format-1 manifest loads without them") {
  TempDir t;
  const fs::path dir = save_checkpoint(t.path.string(), filled_state(kForward, 2, false), "fp");
  const nlohmann::json good = read_json(dir / "manifest.json");
  auto rejection = [&](const nlohmann::json& manifest) {
    write_manifest(dir, manifest);
    std::vector<std::string> rejected;
    CHECK_FALSE(load_latest_checkpoint(t.path.string(), "fp", &rejected));
    return rejected.at(0);
  };
  nlohmann::json j = good;
  j["units"][0]["modules"][1]["numel"] = 6;  // no longer tiles its 17-element unit
  CHECK(rejection(j).find("/units/0: modules hold 16 elements, the unit 17") != std::string::npos);
  j = good;
  j["units"][1]["modules"][0]["name"] = "block.0";
  CHECK(rejection(j).find("module \"block.0\" is also in unit 0") != std::string::npos);
  j = good;
  j["units"][0]["numel"] = 18;  // tiled by its modules, but not what the shard files hold
  j["units"][0]["modules"][1]["numel"] = 8;
  CHECK(rejection(j).find("rank-00000.bin: units differ from the manifest's units") != std::string::npos);
  j = good;
  j["format"] = "fsdpx-checkpoint/1";  // what fsdpx wrote before module lists
  j["unit_numel"] = {17, 33, 13};
  j.erase("units");
  write_manifest(dir, j);
  const auto loaded = load_latest_checkpoint(t.path.string(), "fp");
  REQUIRE(loaded);
  for (const UnitShardState& u : loaded->state.ranks.at(1).units) CHECK(u.modules.empty());
  check_holds_values(reshard_state(loaded->state, layout(kOneUnit, 1, false), "old"));
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
    TrainerState s3 = filled_state(kTiedLast, 4), s6 = filled_state(kTiedLast, 4);
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

TEST_CASE("a LoRA state's adapters go to their own verified file and reshard whole; none without LoRA") {
  TempDir t;
  TrainerState s = filled_state(kTiedLast, 4);
  s.adapters = AdapterState{{1.5f, -2.0f, 3.0f}, {0.25f, 0.5f, 0.75f}, {1e-3f, 2e-3f, 3e-3f}};
  const fs::path dir = save_checkpoint(t.path.string(), s, "fp");
  const nlohmann::json manifest = read_json(dir / "manifest.json");
  CHECK(manifest["adapters"]["name"] == "adapters.safetensors");
  CHECK(manifest["adapters"]["numel"] == 3);
  CHECK(manifest["adapters"]["bytes"] == fs::file_size(dir / "adapters.safetensors"));
  const TrainerState back = read_checkpoint(dir.string(), "fp");
  CHECK(same_state(back, s));
  CHECK(back.adapters.params == s.adapters.params);
  CHECK(back.adapters.exp_avg == s.adapters.exp_avg);
  CHECK(back.adapters.exp_avg_sq == s.adapters.exp_avg_sq);
  CHECK(reshard_state(back, layout(kOneUnit, 2), "test").adapters.exp_avg_sq == s.adapters.exp_avg_sq);
  TrainerState plain = filled_state(kTiedLast, 4);
  plain.step = 3;
  const fs::path without = save_checkpoint(t.path.string(), plain, "fp");
  CHECK_FALSE(read_json(without / "manifest.json").contains("adapters"));
  CHECK_FALSE(fs::exists(without / "adapters.safetensors"));
  CHECK(read_checkpoint(without.string(), "fp").adapters.params.empty());
  corrupt(dir / "adapters.safetensors", false);
  try {
    read_checkpoint(dir.string(), "fp");
    FAIL("a corrupted adapters file loaded");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("adapters.safetensors: checksum mismatch") != std::string::npos);
  }
}

TEST_CASE("no good checkpoint: nothing loads and every rejection is reported") {
  TempDir t;
  CHECK_FALSE(load_latest_checkpoint(t.path.string(), "fp"));  // no directory at all
  save_checkpoint(t.path.string(), filled_state(kTiedLast, 2), "fp");
  std::vector<std::string> rejected;
  CHECK_FALSE(load_latest_checkpoint(t.path.string(), "other", &rejected));  // another model
  REQUIRE(rejected.size() == 1);
  CHECK(rejected[0].find("fingerprint") != std::string::npos);
  fs::remove(t.path / "step-000006" / "manifest.json");
  CHECK_FALSE(load_latest_checkpoint(t.path.string(), "fp", &rejected));
  CHECK(rejected.at(0).find("manifest.json: missing") != std::string::npos);
}

}  // namespace
}  // namespace fsdpx
