// simulator/source_mfu.h — the peak a published run's MFU divides by, as its framework's own logger computes
// it, so that validate compares predicted with measured MFU on the same definition. The numerator stays the
// PaLM model FLOPs (6N + 12·L·H·Q·T per token), which llm-foundry's and torchtitan's loggers also use.
// Leaves out any other definition a source may use (Megatron-LM and NeMo publish their MFU with their own
// FLOP counts, compared here as PaLM FLOPs over bf16).
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/plan.h"

namespace fsdpx {

// The dtype whose dense peak the framework's MFU divides by for this plan:
// - llm-foundry: Composer's SpeedMonitor divides by GPU_AVAILABLE_FLOPS[gpu][precision], the dense peak of
//   the run's precision, so an amp_fp8 run's MFU is over the fp8 peak (mosaicml/composer
//   composer/callbacks/speed_monitor.py; llm-foundry scripts/train/benchmarking/collect_results.py);
// - torchtitan and every other framework: the dense bf16 peak whatever the recipe (pytorch/torchtitan
//   torchtitan/tools/utils.py get_peak_flops, "hardcoded BF16 type peak flops").
DType source_mfu_peak_dtype(const std::string& framework, const Plan& plan);

// The plan's predicted MFU (over the dense peak of plan.precision.param, Simulation::mfu) restated over
// the framework's peak.
double source_mfu(double simulated_mfu, const std::string& framework, const Plan& plan);

}  // namespace fsdpx
