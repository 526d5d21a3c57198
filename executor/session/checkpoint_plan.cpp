// executor/session/checkpoint_plan.cpp — the plan's fingerprint, plan.json beside the checkpoints and
// the trained weights out of them (see checkpoint_plan.h).
#include "executor/session/checkpoint_plan.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/output_file.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/trained_weights.h"

namespace fsdpx {

std::string plan_fingerprint(const Plan& plan) {
  std::string what = model_spec_to_json(plan.model).dump();
  if (plan.lora) what += " lora " + lora_to_json(*plan.lora).dump();  // the adapters' shapes and scale
  return fmt::format("{:016x}", fnv1a64(what));
}

void write_checkpoint_plan(const std::string& root, const Plan& plan) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot create the checkpoint directory: {}", root, ec.message()));
  const std::string path = (std::filesystem::path(root) / kCheckpointPlanFile).string();
  write_output_file(path, plan_to_json(plan).dump(2) + "\n");
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
