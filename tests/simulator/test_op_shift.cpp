// tests/simulator/test_op_shift.cpp — simulator/op_shift.h's table against the construction it replaced
// (two hash tables per role and span, steady_state_pipeline.cpp before issue 36's probe12, kept here as the
// reference): the same shift for every op of every role, for spans of 1, 2, pp and 2 pp micro-batches, on
// the steady-state tests' plans (every schedule, the 70B plan with a kept copy, ops gathered twice per
// micro-batch under full recompute), and a shift that lands on the same op one micro-batch on.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "program/lower.h"
#include "simulator/op_shift.h"
#include "simulator/steady_state_pipeline.h"
#include "tests/support/pipelined_plan.h"

namespace fsdpx {

namespace {

std::uint64_t reference_key(const Op& op, int micro_batch, int ordinal) {
  const std::uint64_t fields[] = {std::uint64_t(op.kind),        std::uint64_t(op.stream),
                                  std::uint64_t(op.payload),     std::uint64_t(op.kept_shard_ranks > 0),
                                  std::uint64_t(ordinal),        std::uint64_t(op.stage + 1),
                                  std::uint64_t(op.segment + 1), std::uint64_t(op.unit + 1),
                                  std::uint64_t(micro_batch)};
  const int bits[] = {4, 4, 4, 1, 4, 11, 12, 12, 12};
  std::uint64_t key = 0;
  for (int i = 0; i < 9; ++i) {
    if (fields[i] >= (std::uint64_t(1) << bits[i])) return 0;
    key = key << bits[i] | fields[i];
  }
  return key;
}

std::vector<int> reference_shift(const RoleProgram& role, int d) {
  std::unordered_map<std::uint64_t, int> ids, ordinals;
  std::vector<int> ordinal(role.ops.size(), 0);
  for (std::size_t i = 0; i < role.ops.size(); ++i) {
    const Op& op = role.ops[i];
    if (op.micro_batch < 0) continue;
    ordinal[i] = ordinals[reference_key(op, op.micro_batch, 0)]++;
    if (const std::uint64_t key = reference_key(op, op.micro_batch, ordinal[i])) ids[key] = int(i);
  }
  std::vector<int> shift(role.ops.size(), -1);
  for (std::size_t i = 0; i < role.ops.size(); ++i) {
    const Op& op = role.ops[i];
    if (op.micro_batch < 0) continue;
    const std::uint64_t later = reference_key(op, op.micro_batch + d, ordinal[i]);
    const auto it = later ? ids.find(later) : ids.end();
    if (it != ids.end()) shift[i] = it->second;
  }
  return shift;
}

Parallelism shape(int pp, int dp_shard, int tp) {
  Parallelism p;
  p.pp = pp, p.dp_shard = dp_shard, p.tp = tp, p.sequence_parallel = tp > 1;
  return p;
}

}  // namespace

TEST_CASE("the op shift table gives the shifts of the per-span hash tables it replaced") {
  std::vector<Plan> plans;
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                             PipelineSchedule::interleaved_1f1b, PipelineSchedule::zero_bubble}) {
    const int vpp = s == PipelineSchedule::interleaved_1f1b ? 2 : 1;
    plans.push_back(test::pipelined_plan("llama-tiny", "cpu", shape(4, 2, 1), s, vpp, 64, 24, RecomputeMode::none));
    plans.push_back(test::pipelined_plan("llama3.1-8b", "dgx-h100", shape(4, 1, 2), s, vpp, 4096, 32,
                                         RecomputeMode::full));
  }
  plans.push_back(with_micro_batches(
      load_plan(FSDPX_TEST_DATA_DIR "/plans/llama3.1-70b-dgx-h100x512-pp4-tp4-1f1b.json"), 40));
  int shifted = 0, compared = 0;
  for (const Plan& p : plans) {
    const StepProgram program = lower(p);
    const int pp = p.parallelism.pp;
    for (std::size_t r = 0; r < program.roles.size(); ++r) {
      const OpShiftTable table(program.roles[r]);
      for (int d : {1, 2, pp, 2 * pp}) {
        INFO(p.model.name << " " << pipeline_schedule_name(p.parallelism.pp_schedule) << " role " << r << " d " << d);
        const std::vector<int> expected = reference_shift(program.roles[r], d);
        CHECK(table.shift(d) == expected);
        for (int s : expected) shifted += s >= 0;
        compared += int(expected.size());
      }
    }
  }
  MESSAGE(shifted << " of " << compared << " op shifts found");
  CHECK(shifted > compared / 2);
}

TEST_CASE("an op's shift is the same op d micro-batches later") {
  const Plan p = test::pipelined_plan("llama-tiny", "cpu", shape(2, 1, 1), PipelineSchedule::one_f_one_b, 1, 64, 8,
                                      RecomputeMode::full);
  const StepProgram program = lower(p);
  for (const RoleProgram& role : program.roles) {
    const OpShiftTable table(role);
    for (int d : {1, 3}) {
      const std::vector<int> shift = table.shift(d);
      int found = 0, eligible = 0;
      for (std::size_t i = 0; i < role.ops.size(); ++i) {
        const Op& a = role.ops[i];
        if (a.micro_batch < 0 || a.micro_batch + d >= 8) {
          CHECK(shift[i] == -1);
          continue;
        }
        ++eligible;
        if (shift[i] < 0) continue;
        ++found;
        const Op& b = role.ops[std::size_t(shift[i])];
        CHECK(b.micro_batch == a.micro_batch + d);
        CHECK(b.kind == a.kind);
        CHECK(b.stream == a.stream);
        CHECK(b.unit == a.unit);
        CHECK(b.segment == a.segment);
      }
      CHECK(found >= eligible * 9 / 10);
    }
  }
}

}  // namespace fsdpx
