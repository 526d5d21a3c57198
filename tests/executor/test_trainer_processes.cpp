// tests/executor/test_trainer_processes.cpp — issue 15 item 14 at the Trainer: a job whose ranks are split
// over several Trainers ("processes", here in one test process, sharing one thread-communicator family)
// sums over processes exactly, exposes only its own shard owners (local_state) and the owners it loads
// from (load_layout), and saves and resumes checkpoints with checkpoint.h's multi-process protocol: the
// files equal a single Trainer's, and the resumed losses are bit-identical, also for HSDP where one
// process hosts no shard owner, and under tp, cp, pp and ep, where the slices are gathered over the
// processes. Leaves out separate OS processes (test_checkpoint_kill.sh, test_run_parallel_cli.sh).
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/reshard.h"
#include "executor/comm/thread_communicator.h"
#include "executor/cpu_backend/cpu_rank_backend.h"
#include "tests/executor/pipeline_fixtures.h"
#include "tests/executor/recording_communicator.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;

// Trainers of one job: process p hosts the ranks r with r % processes == p (interleaved), or, when
// `contiguous`, the p-th block of world / processes ranks. With a `log`, every rank's calls are recorded.
std::vector<std::unique_ptr<Trainer>> split_job(const Plan& plan, int processes, bool contiguous = false,
                                                test::CallLog* log = nullptr) {
  const int world = plan.parallelism.world_size();
  auto comms = std::make_shared<std::vector<std::unique_ptr<Communicator>>>(make_thread_communicators(world, 60.0));
  if (log) {
    log->by_rank.assign(std::size_t(world), {});
    std::vector<int> members;
    for (int r = 0; r < world; ++r) members.push_back(r);
    for (auto& c : *comms) c = std::make_unique<test::RecordingCommunicator>(std::move(c), members, log);
  }
  std::vector<std::unique_ptr<Trainer>> trainers(static_cast<std::size_t>(processes));
  std::vector<std::thread> threads;  // constructors run collectives: all processes at once
  for (int p = 0; p < processes; ++p)
    threads.emplace_back([&, p] {
      RankBackendFactory mine = [comms, p, processes, contiguous](const RuntimeProgram& rp, OpProfiler*) {
        std::vector<std::unique_ptr<RankBackend>> out;
        const int block = int(comms->size()) / processes;
        for (int r = 0; r < int(comms->size()); ++r)
          if ((contiguous ? r / block : r % processes) == p)
            out.push_back(std::make_unique<CpuRankBackend>(rp, std::move((*comms)[std::size_t(r)]), nullptr));
        return out;
      };
      trainers[std::size_t(p)] = std::make_unique<Trainer>(plan, std::make_shared<test::HashData>(plan.model.vocab),
                                                           TrainerOptions{}, mine);
    });
  for (auto& t : threads) t.join();
  return trainers;
}

// Runs fn(p, trainer) on every process at once; returns process 0's losses if fn returns them.
void on_processes(std::vector<std::unique_ptr<Trainer>>& job, const std::function<void(int, Trainer&)>& fn) {
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < job.size(); ++p) threads.emplace_back([&, p] { fn(int(p), *job[p]); });
  for (auto& t : threads) t.join();
}

CheckpointGroup group_of(Trainer& t) {
  CheckpointGroup g;
  g.leader = t.hosts_rank0();
  g.job_token = "5eed";
  g.sum = [&t](const std::vector<std::uint64_t>& w) { return t.sum_over_processes(w); };
  return g;
}

std::vector<double> steps(Trainer& t, int n) {
  std::vector<double> losses;
  for (int i = 0; i < n; ++i) losses.push_back(t.step().loss);
  return losses;
}

// A fresh job of 2 processes (split as split_job) resumes from `dir`: each process reads, reshards into its
// owners and runs 2 steps; their losses, per process.
std::vector<std::vector<double>> resume_job(const Plan& plan, const fs::path& dir, bool contiguous) {
  auto resumed = split_job(plan, 2, contiguous);
  std::vector<std::vector<double>> got(2);
  on_processes(resumed, [&](int p, Trainer& t) {
    const auto loaded = load_latest_checkpoint(dir.string(), "fp", nullptr, group_of(t));
    REQUIRE(loaded);
    t.load_state(reshard_state(loaded->state, t.load_layout(), "job"));
    got[std::size_t(p)] = steps(t, 2);
  });
  return got;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("fsdpx-test-trainer-processes-" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST_CASE("sum_over_processes adds each process's words once, exactly, whatever its number of ranks") {
  const Plan plan = test::tiny_plan(load_model("llama-tiny"), {4});
  auto job = split_job(plan, 2);
  std::vector<std::vector<std::uint64_t>> sums(2);
  on_processes(job, [&](int p, Trainer& t) {
    sums[std::size_t(p)] = t.sum_over_processes(p == 0 ? std::vector<std::uint64_t>{1, (1ull << 40) + 5, 0xffffffffull}
                                                       : std::vector<std::uint64_t>{10, 7, 0});
  });
  const std::vector<std::uint64_t> want{11, (1ull << 40) + 12, 0xffffffffull};
  CHECK(sums[0] == want);
  CHECK(sums[1] == want);
  CHECK(job[0]->hosts_rank0());
  CHECK_FALSE(job[1]->hosts_rank0());
}

// A model's state summed over processes goes in a few large collectives, not one per few words: each is a
// round trip between processes (with 8 values per call, a 4-process llama-tiny8 run's final state took
// 225,000 of them, 49 s against 0.7 s as threads).
TEST_CASE("sum_over_processes of a large vector is exact and issues one all-reduce per 2^20 values") {
  const Plan plan = test::tiny_plan(load_model("llama-tiny"), {4});
  test::CallLog log;
  auto job = split_job(plan, 2, false, &log);
  const std::size_t n = 300'000;  // 4 limbs a word: 1.2 M values, two calls
  std::vector<std::uint64_t> mine(n), theirs(n), want(n);
  for (std::size_t i = 0; i < n; ++i) {
    mine[i] = i % 2 ? 0 : (std::uint64_t(i) << 32) + 0xfffffff0ull + i % 16;  // every limb used
    theirs[i] = i % 2 ? std::uint64_t(i) * 2654435761ull : 0;
    want[i] = mine[i] + theirs[i];
  }
  for (auto& calls : log.by_rank) calls.clear();  // the trainers' set-up
  std::vector<std::vector<std::uint64_t>> sums(2);
  on_processes(job, [&](int p, Trainer& t) { sums[std::size_t(p)] = t.sum_over_processes(p == 0 ? mine : theirs); });
  CHECK(sums[0] == want);
  CHECK(sums[1] == want);
  for (const auto& calls : log.by_rank) {
    CHECK(calls.size() == 2);  // 1.2 M values in calls of kMaxHostReduceCount (2^20)
    for (const auto& c : calls) CHECK(c.kind == Collective::all_reduce);
  }
}

TEST_CASE("a job split over processes saves the single process's checkpoint and resumes bit-identically") {
  for (const test::PlanShape shape : {test::PlanShape{4}, test::PlanShape{2, 2}}) {  // FSDP 4; HSDP 2 x 2
    CAPTURE(shape.dp_replicate);
    TempDir d;
    const Plan plan = test::tiny_plan(load_model("llama-tiny"), shape);
    Trainer whole(plan, std::make_shared<test::HashData>(plan.model.vocab));
    steps(whole, 2);
    save_checkpoint((d.path / "whole").string(), whole.state(), "fp");
    const std::vector<double> want = steps(whole, 2);
    const bool hsdp = shape.dp_replicate == 2;  // process 1 then hosts replica 1: no shard owner
    auto job = split_job(plan, 2, hsdp);
    on_processes(job, [&](int p, Trainer& t) {
      steps(t, 2);
      const TrainerState local = t.local_state();
      CHECK(local.ranks.size() == (hsdp && p == 1 ? 0u : 2u));
      CHECK(t.load_layout().ranks.size() == 2u);  // every owner: interleaved, or replica 1's two owners
      save_checkpoint((d.path / "job").string(), local, "fp", group_of(t));
    });
    for (const char* f : {"manifest.json", "rank-00000.bin", "rank-00001.bin"})
      CHECK(slurp(d.path / "job" / "step-000002" / f) == slurp(d.path / "whole" / "step-000002" / f));
    const std::vector<std::vector<double>> got = resume_job(plan, d.path / "job", hsdp);
    CHECK(got[0] == want);
    CHECK(got[1] == want);
  }
}

// Model parallelism: a rank's state is a slice spanning several of the full model's shards, which other
// processes save; local_state gathers the slices with one sum over the processes.
TEST_CASE("tp, cp, pp and ep jobs split over processes save the single process's checkpoint and resume bit-identically") {
  auto pipe = [](const char* model, int pp, int tp, int cp, PipelineSchedule schedule) {
    test::PipePlan s;
    s.model = model;
    s.pp = pp, s.tp = tp, s.cp = cp, s.dp_shard = 4 / (pp * tp * cp);
    s.schedule = schedule;
    return test::pipe_plan(s);
  };
  Plan experts = test::tiny_plan(load_model("mixtral-tiny"), {4});
  experts.parallelism.ep = 2;
  const std::vector<std::pair<const char*, Plan>> plans{
      {"tp 2 x dp_shard 2", pipe("llama-tiny", 1, 2, 1, PipelineSchedule::none)},
      {"cp 2 x dp_shard 2", pipe("llama-tiny", 1, 1, 2, PipelineSchedule::none)},
      {"pp 2 x dp_shard 2", pipe("llama-tiny", 2, 1, 1, PipelineSchedule::one_f_one_b)},
      {"gpt pp 2 x tp 2 (tied head)", pipe("gpt-tiny", 2, 2, 1, PipelineSchedule::one_f_one_b)},
      {"mixtral ep 2, dp_shard 4", experts}};
  for (const auto& [name, plan] : plans) {
    CAPTURE(name);
    validate_plan(plan, name);
    TempDir d;
    Trainer whole(plan, std::make_shared<test::HashData>(plan.model.vocab));
    steps(whole, 2);
    const TrainerState full = whole.state();
    const int shards = full.dp_shard;  // the full model's shards: dp_shard x cp
    REQUIRE(int(full.ranks.size()) == shards);
    save_checkpoint((d.path / "whole").string(), full, "fp");
    const std::vector<double> want = steps(whole, 2);
    auto job = split_job(plan, 2);  // process p hosts the ranks r with r % 2 == p
    on_processes(job, [&](int p, Trainer& t) {
      steps(t, 2);
      const TrainerState local = t.local_state();  // a collective here
      std::vector<int> owners, want_owners;
      for (const RankState& r : local.ranks) owners.push_back(r.rank);
      for (int r = p; r < shards; r += 2) want_owners.push_back(r);  // the owners whose global rank it hosts
      CHECK(owners == want_owners);
      CHECK(int(t.load_layout().ranks.size()) == shards);  // every shard: a slice spans them
      save_checkpoint((d.path / "job").string(), local, "fp", group_of(t));
    });
    std::vector<std::string> files{"manifest.json"};
    for (int r = 0; r < shards; ++r) files.push_back(fmt::format("rank-{:05d}.bin", r));
    for (const std::string& f : files)
      CHECK(slurp(d.path / "job" / "step-000002" / f) == slurp(d.path / "whole" / "step-000002" / f));
    const std::vector<std::vector<double>> got = resume_job(plan, d.path / "job", false);
    CHECK(got[0] == want);
    CHECK(got[1] == want);
  }
}

}  // namespace
}  // namespace fsdpx
