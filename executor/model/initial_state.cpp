// executor/model/initial_state.cpp — the initial unit shard and adapter states (see initial_state.h).
#include "executor/model/initial_state.h"

#include "executor/model/init.h"

namespace fsdpx {

UnitShardState initial_unit_state(const ParamLayout& layout, const FlatUnitLayout& f, std::int64_t shard_offset,
                                  std::uint64_t seed) {
  const auto n = std::size_t(f.shard_numel);
  UnitShardState s;
  s.unit_numel = f.numel;
  s.shard_offset = shard_offset;
  s.params.resize(n);
  s.exp_avg.assign(n, 0.0f), s.exp_avg_sq.assign(n, 0.0f);
  init_unit_range(layout, f, seed, shard_offset, shard_offset + f.shard_numel, s.params.data());
  return s;
}

AdapterState initial_adapter_state(const LoraLayout& l, std::uint64_t seed) {
  const auto n = std::size_t(l.total);
  AdapterState a{std::vector<float>(n), std::vector<float>(n, 0.0f), std::vector<float>(n, 0.0f)};
  init_lora(l, seed, a.params.data());
  return a;
}

}  // namespace fsdpx
