// executor/model/initial_state.cpp — the initial unit shard and adapter states (see initial_state.h).
#include "executor/model/initial_state.h"

#include "executor/model/init.h"

namespace fsdpx {

void fill_initial_unit_state(const ParamLayout& layout, const FlatUnitLayout& f, std::int64_t shard_offset,
                             std::uint64_t seed, UnitShardState& s) {
  s.unit_numel = f.numel;
  s.shard_offset = shard_offset;
  s.modules.clear();
  const auto n = std::size_t(f.shard_numel);
  if (n > s.params.capacity()) s.params.clear();  // a larger buffer: nothing to copy into it
  s.params.resize(n);  // within the capacity and size: no new pages, nothing zeroed
  s.exp_avg.clear(), s.exp_avg_sq.clear();  // zero moments (both backends' upload): no host zeros to copy
  init_unit_range(layout, f, seed, shard_offset, shard_offset + f.shard_numel, s.params.data());
}

UnitShardState initial_unit_state(const ParamLayout& layout, const FlatUnitLayout& f, std::int64_t shard_offset,
                                  std::uint64_t seed) {
  UnitShardState s;
  fill_initial_unit_state(layout, f, shard_offset, seed, s);
  return s;
}

AdapterState initial_adapter_state(const LoraLayout& l, std::uint64_t seed) {
  const auto n = std::size_t(l.total);
  AdapterState a{std::vector<float>(n), std::vector<float>(n, 0.0f), std::vector<float>(n, 0.0f)};
  init_lora(l, seed, a.params.data());
  return a;
}

}  // namespace fsdpx
