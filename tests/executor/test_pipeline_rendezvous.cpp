// tests/executor/test_pipeline_rendezvous.cpp — the thread communicator's rendezvous mode (a send returns
// only once the receiver took it, as NCCL's sends beyond its buffers) and the pipeline schedules under it:
// a send waits for its receive, two ranks that both send first time out, and the schedules at pp 2 x
// dp_shard 2 and pp 4: GPipe trains to the buffered mode's losses, 1F1B, interleaved 1F1B and ZB-H1
// deadlock (a finding, below). Leaves out the CUDA backend (tests/cuda/emulated runs it on this mode).
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
  const auto delay = std::chrono::milliseconds(200);
  CHECK(send_returns_after_s(P2PMode::rendezvous, delay) >= 0.2);
  CHECK(send_returns_after_s(P2PMode::buffered, delay) < 0.15);
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

// FINDING (issue 28): the lowered programs of 1F1B, interleaved 1F1B and ZB-H1 deadlock under rendezvous
// sends. In the steady state a stage sends activation i + 1 forward while its successor sends gradient j
// back, each as its own op before its receive, so both wait for a receive that comes after the other's
// send (the cycle communicator.h's buffered send avoids). NCCL's ncclSend of a message larger than its
// buffers completes only when the peer's ncclRecv runs, so the CUDA backend, whose point-to-point ops are
// separate NCCL groups in program order, can hang the same way on a GPU. The fix belongs to the program
// (program/lower_pipeline.cpp) or the runtime: issue a stage's adjacent send and receive with the same
// peer as one send_recv batch (Megatron-LM's send_forward_recv_backward). GPipe has no such cycle. This
// test states today's behaviour so that the fix must update it.
TEST_CASE("pipeline: GPipe trains under rendezvous sends to the buffered losses; 1F1B, interleaved and ZB-H1 deadlock") {
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
      if (schedule == PipelineSchedule::gpipe) {
        CHECK(rendezvous_error == "");
        CHECK(rendezvous == buffered);  // same program, same arithmetic: only when a send returns differs
      } else {
        CHECK(rendezvous_error.find("of a rendezvous send") != std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace fsdpx
