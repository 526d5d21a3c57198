// planner/target.h — what will run a plan: fsdpx's own executor, or a named torchtitan release through
// its TOML job config. The search keeps to the target's space (planner/space.h narrows it), and
// target_gaps() says what of a plan the target cannot run or express, so nothing is changed silently.
// torchtitan releases are named explicitly: 0.2.0, 0.2.1 and 0.2.2 read TOML job configs; 0.3 configures
// jobs in Python (config_registry functions) and is not a target.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"

namespace fsdpx {

enum class TargetKind { fsdpx, torchtitan };

struct Target {
  TargetKind kind = TargetKind::fsdpx;
  std::string version;  // torchtitan release ("0.2.2"); empty for fsdpx
};

// The torchtitan releases fsdpx writes job configs for, oldest first; the newest is the export default.
const std::vector<std::string>& torchtitan_versions();
Target default_torchtitan_target();

// "fsdpx" or "torchtitan@0.2.2"; throws ConfigError "<where>: ..." listing the accepted names.
Target parse_target(std::string_view text, std::string_view where);
std::string target_name(const Target& t);

// What of `plan` the target cannot run (fsdpx: the executor's limits) or express (torchtitan: the job
// config's keys, export_torchtitan.h); empty when the target runs the plan exactly.
std::vector<std::string> target_gaps(const Plan& plan, const Target& t);

// The attention kernel a plan for `t` on `cluster` records, and so costs: for fsdpx the first kernel of
// its backend's row (core/backend_capabilities.h) that takes the model's `head_dim` (the row's first when
// none does: the executor's check then names the head size), the one its executor runs; torchtitan's SDPA
// runs FlashAttention-2 (core/attention_kernel.h), the CPU cluster's ranks the unfused reference.
AttentionKernel target_attention_kernel(const Target& t, const ClusterSpec& cluster, std::int64_t head_dim);

// fp16 mixed precision with loss scaling (core/loss_scale.h) on `t`: fsdpx runs it on both backends (the CPU
// one rounds through fp16, the CUDA one computes in fp16; executor/runtime/runtime_program.cpp);
// torchtitan's job config offers bfloat16 and float32 only (export_torchtitan_map.cpp). Throws
// ConfigError "<where>: ..." for a torchtitan target.
void check_fp16_target(const Target& t, std::string_view where);
// fp8 (core/fp8.h): torchtitan trains with torchao's tensorwise and rowwise recipes; fsdpx where its
// backend's capabilities row lists the scaling (core/backend_capabilities.h). Throws ConfigError at `where`.
void check_fp8_target(const Target& t, const ClusterSpec& cluster, const Fp8Settings& fp8, std::string_view where);

}  // namespace fsdpx
