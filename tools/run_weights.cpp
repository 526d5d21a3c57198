// tools/run_weights.cpp — full weights in and out of a trainer. Loading builds a one-rank state with the
// plan's units unsharded (each unit's modules copied from the layout-ordered weights: units need not be
// in module order, a tied head's unit holds the embedding) and lets reshard_state cut it into the
// trainer's shards.
#include "tools/run_weights.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "executor/checkpoint/param_tensors.h"
#include "executor/checkpoint/reshard.h"

namespace fsdpx {

void load_full_weights(Trainer& trainer, const std::string& path) {
  const Plan& plan = trainer.plan();
  const ParamLayout layout = make_param_layout(plan.model);
  const std::vector<float> full = params_from_safetensors(layout, read_safetensors(path), path);
  std::vector<FlatUnitLayout> units;
  std::vector<std::int64_t> unit_numel;
  for (const PlanUnit& u : plan.units) {
    units.push_back(make_flat_unit(layout, u.modules, 1));
    unit_numel.push_back(units.back().numel);
  }
  const TrainerState current = trainer.state();
  TrainerState whole = even_shard_layout(unit_numel, 1);
  whole.step = current.step, whole.data = current.data, whole.seed = current.seed;
  for (std::size_t u = 0; u < units.size(); ++u)
    for (std::size_t k = 0; k < units[u].modules.size(); ++k) {
      const ModuleLayout& m = layout.modules[std::size_t(units[u].modules[k])];
      std::vector<float>& unit = whole.ranks[0].units[u].params;
      std::copy_n(full.begin() + m.offset, m.numel, unit.begin() + units[u].module_offsets[k]);
    }
  trainer.load_state(reshard_state(whole, current, path));
}

void save_full_weights(const Trainer& trainer, const std::string& path, std::int64_t step) {
  const Plan& plan = trainer.plan();
  const ParamLayout layout = make_param_layout(plan.model);
  const std::vector<float> full = trainer.gather_full_params();
  write_safetensors(path, params_to_safetensors(layout, full,
                                                {{"format", "fsdpx-weights/1"},
                                                 {"model", model_spec_to_json(plan.model).dump()},
                                                 {"step", std::to_string(step)}}));
}

}  // namespace fsdpx
