// executor/checkpoint/trained_weights.cpp — the full parameters out of a sharded state (see
// trained_weights.h).
#include "executor/checkpoint/trained_weights.h"

#include "executor/checkpoint/reshard.h"

namespace fsdpx {

std::vector<float> full_params_from_state(const TrainerState& saved, const ParamLayout& layout,
                                          const std::string& origin) {
  // One unit holding every module in forward order on one shard owner: its flat buffer is the model.
  std::vector<UnitModule> modules;
  for (const ModuleLayout& m : layout.modules) modules.push_back({m.name, m.offset, m.numel});
  TrainerState whole = reshard_state(saved, even_shard_layout({modules}, 1), origin);
  return std::move(whole.ranks.at(0).units.at(0).params);
}

}  // namespace fsdpx
