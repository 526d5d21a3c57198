// executor/session/full_weights.cpp — full weights in and out of a trainer. Loading builds a one-rank state with one
// unsharded unit holding every module at its place in the layout-ordered weights and lets reshard_state
// move each module into the trainer's units and shards (units need not be in module order, a tied
// head's unit holds the embedding). A LoRA run loads its frozen base this way (the adapters keep their
// seeded start) and saves the merged model.
#include "executor/session/full_weights.h"

#include <nlohmann/json.hpp>

#include "executor/checkpoint/param_tensors.h"
#include "executor/checkpoint/reshard.h"
#include "executor/model/lora.h"

namespace fsdpx {

void load_full_weights(Trainer& trainer, const std::string& path) {
  const Plan& plan = trainer.plan();
  const ParamLayout layout = make_param_layout(plan.model);
  std::vector<UnitModule> modules;
  for (const ModuleLayout& m : layout.modules) modules.push_back(UnitModule{m.name, m.offset, m.numel});
  const TrainerState current = trainer.state();
  TrainerState whole = even_shard_layout({modules}, 1);
  whole.step = current.step, whole.data = current.data, whole.seed = current.seed;
  whole.loss_scaler = current.loss_scaler;
  whole.ranks[0].units[0].params = params_from_safetensors(layout, read_safetensors(path), path);
  trainer.load_state(reshard_state(whole, current, path));
}

void save_full_weights(const Trainer& trainer, const std::string& path, std::int64_t step) {
  const Plan& plan = trainer.plan();
  const ParamLayout layout = make_param_layout(plan.model);
  std::vector<float> full = trainer.gather_full_params();
  if (plan.lora)  // LoRA: the merged model W + (alpha / r) B A, which loads into any plan of the model
    merge_lora(plan.model, make_lora_layout(plan.model, *plan.lora), trainer.state().adapters.params.data(), full.data());
  write_safetensors(path, params_to_safetensors(layout, full,
                                                {{"format", "fsdpx-weights/1"},
                                                 {"model", model_spec_to_json(plan.model).dump()},
                                                 {"step", std::to_string(step)}}));
}

}  // namespace fsdpx
