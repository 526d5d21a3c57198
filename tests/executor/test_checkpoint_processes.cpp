// tests/executor/test_checkpoint_processes.cpp — issue 15 item 14: the save and load protocol of a job whose
// shard owners run in several processes (checkpoint.h), with "processes" as threads that sum over a thread
// communicator. Each writes the shards it holds, the leader commits: the checkpoint is byte for byte the
// one a single process writes, and loads into another number of processes; when one process cannot
// write, every process throws, nothing is committed and the staging directory is gone; all processes
// agree on which checkpoint to load, also when one of them rejects it.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/comm/thread_communicator.h"
#include "tests/executor/checkpoint_fixtures.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;
using namespace test;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The job's processes as threads: process p gets a group summing over a thread communicator (exact
// for these integers in fp64), leads when p == 0, and runs body(p, group). Returns each one's error.
std::vector<std::string> as_processes(int processes, const std::function<void(int, const CheckpointGroup&)>& body) {
  auto comms = make_thread_communicators(processes, 30.0);
  std::vector<std::string> errors(static_cast<std::size_t>(processes));
  std::vector<std::thread> threads;
  for (int p = 0; p < processes; ++p)
    threads.emplace_back([&, p] {
      Communicator& c = *comms[std::size_t(p)];
      CheckpointGroup g;
      g.leader = p == 0;
      g.job_token = "0123abcd";
      g.sum = [&c](const std::vector<std::uint64_t>& w) {
        std::vector<double> d(w.begin(), w.end());
        c.all_reduce(d.data(), std::int64_t(d.size()));
        return std::vector<std::uint64_t>(d.begin(), d.end());
      };
      try {
        body(p, g);
      } catch (const std::exception& e) {
        errors[std::size_t(p)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

// The shard owners process p of `processes` holds when rank r runs in process r % processes.
TrainerState owned_by(const TrainerState& all, int p, int processes) {
  TrainerState s = all;
  s.ranks.clear();
  for (const RankState& r : all.ranks)
    if (r.rank % processes == p) s.ranks.push_back(r);
  return s;
}

TEST_CASE("processes each write their shards; the checkpoint equals a single process's, byte for byte") {
  TempDir t;
  const TrainerState all = filled_state(kTiedLast, 4);
  const std::string one = save_checkpoint((t.path / "one").string(), all, "fp");
  for (int processes : {4, 2, 3}) {
    CAPTURE(processes);
    const fs::path root = t.path / ("job" + std::to_string(processes));
    const auto errors = as_processes(processes, [&](int p, const CheckpointGroup& g) {
      CHECK(save_checkpoint(root.string(), owned_by(all, p, processes), "fp", g) ==
            (root / "step-000006").string());
    });
    for (const std::string& e : errors) CHECK(e.empty());
    for (const char* f : {"manifest.json", "rank-00000.bin", "rank-00001.bin", "rank-00002.bin", "rank-00003.bin"})
      CHECK(slurp(root / "step-000006" / f) == slurp(fs::path(one) / f));
    CHECK(std::distance(fs::directory_iterator(root), fs::directory_iterator()) == 1);  // no staging left
    // Loaded by 2 processes: both get every shard and agree on the step.
    as_processes(2, [&](int, const CheckpointGroup& g) {
      const auto loaded = load_latest_checkpoint(root.string(), "fp", nullptr, g);
      REQUIRE(loaded);
      CHECK(same_state(loaded->state, all));
    });
  }
}

TEST_CASE("when one process cannot write its shard, every process throws and nothing is committed") {
  TempDir t;
  TrainerState s3 = filled_state(kTiedLast, 4);
  s3.step = 3;
  save_checkpoint(t.path.string(), s3, "fp");
  const TrainerState all = filled_state(kTiedLast, 4);
  const auto errors = as_processes(4, [&](int p, const CheckpointGroup& g) {
    CheckpointGroup blocked = g;
    int calls = 0;
    // After the staging directory exists (the first agreement), process 2's file name is taken by a
    // directory: its write fails.
    blocked.sum = [&, p](const std::vector<std::uint64_t>& w) {
      auto out = g.sum(w);
      if (p == 2 && ++calls == 1) fs::create_directories(t.path / "step-000006.tmp-job-0123abcd" / "rank-00002.bin");
      return out;
    };
    save_checkpoint(t.path.string(), owned_by(all, p, 4), "fp", blocked);
  });
  for (int p = 0; p < 4; ++p) CHECK_FALSE(errors[std::size_t(p)].empty());
  CHECK(errors[2].find("rank-00002.bin: cannot create") != std::string::npos);
  CHECK(errors[0].find("1 process(es) could not write their shards") != std::string::npos);
  CHECK_FALSE(fs::exists(t.path / "step-000006"));
  CHECK_FALSE(fs::exists(t.path / "step-000006.tmp-job-0123abcd"));
  const auto loaded = load_latest_checkpoint(t.path.string(), "fp");
  REQUIRE(loaded);
  CHECK(loaded->state.step == 3);
}

TEST_CASE("processes agree on the checkpoint to load, also when one of them rejects every one") {
  TempDir t;
  TrainerState s3 = filled_state(kTiedLast, 2);
  s3.step = 3;
  save_checkpoint(t.path.string(), s3, "fp");
  save_checkpoint(t.path.string(), filled_state(kTiedLast, 2), "fp");
  // A stale staging directory of a killed job is removed by the next commit of a step at least as late.
  fs::create_directories(t.path / "step-000005.tmp-job-feed" / "x");
  fs::create_directories(t.path / "step-000009.tmp-job-feed");
  as_processes(3, [&](int, const CheckpointGroup& g) {
    const auto loaded = load_latest_checkpoint(t.path.string(), "fp", nullptr, g);
    REQUIRE(loaded);
    CHECK(loaded->state.step == 6);
  });
  const auto errors = as_processes(3, [&](int p, const CheckpointGroup& g) {
    std::vector<std::string> rejected;
    CHECK_FALSE(load_latest_checkpoint(t.path.string(), p == 1 ? "another model" : "fp", &rejected, g));
    CHECK(rejected.size() == 2);  // step 6, then step 3: the others fell back with process 1
  });
  for (const std::string& e : errors) CHECK(e.empty());
  save_checkpoint(t.path.string(), filled_state(kTiedLast, 2), "fp");
  CHECK_FALSE(fs::exists(t.path / "step-000005.tmp-job-feed"));
  CHECK(fs::exists(t.path / "step-000009.tmp-job-feed"));  // may be a later save of another job
}

}  // namespace
}  // namespace fsdpx
