// tests/executor/test_pipeline_rendezvous.cpp — the thread communicator's rendezvous mode (a send returns
// only once the receiver took it, as NCCL's sends beyond its buffers) and the pipeline schedules under it:
// a send waits for its receive, two ranks that both send first time out (both post first: they don't),
// and every schedule at pp 2 x dp_shard 2 and pp 4 trains to the buffered mode's losses.
// Leaves out the CUDA backend (tests/cuda/emulated runs it on this mode).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "executor/comm/thread_communicator.h"
#include "executor/cpu_backend/cpu_rank_backend.h"
#include "tests/executor/pipeline_fixtures.h"

namespace fsdpx {
namespace {

using Clock = std::chrono::steady_clock;

// Rank 0 sends one float to rank 1, which takes it after `delay`; returns when rank 0's send returned,
// measured from the start.
double send_returns_after_s(P2PMode mode, std::chrono::milliseconds delay) {
  auto comms = make_thread_communicators(2, 5.0, mode);
  const auto start = Clock::now();
  std::atomic<double> returned_s{-1};
  std::thread receiver([&] {
    std::this_thread::sleep_for(delay);
    float got = 0;
    comms[1]->recv(&got, 1, 0, 3);
    CHECK(got == 42.0f);
  });
  const float x = 42.0f;
  comms[0]->send(&x, 1, 1, 3);
  returned_s = std::chrono::duration<double>(Clock::now() - start).count();
  receiver.join();
  return returned_s;
}

TEST_CASE("thread communicator: a rendezvous send returns only after the receive, a buffered one at once") {
  // A 1 s delay against a 0.5 s bound: wide enough that a loaded sanitizer host cannot blur the two.
  const auto delay = std::chrono::milliseconds(1000);
  CHECK(send_returns_after_s(P2PMode::rendezvous, delay) >= 1.0);
  CHECK(send_returns_after_s(P2PMode::buffered, delay) < 0.5);
}

TEST_CASE("thread communicator: two ranks that both send first deadlock under rendezvous (timeout), not buffered") {
  for (P2PMode mode : {P2PMode::buffered, P2PMode::rendezvous}) {
    CAPTURE(std::string(p2p_mode_name(mode)));
    auto comms = make_thread_communicators(2, 0.3, mode);
    std::string error;
    try {
      run_rank_threads(
          2,
          [&](int r) {
            Communicator& c = *comms[std::size_t(r)];
            const float mine = float(r);
            float theirs = -1;
            c.send(&mine, 1, 1 - r, 0);
            c.recv(&theirs, 1, 1 - r, 0);
            CHECK(theirs == float(1 - r));
          },
          [&](const std::string& msg) { comms[0]->abort(msg); });
    } catch (const std::exception& e) {
      error = e.what();
    }
    CAPTURE(error);
    if (mode == P2PMode::buffered) CHECK(error.empty());
    else CHECK(error.find("of a rendezvous send") != std::string::npos);
  }
}

TEST_CASE("thread communicator: split groups inherit the rendezvous mode") {
  auto group = ThreadGroup::create(4, 1.0, nullptr, P2PMode::rendezvous);
  std::vector<ThreadGroup::Split> out(4);
  std::vector<std::thread> ts;
  for (int r = 0; r < 4; ++r) ts.emplace_back([&, r] { out[std::size_t(r)] = group->split(r, r % 2, r); });
  for (auto& t : ts) t.join();
  for (const auto& s : out) CHECK(s.group->p2p_mode() == P2PMode::rendezvous);
}

// The CPU backends of a plan on thread communicators in `mode`; a deadlock ends in a timeout after
// `timeout_s`.
RankBackendFactory cpu_backends(P2PMode mode, double timeout_s) {
  return [mode, timeout_s](const RuntimeProgram& rp, OpProfiler*) {
    std::vector<std::unique_ptr<RankBackend>> out;
    auto comms = make_thread_communicators(rp.settings.parallelism.world_size(), timeout_s, mode);
    for (auto& c : comms) out.push_back(std::make_unique<CpuRankBackend>(rp, std::move(c), nullptr));
    return out;
  };
}

// `steps` steps' losses, or the error that ended the run.
std::vector<double> losses(const test::PipePlan& s, P2PMode mode, int steps, std::string& error) {
  const Plan plan = test::pipe_plan(s);
  std::vector<double> out;
  try {
    Trainer trainer(plan, test::shipped_text(plan), TrainerOptions{}, cpu_backends(mode, 5.0));
    for (int k = 0; k < steps; ++k) out.push_back(trainer.step().loss);
  } catch (const std::exception& e) {
    error = e.what();
  }
  return out;
}

// Issue 28 found that 1F1B, interleaved 1F1B and ZB-H1 deadlocked under rendezvous sends while the CPU
// backend's sends blocked its thread: in the steady state a stage sends activation i + 1 forward while its
// successor sends gradient j back, and both waited for a receive that came after the other's send. Its
// sends are now posted as an NCCL send is enqueued on a stream (Communicator::post_send) and the step
// waits for them after its last op (RankBackend::finish_sends), so every schedule trains under
// rendezvous sends to the buffered mode's losses; with `world_->send` in CpuRankBackend::send the three
// deadlock again (the previous version of this test asserted that deadlock).
TEST_CASE("pipeline: every schedule trains under rendezvous sends to the buffered losses") {
  const PipelineSchedule schedules[] = {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                                        PipelineSchedule::interleaved_1f1b, PipelineSchedule::zero_bubble};
  for (PipelineSchedule schedule : schedules) {
    for (int pp : {2, 4}) {
      test::PipePlan s;
      s.schedule = schedule;
      s.vpp = schedule == PipelineSchedule::interleaved_1f1b ? 2 : 1;
      s.pp = pp, s.dp_shard = 4 / pp;
      s.steps = 2;
      CAPTURE(std::string(pipeline_schedule_name(schedule)));
      CAPTURE(pp);
      std::string buffered_error, rendezvous_error;
      const std::vector<double> buffered = losses(s, P2PMode::buffered, s.steps, buffered_error);
      const std::vector<double> rendezvous = losses(s, P2PMode::rendezvous, s.steps, rendezvous_error);
      CHECK(buffered_error == "");
      CHECK(rendezvous_error == "");
      CHECK(buffered.size() == std::size_t(s.steps));
      CHECK(rendezvous == buffered);  // same program, same arithmetic: only when a send returns differs
    }
  }
}

TEST_CASE("thread communicator: posted sends to each other complete under rendezvous; wait_sends awaits them") {
  auto comms = make_thread_communicators(2, 2.0, P2PMode::rendezvous);
  const auto start = Clock::now();
  std::vector<double> posted_s(2), sent_s(2);
  run_rank_threads(
      2,
      [&](int r) {
        Communicator& c = *comms[std::size_t(r)];
        const float mine = float(r + 1);
        float theirs = -1;
        c.post_send(&mine, 1, 1 - r, 7);  // both send first
        posted_s[std::size_t(r)] = std::chrono::duration<double>(Clock::now() - start).count();
        if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        c.recv(&theirs, 1, 1 - r, 7);
        c.wait_sends();
        sent_s[std::size_t(r)] = std::chrono::duration<double>(Clock::now() - start).count();
        CHECK(theirs == float(2 - r));
      },
      [&](const std::string& msg) { comms[0]->abort(msg); });
  CHECK(posted_s[0] < 0.5);  // a posted send returns at once (1 s against 0.5 s: room for a loaded host)
  CHECK(sent_s[0] >= 1.0);   // and completes only once rank 1 received it
}

}  // namespace
}  // namespace fsdpx
