// executor/session/process_weights.cpp — full parameters across processes. See process_weights.h.
#include "executor/session/process_weights.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "core/errors.h"
#include "executor/checkpoint/trained_weights.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

std::vector<float> gather_full_params_over_processes(Trainer& trainer, const TrainerState& local) {
  const TrainerState layout = trainer.load_layout();  // the unit shapes, the same in every process
  const std::vector<UnitShardState>& shape = layout.ranks.front().units;
  const auto owners = std::size_t(local.dp_shard);
  std::vector<std::size_t> unit_base(shape.size() + 1, 0);  // word offset of each unit's owners x shard
  for (std::size_t u = 0; u < shape.size(); ++u) unit_base[u + 1] = unit_base[u] + owners * shape[u].params.size();
  std::vector<std::uint64_t> words(unit_base.back(), 0);
  for (const RankState& r : local.ranks)
    for (std::size_t u = 0; u < r.units.size(); ++u) {
      const std::vector<float>& p = r.units[u].params;
      FSDP_CHECK(p.size() == shape[u].params.size(), "gather_full_params_over_processes: shards of unequal length");
      const std::size_t at = unit_base[u] + std::size_t(r.rank) * p.size();
      for (std::size_t i = 0; i < p.size(); ++i) words[at + i] = std::bit_cast<std::uint32_t>(p[i]);
    }
  words = trainer.sum_over_processes(words);
  TrainerState all = local;  // every shard owner's units, as a checkpoint of the whole job holds them
  all.ranks.assign(owners, RankState{});
  for (std::size_t r = 0; r < owners; ++r) {
    all.ranks[r].rank = int(r);
    for (std::size_t u = 0; u < shape.size(); ++u) {
      UnitShardState us = shape[u];
      const std::size_t len = us.params.size(), at = unit_base[u] + r * len;
      us.shard_offset = std::int64_t(r * len);
      for (std::size_t i = 0; i < len; ++i) us.params[i] = std::bit_cast<float>(std::uint32_t(words[at + i]));
      all.ranks[r].units.push_back(std::move(us));
    }
  }
  return full_params_from_state(all, make_param_layout(trainer.program().settings.model), "the processes' shards");
}

}  // namespace fsdpx
