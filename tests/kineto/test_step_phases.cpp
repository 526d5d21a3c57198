// tests/kineto/test_step_phases.cpp — phases of a profiled step: on the FSDP2 run of the PyTorch twin on CPU
// with gloo (tests/data/kineto/README.md), and on a synthetic GPU trace whose launches say the phase.
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "kineto/step_phases.h"

using namespace fsdpx;

namespace {
const std::string kData = std::string(FSDPX_TEST_DATA_DIR) + "/kineto";
}

TEST_CASE("a CPU FSDP2 trace: the collectives each step issued, by the kind the c10d call names") {
  const auto ranks = read_kineto_traces(kData + "/fsdp2_cpu_gloo");
  REQUIRE(ranks.size() == 4);
  for (const RankTrace& t : ranks) {
    const MeasuredPhases m = measured_phases(t);
    CHECK(m.host);
    CHECK(m.steps == 2);
    // 4 units all-gathered in forward and units 0-2 again in backward (reshard after forward), 2 micro-batches.
    CHECK(m.phase_count.at("all_gather") == 14);
    // each unit's gradients reduce-scattered per micro-batch (reduce_grads every_micro_batch): 4 x 2.
    CHECK(m.phase_count.at("reduce_scatter") == 8);
    CHECK(m.phase_count.at("all_reduce") == 1);  // the gradient norm
    for (const char* p : {"forward", "backward", "optimizer"}) CHECK(m.phase_s.at(p) > 0);
    CHECK(m.phase_s.at("forward") + m.phase_s.at("backward") + m.phase_s.at("optimizer") < m.step_s);
    CHECK(m.exposed_communication_s <= m.phase_s.at("all_gather") + m.phase_s.at("reduce_scatter") +
                                           m.phase_s.at("all_reduce"));
  }
}

TEST_CASE("a GPU trace: kernels go to the phase of their launch") {
  // forward launch on the loop thread (tid 1); backward launch on the autograd thread (tid 2); optimizer
  // launch inside Optimizer.step; one NCCL reduce-scatter overlapping the backward kernel by 5 us.
  const std::string trace = R"JSON({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step", "pid": 1, "tid": 1, "ts": 50, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 20, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 21, "dur": 1, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 51, "dur": 1, "args": {"correlation": 4}},
    {"ph": "X", "cat": "kernel", "name": "gemm_fwd", "pid": 0, "tid": 7, "ts": 2, "dur": 10, "args": {"stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm_bwd", "pid": 0, "tid": 7, "ts": 22, "dur": 20, "args": {"stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "pid": 0, "tid": 9, "ts": 37, "dur": 10, "args": {"stream": 9, "correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "multi_tensor_apply_kernel", "pid": 0, "tid": 7, "ts": 52, "dur": 4, "args": {"stream": 7, "correlation": 4}}]})JSON";
  const std::string path = "/tmp/fsdpx_test_kineto_phases.json";
  std::ofstream(path) << trace;
  const MeasuredPhases m = measured_phases(read_kineto_trace(path));
  CHECK(!m.host);
  CHECK(m.step_s == doctest::Approx(100e-6));
  CHECK(m.phase_s.at("forward") == doctest::Approx(10e-6));
  CHECK(m.phase_s.at("backward") == doctest::Approx(20e-6));
  CHECK(m.phase_s.at("optimizer") == doctest::Approx(4e-6));
  CHECK(m.phase_s.at("reduce_scatter") == doctest::Approx(10e-6));
  CHECK(m.exposed_communication_s == doctest::Approx(5e-6));
}
