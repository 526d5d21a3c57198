// tests/executor/test_checkpoint.cpp — checksums against published check values, resharding N -> M
// ranks and between unit groupings (a tied embedding in the last unit or the first) against each
// module's element values, format-1 states, save/load round trips with the manifest's module lists,
// and detection of torn, truncated and corrupted checkpoints with fallback to the previous good one.
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

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/checkpoint_verify.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/reshard.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;

// A tiny model's modules in forward order with their sizes; the tied head has no elements of its own.
const std::vector<std::pair<std::string, std::int64_t>> kTiedModel{
    {"embedding", 10}, {"block.0", 7}, {"block.1", 33}, {"final_norm", 1}, {"head", 0}};
const std::vector<std::pair<std::string, std::int64_t>> kUntiedModel{
    {"embedding", 10}, {"block.0", 7}, {"block.1", 33}, {"final_norm", 1}, {"head", 12}};

using Grouping = std::vector<std::vector<std::string>>;  // module names per unit
// gpt-tiny's 4-rank plan: the tied embedding joins the head's unit, last.
const Grouping kTiedLast{{"block.0"}, {"block.1"}, {"embedding", "final_norm", "head"}};
// Its 1-rank plan: one unit in forward order.
const Grouping kOneUnit{{"embedding", "block.0", "block.1", "final_norm", "head"}};
// The per-block wrapping of a tied model: the embedding after the head.
const Grouping kEmbeddingAfterHead{{"block.0", "block.1"}, {"final_norm", "head", "embedding"}};
const Grouping kForward{{"embedding", "block.0"}, {"block.1"}, {"final_norm", "head"}};

std::vector<std::vector<UnitModule>> unit_modules(const Grouping& g,
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

TrainerState layout(const Grouping& g, int dp_shard, bool tied = true) {
  return even_shard_layout(unit_modules(g, tied ? kTiedModel : kUntiedModel), dp_shard);
}

// Element j of module "name" has params id·1000 + j (id: the module's 1-based forward index), m = -params,
// v = params / 2: distinct everywhere, so an element in the wrong place is seen.
float value(const std::string& name, std::int64_t j) {
  const auto m = std::find_if(kTiedModel.begin(), kTiedModel.end(), [&](const auto& x) { return x.first == name; });
  return float(m - kTiedModel.begin() + 1) * 1000.0f + float(j);
}

// The value unit element i should hold (0 in the padding).
float expected(const UnitShardState& u, std::int64_t i) {
  for (const UnitModule& m : u.modules)
    if (i >= m.offset && i < m.offset + m.numel) return value(m.name, i - m.offset);
  return 0.0f;
}

TrainerState filled_state(const Grouping& g, int dp_shard, bool tied = true) {
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

void check_holds_values(const TrainerState& s) {
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

bool same_state(const TrainerState& a, const TrainerState& b) {
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

TEST_CASE("CRC-32 and FNV-1a 64 match their published check values") {
  CHECK(crc32("123456789") == 0xCBF43926u);  // CRC-32/ISO-HDLC check value
  CHECK(crc32("") == 0u);
  CHECK(fnv1a64("") == 0xcbf29ce484222325ULL);  // offset basis
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ULL);
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

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); }
// Writes an edited manifest with a checksum that matches it, as a writer with a bug would: only the
// checks on content can reject it.
void write_manifest(const fs::path& dir, nlohmann::json j) {
  j["checksum"] = manifest_checksum(j);
  std::ofstream(dir / "manifest.json") << j.dump(2);
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

// Steps 3 and 6 saved under `root` with `dp_shard` ranks; returns step 6's directory.
fs::path save_steps_3_and_6(const fs::path& root, int dp_shard) {
  TrainerState s3 = filled_state(kTiedLast, dp_shard);
  s3.step = 3, s3.data.next_sample = 24;
  save_checkpoint(root.string(), s3, "fp");
  return save_checkpoint(root.string(), filled_state(kTiedLast, dp_shard), "fp");
}

// Issue 15 item 11: a one-bit change to the manifest loaded silently (other data, skipped steps, or no
// step run). Every single-bit flip of the manifest's bytes is rejected and the previous step is used.
TEST_CASE("every one-bit change of a manifest is rejected and the previous good checkpoint is used") {
  TempDir t;
  const fs::path d6 = save_steps_3_and_6(t.path, 4);
  std::ifstream in(d6 / "manifest.json", std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int rejected = 0;
  for (std::size_t i = 0; i < good.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = char(bad[i] ^ (1 << bit));
      // Rewritten in place, same size: ext4 flushes a file truncated and rewritten on close (slow).
      std::fstream(d6 / "manifest.json", std::ios::binary | std::ios::in | std::ios::out) << bad;
      const auto loaded = load_latest_checkpoint(t.path.string(), "fp");
      REQUIRE(loaded);
      rejected += loaded->state.step == 3 && loaded->rejected.size() == 1;
    }
  CHECK(rejected == int(8 * good.size()));
}

TEST_CASE("a manifest whose step differs from its directory's name is rejected") {
  TempDir t;
  const fs::path d6 = save_steps_3_and_6(t.path, 2);
  nlohmann::json j = read_json(d6 / "manifest.json");
  j["step"] = 7;  // resealed: only the name check can tell
  write_manifest(d6, j);
  const auto loaded = load_latest_checkpoint(t.path.string(), "fp");
  REQUIRE(loaded);
  CHECK(loaded->state.step == 3);
  REQUIRE(loaded->rejected.size() == 1);
  CHECK(loaded->rejected[0].find("/step: 7, but the directory is named for step 6") != std::string::npos);
}

// Item 11: 3 of 4 shards, or one shard twice, failed in resharding instead of falling back.
TEST_CASE("a manifest listing 3 of 4 shards, or one shard twice, is rejected when it is read") {
  for (const char* edit : {"drop", "twice", "swap rank"}) {
    CAPTURE(edit);
    TempDir t;
    const fs::path d6 = save_steps_3_and_6(t.path, 4);
    nlohmann::json j = read_json(d6 / "manifest.json");
    if (std::string(edit) == "drop") j["files"].erase(2);
    if (std::string(edit) == "twice") j["files"][2] = j["files"][1];
    if (std::string(edit) == "swap rank") {  // rank-00003.bin renamed to hold rank 2's place twice
      fs::copy_file(d6 / "rank-00002.bin", d6 / "rank-00003.bin", fs::copy_options::overwrite_existing);
      j["files"][3] = j["files"][2];
    }
    write_manifest(d6, j);
    CHECK_THROWS_AS(read_checkpoint(d6.string(), "fp"), ConfigError);
    const auto loaded = load_latest_checkpoint(t.path.string(), "fp");
    REQUIRE(loaded);
    CHECK(loaded->state.step == 3);
    REQUIRE(loaded->rejected.size() == 1);
    CHECK(loaded->rejected[0].find("manifest.json: /files") != std::string::npos);
  }
  // The check itself: shards back to back from 0 reaching the unit's end.
  TrainerState s = filled_state(kTiedLast, 4);
  CHECK_NOTHROW(check_shard_set(s, "w"));
  s.ranks[1].units[0].shard_offset += 1;
  CHECK_THROWS_WITH_AS(check_shard_set(s, "w"), doctest::Contains("unit 0: a gap at element"), ConfigError);
}

// Item 11: "step-99999999999999999999" aborted with std::stoll's out_of_range.
TEST_CASE("directory names with step numbers beyond int64 are ignored with a message, never an abort") {
  TempDir t;
  save_checkpoint(t.path.string(), filled_state(kTiedLast, 2), "fp");
  fs::create_directories(t.path / "step-99999999999999999999");
  fs::create_directories(t.path / "step-000001.tmp-host-99999999999999999999");
  std::vector<std::string> ignored;
  const auto listed = list_checkpoints(t.path.string(), &ignored);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].first == 6);
  REQUIRE(ignored.size() == 1);
  CHECK(ignored[0].find("beyond 2^63") != std::string::npos);
  const auto loaded = load_latest_checkpoint(t.path.string(), "fp");
  REQUIRE(loaded);
  CHECK(loaded->state.step == 6);
  CHECK_NOTHROW(save_checkpoint(t.path.string(), filled_state(kTiedLast, 2), "fp"));  // removes stale temporaries
  CHECK(step_of_dir_name("step-000006") == 6);
  CHECK(step_of_dir_name("step-9223372036854775807") == INT64_MAX);
  CHECK_FALSE(step_of_dir_name("step-9223372036854775808"));
  CHECK_FALSE(step_of_dir_name("step-"));
  CHECK_FALSE(step_of_dir_name("step-1x"));
}

// Item 12: an unusable --checkpoint-dir was reported at the first save only; a failed save left its
// temporary directory behind.
TEST_CASE("an unusable checkpoint directory is reported up front; a failed save leaves nothing behind") {
  TempDir t;
  CHECK_NOTHROW(prepare_checkpoint_dir((t.path / "new" / "dir").string()));
  CHECK(fs::is_empty(t.path / "new" / "dir"));  // the probe is gone
  std::ofstream(t.path / "file") << "x";
  CHECK_THROWS_AS(prepare_checkpoint_dir((t.path / "file").string()), WriteError);
  CHECK_THROWS_AS(prepare_checkpoint_dir((t.path / "file" / "sub").string()), WriteError);
  CHECK_THROWS_AS(prepare_checkpoint_dir("/dev/full/ckpt"), WriteError);
  // A save that fails part-way (the file-size limit, in a child process) removes its temporary directory.
  save_checkpoint(t.path.string(), [] { TrainerState s = filled_state(kTiedLast, 2); s.step = 3; return s; }(), "fp");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{200, 200};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      save_checkpoint(t.path.string(), filled_state(kTiedLast, 2), "fp");
    } catch (const WriteError&) {
      ::_exit(0);
    }
    ::_exit(1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(t.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"file", "new", "step-000003"});
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
