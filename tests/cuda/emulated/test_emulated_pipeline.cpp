// tests/cuda/emulated/test_emulated_pipeline.cpp — pipeline parallelism of the CUDA backend on the emulated
// runtime: 1F1B on 2 and 4 ranks (pp 2, pp 4, pp 2 x dp_shard 2, pp 2 x tp 2, pp 2 x cp 2) follows the
// CPU backend's run of the same plan within 1e-5 over 10 steps, and so does every schedule (GPipe, 1F1B,
// interleaved 1F1B with vpp 2, ZB-H1) at pp 2 x dp_shard 2, each message staged in stream-ordered memory
// and sent between two rank threads' streams (emulated_runs.h: the float model). With NCCL's header,
// every schedule also runs with every rank on the real NcclCommunicator over the emulated NCCL (so does
// 1F1B beside tp 2 and cp 2), whose sends complete only when the receiver posts (NCCL's rendezvous): a schedule whose sends and receives do not pair up in order
// deadlocks there (ctest's timeout). Checked by hand (2026-11-28, this machine, after RankUnits took over
// the backends' unit bookkeeping): with the event waits of CudaRankBackendT::begin_op that order an op
// behind its dependencies on other streams deleted, the 1F1B case crashed (SIGSEGV: an op no longer waits
// for the all-gather or release it depends on, so it may touch a stream-ordered buffer before its
// allocation or after its free), and so did the FSDP case of test_emulated_trainer.cpp; with only
// deliver()'s wait for a receive's event deleted, 1F1B still passed (maxdiff 3.0e-7): the consuming op's
// program dependency on its receive orders the same copy, so that wait is a second guard. Again
// (2026-11-29, after the rank skeleton took over the gradient bookkeeping): the dependency waits deleted,
// both cases crashed (SIGSEGV, SIGABRT); only begin_op's wait of the other streams for the step start
// (the previous optimizer update) deleted, the 1F1B case failed on values (maxdiff 0.073 at pp 2, 0.21
// at pp 4) and FSDP on 1 rank too (0.028): the next step's all-gathers read shards AdamW is still
// writing. Leaves out processes (one address space here).
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/cuda/emulated/emulated_runs.h"
#include "tests/executor/pipeline_fixtures.h"

namespace fsdpx::emulated_test {
namespace {

// llama-tiny (8 blocks, seq 32) with 2 heads of 32 (the CUDA runtime's smallest head_dim), 4 micro-batches.
Plan pipeline(PipelineSchedule schedule, int pp, int vpp, int dp_shard) {
  test::PipePlan s;
  s.schedule = schedule;
  s.pp = pp, s.vpp = vpp, s.dp_shard = dp_shard;
  s.global_batch = 4 * dp_shard;
  s.steps = kSteps;
  Plan p = test::pipe_plan(s);
  p.model.heads = 2, p.model.kv_heads = 1, p.model.head_dim = 32;
  validate_plan(p, "pipeline test plan");
  return p;
}

// The same beside tp (sequence parallel) or cp: 2 heads and 2 KV heads of 32, so each tp rank holds one of
// each (the CUDA row's tp keeps kv_heads >= tp).
Plan pipeline_beside(PipelineSchedule schedule, int tp, int cp) {
  test::PipePlan s;
  s.schedule = schedule;
  s.pp = 2, s.tp = tp, s.cp = cp;
  s.global_batch = 4;
  s.steps = kSteps;
  Plan p = test::pipe_plan(s);
  p.model.heads = 2, p.model.kv_heads = 2, p.model.head_dim = 32;
  validate_plan(p, "pipeline test plan");
  return p;
}

void check_follows_cpu(const Plan& plan, RankBackendFactory cuda_ranks = float_cuda_backends()) {
  const auto data = test::shipped_text(plan);
  const std::vector<double> cpu = losses(plan, data, false);
  const std::vector<double> emu = losses(plan, test::shipped_text(plan), true, std::move(cuda_ranks));
  const double d = max_abs_diff(emu, cpu);
  const Parallelism& par = plan.parallelism;
  MESSAGE(std::string(pipeline_schedule_name(par.pp_schedule))
          << " pp " << par.pp << " vpp " << par.vpp << " tp " << par.tp << " cp " << par.cp << " dp_shard " << par.dp_shard
          << ": loss " << cpu.front() << " -> " << cpu.back() << ", maxdiff emulated CUDA vs CPU " << d);
  CHECK(d <= kLossTol);
  CHECK(moved(cpu) > 100 * kLossTol);  // the steps change the loss: two frozen runs would prove nothing
}

TEST_CASE("emulated CUDA: 1F1B on 2 and 4 ranks follows the CPU backend within 1e-5") {
  check_follows_cpu(pipeline(PipelineSchedule::one_f_one_b, 2, 1, 1));
  check_follows_cpu(pipeline(PipelineSchedule::one_f_one_b, 4, 1, 1));
  check_follows_cpu(pipeline(PipelineSchedule::one_f_one_b, 2, 1, 2));
}

TEST_CASE("emulated CUDA: GPipe, interleaved 1F1B and ZB-H1 at pp 2 x dp_shard 2 follow the CPU backend") {
  check_follows_cpu(pipeline(PipelineSchedule::gpipe, 2, 1, 2));
  check_follows_cpu(pipeline(PipelineSchedule::interleaved_1f1b, 2, 2, 2));
  check_follows_cpu(pipeline(PipelineSchedule::zero_bubble, 2, 1, 2));
}

// Checked by hand (2026-11-29, this machine): with the send stream's wait for the staging copy deleted
// (CudaRankBackendT::send, `cudaStreamWaitEvent(current_, staged, 0)`), this case aborted in both of two
// runs: the emulated flash_attention_backward found its saved output differing from the forward of its
// q, k, v ("a stale or unordered forward"): the next stage had trained on a message sent before it was
// copied.
TEST_CASE("emulated CUDA: 1F1B at pp 2 x tp 2 and pp 2 x cp 2 follows the CPU backend within 1e-5") {
  check_follows_cpu(pipeline_beside(PipelineSchedule::one_f_one_b, 2, 1));
  check_follows_cpu(pipeline_beside(PipelineSchedule::one_f_one_b, 1, 2));
}

#if defined(FSDPX_HAVE_NCCL)
// Every rank of the plan as a CudaRankBackendT<float> whose world is an NcclCommunicator (the ranks meet
// in ncclCommInitRankConfig, so each initialises on its own thread).
RankBackendFactory nccl_float_cuda_backends() {
  return [](const RuntimeProgram& rp, OpProfiler* rank0_profiler) {
    const int n = rp.settings.parallelism.world_size();
    const cuda::NcclId id = cuda::nccl_unique_id();
    std::vector<std::unique_ptr<cuda::DeviceCommunicator>> comms(static_cast<std::size_t>(n));
    std::vector<std::thread> init;
    for (int r = 0; r < n; ++r)
      init.emplace_back([&, r] { comms[std::size_t(r)] = cuda::make_nccl_communicator(id, n, r, {}); });
    for (std::thread& t : init) t.join();
    std::vector<std::unique_ptr<RankBackend>> out;
    for (auto& c : comms) {
      OpProfiler* profiler = c->rank() == 0 ? rank0_profiler : nullptr;
      out.push_back(std::make_unique<cuda::CudaRankBackendT<float>>(rp, std::move(c), 0, profiler));
    }
    return out;
  };
}

// Its own case: the pipeline run to start a ThreadSanitizer check with (tests/tools/sanitizers.sh).
TEST_CASE("emulated CUDA over NCCL's rendezvous sends: 1F1B at pp 2 x dp_shard 2") {
  check_follows_cpu(pipeline(PipelineSchedule::one_f_one_b, 2, 1, 2), nccl_float_cuda_backends());
}

// The tp and cp groups are NcclCommunicator splits too; a stage's sends pair with its neighbour's
// receives at the same tp (cp) rank.
TEST_CASE("emulated CUDA over NCCL's rendezvous sends: 1F1B at pp 2 x tp 2 and pp 2 x cp 2") {
  check_follows_cpu(pipeline_beside(PipelineSchedule::one_f_one_b, 2, 1), nccl_float_cuda_backends());
  check_follows_cpu(pipeline_beside(PipelineSchedule::one_f_one_b, 1, 2), nccl_float_cuda_backends());
}

TEST_CASE("emulated CUDA over NCCL's rendezvous sends: every other schedule at pp 2 x dp_shard 2, all at pp 4") {
  struct Case {
    PipelineSchedule schedule;
    int vpp;
  };
  for (const Case c : {Case{PipelineSchedule::gpipe, 1}, Case{PipelineSchedule::one_f_one_b, 1},
                       Case{PipelineSchedule::interleaved_1f1b, 2}, Case{PipelineSchedule::zero_bubble, 1}}) {
    if (c.schedule != PipelineSchedule::one_f_one_b)
      check_follows_cpu(pipeline(c.schedule, 2, c.vpp, 2), nccl_float_cuda_backends());
    check_follows_cpu(pipeline(c.schedule, 4, c.vpp, 1), nccl_float_cuda_backends());
  }
}
#endif

}  // namespace
}  // namespace fsdpx::emulated_test
