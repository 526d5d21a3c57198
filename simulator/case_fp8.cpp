// simulator/case_fp8.cpp — the fp8 recipe of a published fp8 run (validation_case.h case_fp8_settings),
// from its framework and what the case states. Leaves out recipes the case file does not hold (MXFP8:
// its README says the MX-block variants were dropped).
#include <string>
#include <vector>

#include "simulator/validation_case.h"

namespace fsdpx {

namespace {

bool states(const std::vector<std::string>& uncertain, const std::string& what) {
  for (const std::string& u : uncertain)
    if (u.find(what) != std::string::npos) return true;
  return false;
}

// The torchtitan team's own published runs: docs/performance.md (its tables and the arXiv 2410.06511
// tables it holds), not the contributed benchmarks/ files.
bool torchtitan_team_run(const std::string& source) {
  return source.find("pytorch/torchtitan docs/performance.md") != std::string::npos;
}

}  // namespace

// torchtitan: torchao's Float8Linear, tensorwise dynamic scaling unless the case says rowwise (the
// file's README). The FSDP float8 all-gather where the case says it was on, and in the torchtitan team's
// own runs of docs/performance.md: the float8 guide beside them launches them with
// `--float8.enable_float8_linear --float8.enable_fsdp_float8_all_gather
// --float8.precompute_float8_dynamic_scale_for_fsdp` (pytorch/torchtitan docs/float8.md @3faaa1a0d and
// @9dec370, the commits performance.md names for its runs), where later releases leave
// enable_fsdp_float8_all_gather off by default (torchtitan/config/job_config.py Float8). Either way
// torchtitan turns it on only when the mesh shards over dp_shard: `parallel_dims.dp_shard_enabled and
// float8_config.enable_fsdp_float8_all_gather` (torchtitan/float8.py @9dec370), so a run whose FSDP
// shards over cp alone (dp_shard 1) gathers bf16.
// Megatron-Bridge: Transformer Engine; its tables print "FP8-CS" for Float8CurrentScaling and "FP8" for
// the DelayedScaling recipe. llm-foundry: Composer's amp_fp8 runs te.fp8_autocast with
// DelayedScaling(fp8_format=HYBRID) (composer/core/precision.py). Parameters are gathered in bf16 in
// both (Megatron's fp8_param_gather and Composer's FSDP keep bf16 all-gathers unless configured).
Fp8Settings case_fp8_settings(const std::string& framework, const std::string& source,
                              const std::vector<std::string>& uncertain, int dp_shard) {
  Fp8Settings s;
  if (framework == "torchtitan") {
    s.scaling = states(uncertain, "rowwise recipe") ? Fp8Scaling::rowwise : Fp8Scaling::tensorwise;
    const bool stated = states(uncertain, "fp8 FSDP all-gather enabled") || torchtitan_team_run(source);
    s.all_gather = s.scaling == Fp8Scaling::tensorwise && stated && dp_shard > 1;
    return s;
  }
  s.scaling = states(uncertain, "FP8-CS") ? Fp8Scaling::current : Fp8Scaling::delayed;
  return s;
}

}  // namespace fsdpx
