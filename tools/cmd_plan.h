// tools/cmd_plan.h — `fsdpx plan`'s options as parsed (tools/cli_setup_plans.cpp registers them) and the
// command itself (tools/cmd_plan.cpp). Leaves out CLI11: the command's code compiles without it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/fp8.h"
#include "core/framework.h"
#include "core/plan_settings.h"
#include "planner/planner.h"
#include "tools/cli_names.h"
#include "tools/lora_options.h"

namespace fsdpx {

struct PlanOptions {
  std::string model, cluster, out, target = "fsdpx", margin;
  std::optional<int> nodes, world_size;
  std::int64_t seq = 0, global_batch = 0;
  std::optional<double> memory_limit_gib;
  double tolerance_pct = 100 * kDefaultThroughputTolerance;
  bool allow_bf16_reduce = false;
  bool fp16 = false;  // fp16 mixed precision with the default loss scaling
  std::optional<Fp8Scaling> fp8;  // --fp8 SCALING
  bool fp8_all_gather = false;
  Objective objective = Objective::throughput;
  std::optional<Framework> framework;
  bool compiled = false;
  int top = 5;
  bool pareto = false;  // --pareto: the text lists the Pareto frontier too
  OutputFormat format = OutputFormat::text;
  FixedDegrees fixed;
  PipelineSchedule pp_schedule = PipelineSchedule::none;  // none: searched
  std::optional<RecomputeMode> recompute;                 // empty: searched (uniform and partial)
  std::optional<DataParallel> sharding;                   // empty: full shard and HSDP searched
  LoraOptions lora;
};

void run_plan(const PlanOptions& o);

}  // namespace fsdpx
