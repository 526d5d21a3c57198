// executor/session/full_weights.cpp — full weights in and out of a trainer. Loading builds a one-rank state with one
// unsharded unit holding every module at its place in the layout-ordered weights and lets reshard_state
// move each module into the trainer's units and shards (units need not be in module order, a tied
// head's unit holds the embedding). A LoRA run loads its frozen base this way (the adapters keep their
// seeded start) and saves the merged model; its adapters go out on their own as named tensors.
#include "executor/session/full_weights.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "executor/checkpoint/param_tensors.h"
#include "executor/checkpoint/reshard.h"
#include "executor/model/lora.h"

namespace fsdpx {

void load_full_weights(Trainer& trainer, const std::string& path) {
  const RunSettings& run = trainer.program().settings;
  const ParamLayout layout = make_param_layout(run.model);
  std::vector<UnitModule> modules;
  for (const ModuleLayout& m : layout.modules) modules.push_back(UnitModule{m.name, m.offset, m.numel});
  const TrainerState current = trainer.state();
  TrainerState whole = even_shard_layout({modules}, 1);
  whole.step = current.step, whole.data = current.data, whole.seed = current.seed;
  whole.loss_scaler = current.loss_scaler;
  whole.ranks[0].units[0].params = params_from_safetensors(layout, read_safetensors(path), path);
  trainer.load_state(reshard_state(whole, current, path));
}

void save_full_params(const RunSettings& run, std::vector<float> full, const std::vector<float>& adapters,
                      const std::string& path, std::int64_t step) {
  const ParamLayout layout = make_param_layout(run.model);
  if (run.lora)  // LoRA: the merged model W + (alpha / r) B A, which loads into any plan of the model
    merge_lora(run.model, make_lora_layout(run.model, *run.lora), adapters.data(), full.data());
  write_safetensors(path, params_to_safetensors(layout, full,
                                                {{"format", "fsdpx-weights/1"},
                                                 {"model", model_spec_to_json(run.model).dump()},
                                                 {"step", std::to_string(step)}}));
}

void save_full_weights(const Trainer& trainer, const std::string& path, std::int64_t step) {
  save_full_params(trainer.program().settings, trainer.gather_full_params(), trainer.state().adapters.params, path, step);
}

SafetensorsFile adapters_to_safetensors(const LoraLayout& l, std::span<const float> adapters, double alpha) {
  FSDP_CHECK(std::int64_t(adapters.size()) == l.total, "adapters_to_safetensors: buffer of another layout");
  SafetensorsFile f;
  for (std::int64_t blk = 0; blk < l.layers; ++blk)
    for (const LoraSlot& s : l.slots) {
      const std::string name = fmt::format("block.{}.{}.lora_", blk, lora_target_name(s.target));
      const float* a = adapters.data() + l.block_offset(blk) + s.a_offset;
      const float* b = adapters.data() + l.block_offset(blk) + s.b_offset;
      f.tensors.push_back(st_floats(name + "A", StDType::f32, {l.rank, s.in}, {a, std::size_t(l.rank * s.in)}));
      f.tensors.push_back(st_floats(name + "B", StDType::f32, {s.out, l.rank}, {b, std::size_t(s.out * l.rank)}));
    }
  f.metadata = {{"format", "fsdpx-lora-adapters/1"}, {"rank", std::to_string(l.rank)},
                {"alpha", fmt::format("{}", alpha)}, {"scale", fmt::format("{}", l.scale)}};
  return f;
}

void save_adapter_weights(const Trainer& trainer, const std::string& path, std::int64_t step) {
  const RunSettings& run = trainer.program().settings;
  FSDP_CHECK(run.lora.has_value(), "save_adapter_weights: a plan without LoRA");
  SafetensorsFile f = adapters_to_safetensors(make_lora_layout(run.model, *run.lora),
                                              trainer.state().adapters.params, run.lora->alpha);
  f.metadata["step"] = std::to_string(step);
  write_safetensors(path, f);
}

void merge_trained_adapters(TrainedWeights& w) {
  if (!w.plan.lora) return;
  const LoraLayout l = make_lora_layout(w.plan.model, *w.plan.lora);
  // The fingerprint covers the lora section and the manifest the adapters' size, so they agree.
  FSDP_CHECK(std::int64_t(w.adapters.size()) == l.total, "merge_trained_adapters: adapters of another layout");
  merge_lora(w.plan.model, l, w.adapters.data(), w.params.data());
}

}  // namespace fsdpx
