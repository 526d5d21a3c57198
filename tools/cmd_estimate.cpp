// tools/cmd_estimate.cpp — `fsdpx estimate`: analytic per-GPU memory and a step-time lower bound for
// a model on a cluster with given parallelism degrees.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "cost_models/estimate.h"
#include "tools/cli_names.h"
#include "tools/cluster_size.h"
#include "tools/cmd_estimate.h"
#include "tools/estimate_report.h"
#include "tools/main_output.h"
#include "tools/lora_options.h"

namespace fsdpx {

void run_estimate(const EstimateOptions& o) {
  const ModelSpec m = load_model(o.model);
  const ClusterSpec c = sized_cluster(load_cluster(o.cluster), o.nodes, o.world_size);
  TrainingShape s;
  s.dp_replicate = o.dp_replicate;
  s.tp = o.tp;
  s.cp = o.cp;
  s.dp_shard = o.dp_shard ? *o.dp_shard : std::max(1, c.world_size() / (o.tp * o.cp * o.dp_replicate));
  s.sequence_parallel = !o.no_sequence_parallel;
  s.mode = o.mode;
  if (s.mode == ShardingMode::zero3 && s.dp_replicate > 1) s.mode = ShardingMode::hsdp;
  s.micro_batch = o.micro_batch;
  s.seq = o.seq > 0 ? o.seq : std::min<std::int64_t>(8192, m.max_seq);
  s.grad_accum = o.grad_accum;
  s.recompute = o.recompute;
  s.precision.param = o.param_dtype;
  s.precision.reduce = o.reduce_dtype;
  s.blocks_per_unit = o.blocks_per_unit;
  s.prefetch = o.prefetch;
  s.lora = lora_settings(o.lora, m);
  s.loss_scale = o.param_dtype == DType::fp16;  // fp16 trains with loss scaling (plan --fp16's default)
  if (o.fp8_all_gather && !o.fp8) throw ConfigError("command line: --fp8-all-gather: needs --fp8 SCALING");
  if (o.fp8) {
    if (o.param_dtype != DType::bf16) throw ConfigError("command line: --fp8: fp8 recipes run around bf16 (--param-dtype bf16)");
    if (!c.gpu.peak_flops_per_s.count(DType::fp8))
      throw ConfigError(fmt::format("command line: --fp8: GPU \"{}\" has no fp8 peak", c.gpu.name));
    if (o.fp8_all_gather && *o.fp8 == Fp8Scaling::rowwise)
      throw ConfigError("command line: --fp8-all-gather: needs one scale per weight (tensorwise, delayed or current)");
    s.fp8 = Fp8Settings{*o.fp8, o.fp8_all_gather};
  }
  const Estimate e = estimate(m, c, s);
  emit_main_output(o.out, o.format == OutputFormat::json ? estimate_json(e, m, c, s).dump(2) + "\n"
                                                          : estimate_text(e, m, c, s));
}

}  // namespace fsdpx
