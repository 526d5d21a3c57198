// tests/program/test_pipeline_schedule.cpp — pass order per pipeline rank against the schedules'
// definitions: GPipe (all forwards first), 1F1B's pp − rank − 1 warm-up forwards, steady pairs and
// cool-down backwards and its pp − rank micro-batches in flight, Megatron-LM's interleaved order
// written out by hand from its schedule table (PP2, VP2, M4), and ZB-H1's deferred weight passes.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "program/pipeline_schedule.h"

namespace fsdpx {
namespace {

// "F0" forward of micro-batch 0 (chunk 0), "B1.c1" backward of micro-batch 1 in chunk 1, "I"/"W" ZB.
std::string describe(const std::vector<PipeAction>& actions) {
  std::string out;
  for (const PipeAction& a : actions) {
    if (!out.empty()) out += ' ';
    out += "FBIW"[int(a.pass)];
    out += std::to_string(a.micro_batch);
    if (a.chunk > 0) out += ".c" + std::to_string(a.chunk);
  }
  return out;
}

// Most micro-batches whose forward ran and whose (input-gradient) backward has not.
int max_in_flight(const std::vector<PipeAction>& actions) {
  int live = 0, most = 0;
  for (const PipeAction& a : actions) {
    if (a.pass == PipePass::forward) most = std::max(most, ++live);
    if (a.pass == PipePass::backward || a.pass == PipePass::backward_input) --live;
  }
  return most;
}

int leading_forwards(const std::vector<PipeAction>& actions) {
  int n = 0;
  while (n < int(actions.size()) && actions[std::size_t(n)].pass == PipePass::forward) ++n;
  return n;
}

TEST_CASE("without pipelining: forward then backward per micro-batch") {
  CHECK(describe(pipeline_actions(PipelineSchedule::none, 1, 1, 0, 3)) == "F0 B0 F1 B1 F2 B2");
}

TEST_CASE("GPipe: every forward, then every backward, on every rank") {
  for (int rank = 0; rank < 4; ++rank) {
    const auto a = pipeline_actions(PipelineSchedule::gpipe, 4, 1, rank, 3);
    CHECK(describe(a) == "F0 F1 F2 B0 B1 B2");
    CHECK(max_in_flight(a) == 3);
  }
}

TEST_CASE("1F1B: pp - rank - 1 warm-up forwards, steady pairs, cool-down backwards") {
  const int pp = 4, m = 8;
  for (int rank = 0; rank < pp; ++rank) {
    INFO("rank " << rank);
    const auto a = pipeline_actions(PipelineSchedule::one_f_one_b, pp, 1, rank, m);
    const int warmup = pp - rank - 1;
    CHECK(warmup_forwards(PipelineSchedule::one_f_one_b, pp, 1, rank, m) == warmup);
    CHECK(leading_forwards(a) == warmup + 1);  // the warm-up and the first steady forward
    CHECK(max_in_flight(a) == pp - rank);       // Narayanan et al. 2021 §2.2: at most p in flight
    REQUIRE(a.size() == std::size_t(2 * m));
    // Steady state: m - warmup (forward, backward) pairs; cool-down: warmup backwards.
    for (int k = 0; k < m - warmup; ++k) {
      CHECK(a[std::size_t(warmup + 2 * k)].pass == PipePass::forward);
      CHECK(a[std::size_t(warmup + 2 * k + 1)].pass == PipePass::backward);
      CHECK(a[std::size_t(warmup + 2 * k + 1)].micro_batch == k);
    }
    for (int k = 0; k < warmup; ++k) CHECK(a[std::size_t(2 * m - 1 - k)].pass == PipePass::backward);
  }
  CHECK(describe(pipeline_actions(PipelineSchedule::one_f_one_b, 4, 1, 2, 4)) == "F0 F1 B0 F2 B1 F3 B2 B3");
}

TEST_CASE("fewer micro-batches than stages: the warm-up is cut short (Megatron's cap)") {
  CHECK(describe(pipeline_actions(PipelineSchedule::one_f_one_b, 4, 1, 0, 2)) == "F0 F1 B0 B1");
  CHECK(describe(pipeline_actions(PipelineSchedule::zero_bubble, 4, 1, 0, 2)) == "F0 F1 I0 W0 I1 W1");
  CHECK(describe(pipeline_actions(PipelineSchedule::zero_bubble, 4, 1, 3, 2)) == "F0 I0 F1 I1 W0 W1");
}

TEST_CASE("interleaved 1F1B follows Megatron-LM's schedule table (PP2, VP2, M4)") {
  // Table: (mb, chunk) = (0,0) (1,0) (0,1) (1,1) (2,0) (3,0) (2,1) (3,1); backward chunk = vpp-1-chunk.
  // Rank 0: warm-up (2-0-1)*2 + (2-1)*2 = 4 forwards; rank 1: 2.
  CHECK(describe(pipeline_actions(PipelineSchedule::interleaved_1f1b, 2, 2, 0, 4)) ==
        "F0 F1 F0.c1 F1.c1 F2 B0.c1 F3 B1.c1 F2.c1 B0 F3.c1 B1 B2.c1 B3.c1 B2 B3");
  CHECK(describe(pipeline_actions(PipelineSchedule::interleaved_1f1b, 2, 2, 1, 4)) ==
        "F0 F1 F0.c1 B0.c1 F1.c1 B1.c1 F2 B0 F3 B1 F2.c1 B2.c1 F3.c1 B3.c1 B2 B3");
  CHECK(warmup_forwards(PipelineSchedule::interleaved_1f1b, 4, 3, 0, 8) == 3 * 2 + 2 * 4);
  CHECK(warmup_forwards(PipelineSchedule::interleaved_1f1b, 4, 3, 0, 4) == 12);  // capped at m x vpp
}

TEST_CASE("ZB-H1: backward split into B and W; rank r defers its weight passes by r steps") {
  const int pp = 4, m = 8;
  for (int rank = 0; rank < pp; ++rank) {
    INFO("rank " << rank);
    const auto a = pipeline_actions(PipelineSchedule::zero_bubble, pp, 1, rank, m);
    REQUIRE(a.size() == std::size_t(3 * m));
    CHECK(leading_forwards(a) == pp - rank);
    CHECK(max_in_flight(a) == pp - rank);  // the same activations in flight as 1F1B
    std::vector<int> b_at(m, -1), w_at(m, -1);
    for (int i = 0; i < int(a.size()); ++i) {
      if (a[std::size_t(i)].pass == PipePass::backward_input) b_at[std::size_t(a[std::size_t(i)].micro_batch)] = i;
      if (a[std::size_t(i)].pass == PipePass::backward_weight) w_at[std::size_t(a[std::size_t(i)].micro_batch)] = i;
    }
    for (int k = 0; k < m; ++k) CHECK(w_at[std::size_t(k)] > b_at[std::size_t(k)]);
    // The last `rank` weight passes fill the cool-down: they come after the last B.
    const auto trailing = std::count_if(a.end() - rank, a.end(), [](const PipeAction& x) {
      return x.pass == PipePass::backward_weight;
    });
    CHECK(trailing == rank);
  }
  CHECK(describe(pipeline_actions(PipelineSchedule::zero_bubble, 2, 1, 1, 3)) == "F0 I0 F1 I1 W0 F2 I2 W1 W2");
  CHECK(describe(pipeline_actions(PipelineSchedule::zero_bubble, 2, 1, 0, 3)) == "F0 F1 I0 W0 F2 I1 W1 I2 W2");
}

}  // namespace
}  // namespace fsdpx
