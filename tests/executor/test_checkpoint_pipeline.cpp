// tests/executor/test_checkpoint_pipeline.cpp — checkpoints of pipeline-parallel runs: a state saved at
// step 3 by one layout (pp 2 x dp_shard 2, pp 4, 1 rank) and resumed by another gives the uninterrupted
// run's losses at steps 4-6 (1e-5 relative: the first steps' gradients were summed in another order);
// resumed by the same layout, bit for bit. A tied table's copy on the last stage is not saved: it is
// rebuilt from the embedding's state (gpt-tiny).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/reshard.h"
#include "executor/session/checkpoint_plan.h"
#include "tests/executor/pipeline_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;
using test::PipePlan;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("fsdpx-test-ckpt-pp-" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

// Steps 1-3 with `saver`, saved and read back, steps 4-6 with `resumer`: the losses of steps 4-6.
std::vector<double> resumed_losses(const PipePlan& saver, const PipePlan& resumer) {
  TempDir dir;
  const Plan a = test::pipe_plan(saver), b = test::pipe_plan(resumer);
  {
    Trainer t(a, test::shipped_text(a));
    for (int k = 0; k < 3; ++k) t.step();
    save_checkpoint(dir.path.string(), t.state(), plan_fingerprint(a));
  }
  Trainer t(b, test::shipped_text(b));
  const auto loaded = load_latest_checkpoint(dir.path.string(), plan_fingerprint(b));
  REQUIRE(loaded.has_value());
  t.load_state(reshard_state(loaded->state, t.state(), "checkpoint " + loaded->dir));
  std::vector<double> out;
  for (int k = 0; k < 3; ++k) out.push_back(t.step().loss);
  return out;
}

std::vector<double> uninterrupted(const PipePlan& s) {
  const test::Trajectory t = test::train(test::pipe_plan(s), 6);
  return {t.losses.begin() + 3, t.losses.end()};
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t k = 0; k < a.size(); ++k) d = ::fsdpx::test::nan_max(d, std::abs(a[k] - b[k]) / std::abs(b[k]));
  return d;
}

PipePlan layout(const char* model, int pp, int dp_shard, PipelineSchedule schedule, int vpp = 1) {
  PipePlan s;
  s.model = model;
  s.steps = 6;
  s.pp = pp, s.dp_shard = dp_shard, s.vpp = vpp;
  s.schedule = schedule;
  return s;
}

}  // namespace

TEST_CASE("pipeline checkpoints resume onto another pp degree and back") {
  for (const char* model : {"llama-tiny", "gpt-tiny"}) {
    CAPTURE(model);
    const PipePlan one = layout(model, 1, 1, PipelineSchedule::none);
    const PipePlan pp2 = layout(model, 2, 2, PipelineSchedule::one_f_one_b);
    const PipePlan pp4 = layout(model, 4, 1, PipelineSchedule::zero_bubble);
    const std::vector<double> want = uninterrupted(one);
    for (auto [saver, resumer] : {std::pair{pp2, one}, {one, pp2}, {pp2, pp4}, {pp4, one}}) {
      CAPTURE(saver.pp);
      CAPTURE(resumer.pp);
      const double diff = max_rel_diff(resumed_losses(saver, resumer), want);
      MESSAGE(std::string(model) << ": saved at pp " << saver.pp << ", resumed at pp " << resumer.pp << ": steps 4-6 max rel diff "
                    << diff << " from the uninterrupted 1-rank run");
      CHECK(diff <= 1e-5);
    }
  }
}

TEST_CASE("a pipeline checkpoint resumed by the same layout continues bit for bit") {
  for (const char* model : {"llama-tiny", "gpt-tiny"}) {
    CAPTURE(model);
    const PipePlan pp2 = layout(model, 2, 2, PipelineSchedule::interleaved_1f1b, 2);
    CHECK(resumed_losses(pp2, pp2) == uninterrupted(pp2));
  }
}

}  // namespace fsdpx
