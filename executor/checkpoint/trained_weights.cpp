// executor/checkpoint/trained_weights.cpp — plan.json beside the checkpoints and the full parameters
// out of a sharded state (see trained_weights.h).
#include "executor/checkpoint/trained_weights.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/reshard.h"
#include "executor/checkpoint/shard_file.h"

namespace fsdpx {

void write_checkpoint_plan(const std::string& root, const Plan& plan) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot create the checkpoint directory: {}", root, ec.message()));
  const std::string path = (std::filesystem::path(root) / kCheckpointPlanFile).string();
  write_output_file(path, plan_to_json(plan).dump(2) + "\n");
}

std::vector<float> full_params_from_state(const TrainerState& saved, const ParamLayout& layout,
                                          const std::string& origin) {
  // One unit holding every module in forward order on one shard owner: its flat buffer is the model.
  std::vector<UnitModule> modules;
  for (const ModuleLayout& m : layout.modules) modules.push_back({m.name, m.offset, m.numel});
  TrainerState whole = reshard_state(saved, even_shard_layout({modules}, 1), origin);
  return std::move(whole.ranks.at(0).units.at(0).params);
}

TrainedWeights load_trained_weights(const std::string& dir) {
  namespace fs = std::filesystem;
  // A step directory holds manifest.json; its plan.json is in the root above it.
  const bool step_dir = fs::exists(fs::path(dir) / "manifest.json");
  const fs::path root = step_dir ? fs::path(dir).parent_path() : fs::path(dir);
  const std::string plan_file = (root / kCheckpointPlanFile).string();
  if (!fs::exists(plan_file))
    throw ConfigError(fmt::format("{}: missing (written by fsdpx run --checkpoint-dir next to its checkpoints)",
                                  plan_file));
  TrainedWeights w;
  w.plan = load_plan(plan_file);
  const std::string fingerprint = plan_fingerprint(w.plan);
  TrainerState state;
  if (step_dir) {
    state = read_checkpoint(dir, fingerprint);
    w.checkpoint = dir;
  } else {
    std::vector<std::string> rejected;
    auto loaded = load_latest_checkpoint(root.string(), fingerprint, &rejected);
    if (!loaded)
      throw ConfigError(fmt::format("{}: no loadable checkpoint ({})", dir,
                                    rejected.empty() ? "no step-NNNNNN directory" : rejected.front()));
    state = std::move(loaded->state);
    w.checkpoint = loaded->dir;
  }
  w.step = state.step;
  w.params = full_params_from_state(state, make_param_layout(w.plan.model), "checkpoint " + w.checkpoint);
  w.adapters = std::move(state.adapters.params);
  return w;
}

}  // namespace fsdpx
