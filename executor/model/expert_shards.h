// executor/model/expert_shards.h — an FSDP unit's two shardings under expert parallelism, device-neutral
// (the one FSDP unit of both backends, executor/model/fsdp_unit.h, holds them, so both backends hold the
// same elements and checkpoints move between them): the
// routed experts' elements (TensorSlot::expert, the rank's local experts at each MoE block's tail) are
// sharded over the experts' own FSDP group (efsdp: dp_shard x cp / ep ranks), the rest over dp_shard, as
// the step program's twin ops gather and reduce them (program/lower_units.cpp split_experts; torchtitan
// applies fully_shard to the experts over its dp_shard_in_ep mesh). The rank's state is its dense shard
// then its expert shard, back to back. Leaves out the other data-parallel modes (HSDP, DDP, ZeRO-1) and
// FSDP2's int reshard_after_forward with experts: the backend refuses them.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/runtime/param_layout.h"

namespace fsdpx {

struct ExpertShards {
  std::vector<std::int64_t> dense, expert;  // unit element of each element of the part, in unit order
  std::int64_t dense_shard = 0, expert_shard = 0;  // elements of each part per rank (padded)
  int dense_ranks = 1, dense_index = 0;            // dp_shard, this rank's shard of the dense part
  int expert_ranks = 1, expert_index = 0;          // efsdp, this rank's shard of the expert part
  std::int64_t state_numel() const { return dense_shard + expert_shard; }
};

// The unit as its FSDP lifecycle (runtime/unit_lifecycle.h) sees it: the dense part's shards over
// dp_shard (its group-size checks and byte counts; a backend counts the experts' bytes beside them).
FlatUnitLayout expert_dense_view(FlatUnitLayout f, const ExpertShards& p);
// The unit as the rank's state sees it: shard_numel the state's length (both parts), padded_numel the
// unsharded buffer's (no padding: each part pads its own staging).
FlatUnitLayout expert_state_view(FlatUnitLayout f, const ExpertShards& p);

// The parts of flat unit `f` (laid out by `local`, the rank's layout).
ExpertShards make_expert_shards(const ParamLayout& local, const FlatUnitLayout& f, int dense_ranks, int dense_index,
                                int expert_ranks, int expert_index);

// A part as runs of consecutive unit elements (each tensor is one run, and neighbouring tensors merge),
// which the unit copies as ranges: element part_at + i of the part is unit element unit_at + i, i < count.
struct PartRun {
  std::int64_t part_at = 0, unit_at = 0, count = 0;
};
std::vector<PartRun> part_runs(const std::vector<std::int64_t>& part);

// The rank's initial state [state_numel()]: each element's init value (executor/model/init.h) by its
// element of the rank's layout, so every ep degree starts from the same model.
void init_expert_shards(const ParamLayout& local, const FlatUnitLayout& f, const ExpertShards& s, std::uint64_t seed,
                        float* out);

}  // namespace fsdpx
