// tools/cmd_estimate.h — `fsdpx estimate`'s options as parsed (tools/cli_setup_plans.cpp registers them) and
// the command itself (tools/cmd_estimate.cpp). Leaves out CLI11: the command's code compiles without it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/fp8.h"
#include "cost_models/memory.h"
#include "tools/cli_names.h"
#include "tools/lora_options.h"

namespace fsdpx {

struct EstimateOptions {
  std::string model;
  std::string cluster;
  std::optional<int> nodes;
  std::optional<int> world_size;
  std::optional<int> dp_shard;
  int dp_replicate = 1;
  int tp = 1;
  int cp = 1;
  bool no_sequence_parallel = false;
  ShardingMode mode = ShardingMode::zero3;
  std::int64_t micro_batch = 1;
  std::int64_t seq = 0;  // 0: the smaller of 8192 and the model's max_seq
  std::int64_t grad_accum = 1;
  Recompute recompute = Recompute::none;
  DType param_dtype = DType::bf16;
  DType reduce_dtype = DType::fp32;
  std::int64_t blocks_per_unit = 1;
  int prefetch = 1;
  OutputFormat format = OutputFormat::text;
  std::string out;  // -o
  LoraOptions lora;
  std::optional<Fp8Scaling> fp8;  // --fp8 SCALING
  bool fp8_all_gather = false;
};

void run_estimate(const EstimateOptions& o);

}  // namespace fsdpx
