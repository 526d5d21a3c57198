// simulator/validate_fp8.cpp — the bf16 and all-gather variants of an fp8 plan (validate_fp8.h).
#include "simulator/validate_fp8.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "simulator/simulate.h"

namespace fsdpx {

namespace {

double tokens_per_s(const Plan& p) {
  EngineOptions eo;
  eo.record_ops = false;
  return simulate(p, eo).tokens_per_s_per_gpu;
}

}  // namespace

Fp8Attribution fp8_attribution(const Plan& plan) {
  FSDP_CHECK(plan.fp8.has_value(), "fp8_attribution: a plan without fp8");
  Fp8Attribution a;
  Plan bf16 = plan;
  bf16.fp8.reset();
  a.bf16_tokens_per_s_per_gpu = tokens_per_s(bf16);
  Plan off = plan;
  off.fp8->all_gather = false;
  a.no_gather_tokens_per_s_per_gpu = tokens_per_s(off);
  if (plan.fp8->scaling == Fp8Scaling::rowwise) return a;  // torchao has no rowwise fp8 all-gather
  Plan on = plan;
  on.fp8->all_gather = true;
  a.gather_tokens_per_s_per_gpu = tokens_per_s(on);
  const double fp8 = plan.fp8->all_gather ? a.gather_tokens_per_s_per_gpu : a.no_gather_tokens_per_s_per_gpu;
  const double gain = fp8 - a.bf16_tokens_per_s_per_gpu;
  if (plan.fp8->all_gather && gain != 0)
    a.all_gather_share = (a.gather_tokens_per_s_per_gpu - a.no_gather_tokens_per_s_per_gpu) / gain;
  return a;
}

std::string fp8_attribution_note(const Plan& plan, const Fp8Attribution& a) {
  const double fp8 = plan.fp8->all_gather ? a.gather_tokens_per_s_per_gpu : a.no_gather_tokens_per_s_per_gpu;
  std::string note = fmt::format("fp8 {} (all-gather {}): {:.3f}x the bf16 prediction ({:.0f} tok/s/GPU)",
                                 fp8_scaling_name(plan.fp8->scaling), plan.fp8->all_gather ? "fp8" : "bf16",
                                 fp8 / a.bf16_tokens_per_s_per_gpu, a.bf16_tokens_per_s_per_gpu);
  if (a.gather_tokens_per_s_per_gpu <= 0) return note;
  if (plan.fp8->all_gather)
    return note + fmt::format("; the fp8 all-gather brings {:.0f}% of the speedup", 100 * a.all_gather_share);
  return note + fmt::format("; with fp8 all-gather {:.3f}x", a.gather_tokens_per_s_per_gpu / a.bf16_tokens_per_s_per_gpu);
}

}  // namespace fsdpx
