// program/pipeline_schedule.cpp — pass order per pipeline rank for each schedule (see
// pipeline_schedule.h for the sources).
#include "program/pipeline_schedule.h"

#include <algorithm>
#include <utility>

#include "core/errors.h"

namespace fsdpx {

const char* pipe_pass_name(PipePass p) {
  switch (p) {
    case PipePass::forward: return "forward";
    case PipePass::backward: return "backward";
    case PipePass::backward_input: return "backward_input";
    case PipePass::backward_weight: return "backward_weight";
  }
  FSDP_CHECK(false, "unknown PipePass");
  return "";
}

namespace {

// Megatron-LM's get_schedule_table with microbatch_group_size_per_vp_stage = pp (its default): virtual
// micro-batch k -> (micro-batch, chunk); groups of pp micro-batches run through every chunk in turn.
std::vector<std::pair<int, int>> interleaved_table(int micro_batches, int vpp, int group) {
  std::vector<std::pair<int, int>> table;
  for (int first = 0; first < micro_batches; first += group) {
    const int last = first + group >= micro_batches ? micro_batches : first + group;
    for (int chunk = 0; chunk < vpp; ++chunk)
      for (int mb = first; mb < last; ++mb) table.emplace_back(mb, chunk);
  }
  return table;
}

// Warm-up forwards, steady forward+backward pairs, cool-down backwards (Megatron's loop), with
// forward(k) and backward(k) naming the k-th forward and backward pass.
template <typename F, typename B>
std::vector<PipeAction> one_f_one_b(int total, int warmup, F forward, B backward) {
  std::vector<PipeAction> out;
  for (int k = 0; k < warmup; ++k) out.push_back(forward(k));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(forward(warmup + k));
    out.push_back(backward(k));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(backward(k));
  return out;
}

// torch's _get_1f1b_rank_ops with enable_zero_bubble and one stage per rank: after each B of the
// steady and cool-down phases, the oldest pending W once rank steps have passed; the rest at the end.
std::vector<PipeAction> zero_bubble_h1(int pp, int rank, int m) {
  const int warmup = std::min(pp - rank - 1, m);
  std::vector<PipeAction> out;
  int f = 0, b = 0, w = 0;
  for (int op = 0; op < m + warmup; ++op) {
    if (op < m) out.push_back({PipePass::forward, 0, f++});
    if (op < warmup) continue;
    out.push_back({PipePass::backward_input, 0, b++});
    if (op - warmup >= rank) out.push_back({PipePass::backward_weight, 0, w++});
  }
  while (w < b) out.push_back({PipePass::backward_weight, 0, w++});
  return out;
}

}  // namespace

int warmup_forwards(PipelineSchedule schedule, int pp, int vpp, int rank, int micro_batches) {
  switch (schedule) {
    case PipelineSchedule::none: return std::min(1, micro_batches);
    case PipelineSchedule::gpipe: return micro_batches;
    case PipelineSchedule::one_f_one_b:
    case PipelineSchedule::zero_bubble: return std::min(pp - rank - 1, micro_batches);
    case PipelineSchedule::interleaved_1f1b:
      return std::min((pp - rank - 1) * 2 + (vpp - 1) * pp, micro_batches * vpp);
  }
  FSDP_CHECK(false, "unknown PipelineSchedule");
  return 0;
}

std::vector<PipeAction> pipeline_actions(PipelineSchedule schedule, int pp, int vpp, int rank, int micro_batches) {
  FSDP_CHECK(pp >= 1 && vpp >= 1 && rank >= 0 && rank < pp && micro_batches >= 1, "pipeline_actions: bad sizes");
  const int m = micro_batches;
  auto fwd = [](int k) { return PipeAction{PipePass::forward, 0, k}; };
  auto bwd = [](int k) { return PipeAction{PipePass::backward, 0, k}; };
  switch (schedule) {
    case PipelineSchedule::none: {
      std::vector<PipeAction> out;
      for (int k = 0; k < m; ++k) out.insert(out.end(), {fwd(k), bwd(k)});
      return out;
    }
    case PipelineSchedule::gpipe: return one_f_one_b(m, m, fwd, bwd);
    case PipelineSchedule::one_f_one_b:
      return one_f_one_b(m, warmup_forwards(schedule, pp, vpp, rank, m), fwd, bwd);
    case PipelineSchedule::zero_bubble: return zero_bubble_h1(pp, rank, m);
    case PipelineSchedule::interleaved_1f1b: {
      FSDP_CHECK(m % pp == 0, "interleaved 1F1B needs micro-batches divisible by pp");
      const auto table = interleaved_table(m, vpp, pp);
      auto f = [&](int k) { return PipeAction{PipePass::forward, table[k].second, table[k].first}; };
      auto b = [&](int k) { return PipeAction{PipePass::backward, vpp - 1 - table[k].second, table[k].first}; };
      return one_f_one_b(m * vpp, warmup_forwards(schedule, pp, vpp, rank, m), f, b);
    }
  }
  FSDP_CHECK(false, "unknown PipelineSchedule");
  return {};
}

}  // namespace fsdpx
