// planner/pass_states.h — what each pipeline rank holds at its passes, for the memory bound
// (memory_bound.h): per chunk the micro-batches whose activations are saved and, under ZB, those whose B
// kept what W needs, at its forwards, at the start of each chunk's first whole backward pass and at its
// later ones. Only the rows that can be the largest are kept, and they are computed once per process for
// each (schedule, pp, vpp, walked micro-batches): every shape of a search shares them. Leaves out the
// bytes (the bound weighs the counts per plan) and GPipe and unpipelined plans (the bound needs no walk).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "core/plan.h"
#include "program/pipeline_schedule.h"

namespace fsdpx {

// Rows of per-chunk counts: [saved per chunk..., weight-pass per chunk...] (2 x vpp each).
using HeldRows = std::vector<std::vector<int>>;

// Where a rank's rows are taken.
enum class PassMoment { forward, first_backward, later_backward };

// One rank's distinct rows per PassMoment, in lexicographic order, from one walk of its passes in
// schedule order (the lowering's activation category exactly: only compute ops touch it).
std::array<HeldRows, 3> walk_held_rows(const std::vector<PipeAction>& actions, int vpp);

// The rows of `rows` that no other row is at least componentwise (the Pareto-maximal ones), in their order.
HeldRows maximal_rows(const HeldRows& rows);

// Per pipeline rank: maximal_rows of walk_held_rows of pipeline_actions(schedule, pp, vpp, rank, walked).
using PassStates = std::vector<std::array<HeldRows, 3>>;

// pipeline_pass_states without the memo.
PassStates compute_pass_states(PipelineSchedule schedule, int pp, int vpp, int walked);

// The same, memoized for the process (thread-safe; a pure function of its arguments).
std::shared_ptr<const PassStates> pipeline_pass_states(PipelineSchedule schedule, int pp, int vpp, int walked);

}  // namespace fsdpx
