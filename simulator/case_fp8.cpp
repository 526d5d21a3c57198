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

}  // namespace

// torchtitan: torchao's Float8Linear, tensorwise dynamic scaling unless the case says rowwise (the
// file's README); the FSDP float8 all-gather where the case says it was on (torchtitan's float8 config
// leaves enable_fsdp_float8_all_gather off by default, torchtitan/config/job_config.py Float8).
// Megatron-Bridge: Transformer Engine; its tables print "FP8-CS" for Float8CurrentScaling and "FP8" for
// the DelayedScaling recipe. llm-foundry: Composer's amp_fp8 runs te.fp8_autocast with
// DelayedScaling(fp8_format=HYBRID) (composer/core/precision.py). Parameters are gathered in bf16 in
// both (Megatron's fp8_param_gather and Composer's FSDP keep bf16 all-gathers unless configured).
Fp8Settings case_fp8_settings(const std::string& framework, const std::vector<std::string>& uncertain) {
  Fp8Settings s;
  if (framework == "torchtitan") {
    s.scaling = states(uncertain, "rowwise recipe") ? Fp8Scaling::rowwise : Fp8Scaling::tensorwise;
    s.all_gather = s.scaling == Fp8Scaling::tensorwise && states(uncertain, "fp8 FSDP all-gather enabled");
    return s;
  }
  s.scaling = states(uncertain, "FP8-CS") ? Fp8Scaling::current : Fp8Scaling::delayed;
  return s;
}

}  // namespace fsdpx
