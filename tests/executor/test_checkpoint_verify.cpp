// tests/executor/test_checkpoint_verify.cpp — issue 15 items 11 and 12: every one-bit change of a manifest,
// a step that differs from its directory's name, a manifest listing 3 of 4 shards or one twice are
// rejected when the checkpoint is read, so loading falls back to the previous good one; step numbers
// beyond int64 are skipped; an unusable checkpoint directory is reported before work, and a failed save
// leaves nothing behind.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/checkpoint_verify.h"
#include "tests/executor/checkpoint_fixtures.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;
using namespace test;

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

}  // namespace
}  // namespace fsdpx
