// executor/model/rank_fsdp_units.h — the FSDP units one rank holds (runtime/rank_units.h), made alike on
// every backend over its device policy (fsdp_unit.h): sharded over the rank's shard group, replicated
// under DDP and ZeRO-1, or in two parts under expert parallelism (expert_shards.h), with the ranges AdamW
// steps (optimizer_ranges.h: all but buffers), and their initial state. Leaves out how a state loads
// (the backend's hook).
#pragma once

#include <memory>

#include "core/dtype.h"
#include "executor/model/expert_shards.h"
#include "executor/model/fsdp_unit.h"
#include "executor/model/initial_state.h"
#include "executor/model/optimizer_ranges.h"
#include "executor/runtime/rank_units.h"
#include "executor/runtime/runtime_program.h"

namespace fsdpx {

template <class Device>
RankUnits<FsdpUnitT<Device>> make_rank_units(const RuntimeProgram& rp, int rank, int role, const ModelParallel& par,
                                             DType reduce, MemoryTracker* mem, const Device& dev) {
  using Unit = FsdpUnitT<Device>;
  const int shard = rank_shard(rp, rank).unit_shard;
  const ParamLayout& local = rank_layout(rp, par);
  const ExpertGroupPlace experts = expert_group_place(rp, rank);
  RankUnits<Unit> units(rp, role, [&](int u) {
    const FlatUnitLayout& f = rp.flats[std::size_t(u)];
    if (par.ep > 1)  // the experts apart, over efsdp
      return std::make_unique<Unit>(
          f, make_expert_shards(local, f, rp.shard_count, shard, experts.efsdp_ranks, experts.efsdp_index), reduce,
          mem, dev);
    return std::make_unique<Unit>(f, shard, replicated_params(rp, u), reduce, mem, dev);
  });
  for (Unit* u : units.all()) {
    const ExpertShards* parts = u->expert_shards();
    u->set_stepped(parts ? stepped_ranges(local, u->flat(), *parts)
                         : stepped_ranges(local, u->flat(), u->shard_offset(), u->flat().shard_numel));
  }
  return units;
}

// The shared initial states (initial_state.h, expert_shards.h: the same values on every backend) of the
// rank's units, each loaded through `load` (the backend's hook that loads a checkpoint, done with the
// state when it returns) with zero moments; the copy of a tied table has the embedding unit's layout, so
// it starts with the same values. One host state serves every dense unit in turn.
template <class Unit, class Load>
void load_initial_states(const RuntimeProgram& rp, const ModelParallel& par, const RankUnits<Unit>& units,
                         std::uint64_t seed, Load load) {
  UnitShardState dense;
  for (Unit* u : units.all()) {
    if (const ExpertShards* parts = u->expert_shards()) {
      UnitShardState s;
      s.params.resize(std::size_t(parts->state_numel()));
      init_expert_shards(rank_layout(rp, par), u->flat(), *parts, seed, s.params.data());
      load(*u, s);
    } else {
      fill_initial_unit_state(rp.tp_layouts[std::size_t(par.tp_rank)], u->flat(), u->shard_offset(), seed, dense);
      load(*u, dense);
    }
  }
}

}  // namespace fsdpx
