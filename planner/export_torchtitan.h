// planner/export_torchtitan.h — a plan as a torchtitan job config (TOML): parallel degrees, FSDP
// reshard policy, activation checkpointing, batch, mixed precision, AdamW and the lr schedule, so a
// PyTorch user can run the plan with torchtitan's train.py. torchtitan's config has one setting per
// model where the plan has one per unit or block; what cannot be expressed is mapped to the closest
// setting and said in a comment (docs/torchtitan-export.md), and the plan torchtitan would then run is
// built so that it can be simulated. Keys follow the named release (planner/target.h): 0.2.0 keeps
// `seed` under [training], 0.2.1 and 0.2.2 under [debug]; [compile] says whether the plan's prediction
// assumed torch.compile. Leaves out dataset, tokenizer, checkpoints.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"

namespace fsdpx {

// Something the config cannot express exactly: the torchtitan key it concerns ("training.max_norm",
// "parallelism.fsdp_reshard_after_forward", or "model" / "fsdp_units" for things with no key) and why.
struct TorchtitanNote {
  std::string key;
  std::string text;
};

// FSDP2 under torchtitan: the unit in use and the one prefetched implicitly (Plan::Prefetch's cap).
inline constexpr int kTorchtitanAllGathersInFlight = 2;

// The plan in torchtitan's vocabulary (keys of torchtitan/config/job_config.py).
struct TorchtitanSettings {
  std::string version;       // torchtitan release the keys follow ("0.2.2")
  std::string model_name;    // "llama3" when the dimensions match a torchtitan flavor, else the plan's name
  std::string model_flavor;  // "8B", "70B", "405B"; empty when no flavor matches
  int dp_replicate = 1;      // data_parallel_replicate_degree
  int dp_shard = 1;          // data_parallel_shard_degree
  int tp = 1, cp = 1, pp = 1;
  int ep = 1;  // expert_parallel_degree; written for mixture-of-experts models only (etp = tp, its default)
  std::string pp_schedule;         // "GPipe", "1F1B", "Interleaved1F1B", "InterleavedZeroBubble"; empty when pp = 1
  std::vector<std::vector<std::string>> pp_model_parts;  // module_fqns_per_model_part; empty when pp = 1
  std::string reshard_policy;      // fsdp_reshard_after_forward: "default", "always", "never"
  std::string ac_mode;             // "none", "selective", "full"
  std::string ac_selective_option; // "op", or every-n-th block "n"; empty unless ac_mode is selective
  std::string param_dtype;         // mixed_precision_param: "bfloat16" or "float32"
  std::string reduce_dtype;        // mixed_precision_reduce: "float32"
  bool compile = false;            // [compile] enable: torch.compile of the model and the loss
  // [model] converters = ["float8"] and [float8] recipe_name, enable_fsdp_float8_all_gather and
  // precompute_float8_dynamic_scale_for_fsdp (torchtitan/components/quantization/float8.py); nullopt: bf16.
  std::optional<Fp8Settings> fp8;
  std::vector<TorchtitanNote> notes;  // in the order the keys are written
};

// Throws ConfigError when `version` is not one of torchtitan_versions().
TorchtitanSettings torchtitan_settings(const Plan& plan, const std::string& version);

// The job config as TOML text: deterministic (same plan, same bytes), keys in torchtitan's section
// order, notes as comments next to the keys they concern and listed at the top. `closest`, when given,
// is the simulated plan torchtitan would run (a comment states its speed and peak memory).
std::string torchtitan_toml(const Plan& plan, const std::string& description, const std::string& version,
                            const Plan* closest = nullptr);

// The plan torchtitan runs from `s`: its own units (embedding, each block, norm + output; under PP split
// over stages by generate_llm_fqn_per_model_part) with the reshard policy, the recompute the config names,
// fp32 reduction after every micro-batch (after the last one under PP), FSDP2's implicit prefetch of one
// unit, clipping always on, torchtitan's costs (eager or compiled as [compile] says); the rest of `plan` as is. Equal to `plan` (same
// simulator inputs) exactly when `s` has no notes.
Plan torchtitan_closest_plan(const Plan& plan, const TorchtitanSettings& s);

}  // namespace fsdpx
