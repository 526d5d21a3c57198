// tools/cli_names.h — the names the command line accepts for its enums (output format, recompute,
// framework, dtype, fp8 scaling, sharding) and the plan JSON name of a ZeRO stage: plain tables, kept
// apart from CLI11 (tools/cli_options.h registers them as options) so that report code can name them
// without compiling CLI11.
#pragma once

#include <map>
#include <string>

#include "core/dtype.h"
#include "core/framework.h"
#include "core/plan.h"
#include "cost_models/memory.h"

namespace fsdpx {

enum class OutputFormat { text, json };

inline const std::map<std::string, OutputFormat> kOutputFormats{{"text", OutputFormat::text},
                                                                 {"json", OutputFormat::json}};
// The recompute and sharding names of plan JSON (core/plan.h), so `estimate` and `plan` take what a plan
// file says; estimate also keeps the ZeRO-stage names it took before (zero2, zero3, fsdp).
inline const std::map<std::string, Recompute> kRecomputeModes{{"none", Recompute::none},
                                                              {"selective", Recompute::selective},
                                                              {"selective_op", Recompute::selective_op},
                                                              {"full", Recompute::full}};
inline const std::map<std::string, RecomputeMode> kPlanRecomputeModes{{"none", RecomputeMode::none},
                                                                      {"selective", RecomputeMode::selective},
                                                                      {"selective_op", RecomputeMode::selective_op},
                                                                      {"full", RecomputeMode::full}};
inline const std::map<std::string, Framework> kFrameworks{{"fsdpx", Framework::fsdpx},
                                                          {"torchtitan", Framework::torchtitan},
                                                          {"fms-fsdp", Framework::fms_fsdp},
                                                          {"llm-foundry", Framework::llm_foundry},
                                                          {"megatron", Framework::megatron}};
inline const std::map<std::string, DType> kDTypes{
    {"fp32", DType::fp32}, {"bf16", DType::bf16}, {"fp16", DType::fp16}};
// `--fp8 SCALING` (core/fp8.h).
inline const std::map<std::string, Fp8Scaling> kFp8Scalings{{"tensorwise", Fp8Scaling::tensorwise},
                                                            {"rowwise", Fp8Scaling::rowwise},
                                                            {"delayed", Fp8Scaling::delayed},
                                                            {"current", Fp8Scaling::current}};
inline const std::map<std::string, ShardingMode> kShardingModes{
    {"fsdp_full_shard", ShardingMode::zero3}, {"fsdp_shard_grad_op", ShardingMode::zero2},
    {"hsdp", ShardingMode::hsdp},             {"ddp", ShardingMode::ddp},
    {"zero1", ShardingMode::zero1},           {"distributed_optimizer", ShardingMode::zero1},
    {"zero2", ShardingMode::zero2},           {"zero3", ShardingMode::zero3},
    {"fsdp", ShardingMode::zero3}};
// The plan JSON name of a ZeRO stage (DataParallel in core/plan.h).
inline const char* plan_sharding_name(ShardingMode m) {
  switch (m) {
    case ShardingMode::ddp: return "ddp";
    case ShardingMode::zero1: return "zero1";
    case ShardingMode::zero2: return "fsdp_shard_grad_op";
    case ShardingMode::zero3: return "fsdp_full_shard";
    case ShardingMode::hsdp: return "hsdp";
  }
  return "fsdp_full_shard";
}

}  // namespace fsdpx
