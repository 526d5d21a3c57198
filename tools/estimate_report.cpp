// tools/estimate_report.cpp — text and JSON views of an analytic estimate.
#include "tools/estimate_report.h"

#include <fmt/format.h>

#include "core/memory_metric.h"
#include "tools/cli_names.h"
#include "tools/format.h"

namespace fsdpx {

namespace {

// An MoE or latent-attention estimate: counts, FLOPs per token and state bytes; the rest named as left out.
nlohmann::json partial_estimate_json(const Estimate& e, nlohmann::json j) {
  j["per_gpu_memory_bytes"] = {
      {"params", e.memory.params}, {"grads", e.memory.grads}, {"optimizer", e.memory.optimizer}};
  j["model_flops_per_token"] = e.model_flops_per_token;
  j["tokens_per_step"] = e.tokens_per_step;
  j["not_modelled"] = e.not_modelled;
  return j;
}

}  // namespace

nlohmann::json estimate_json(const Estimate& e, const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s) {
  nlohmann::json j;
  j["model"] = m.name;
  j["cluster"] = c.name;
  j["world_size"] = c.world_size();
  j["parallelism"] = {{"dp_replicate", s.dp_replicate}, {"dp_shard", s.dp_shard}, {"tp", s.tp}, {"cp", s.cp},
                      {"sharding", plan_sharding_name(s.mode)}, {"zero_stage", sharding_mode_name(s.mode)}};
  j["total_params"] = e.total_params;
  j["active_params"] = e.active_params;
  j["gpu_memory_bytes"] = c.gpu.hbm_bytes;
  if (!e.not_modelled.empty()) return partial_estimate_json(e, j);
  j["per_gpu_memory_bytes"] = {{"params", e.memory.params},       {"grads", e.memory.grads},
                               {"optimizer", e.memory.optimizer}, {"activations", e.memory.activations},
                               {"transient", e.memory.transient}, {"other", e.memory.other},
                               {"total", e.memory.total()}};
  j["per_gpu_memory_metric"] = memory_metric::kDevice;  // "total" is the device total
  if (s.lora) j["lora"] = {{"settings", lora_to_json(*s.lora)}, {"adapter_params", e.adapter_params}};
  j["model_flops_per_token"] = e.model_flops_per_token;
  j["compute_time_s"] = e.compute_time_s;
  if (s.loss_scale) j["unscale_time_s"] = e.unscale_time_s;  // included in compute_time_s
  j["dp_comm_time_s"] = e.dp_comm_time_s;
  if (s.fp8) {
    j["fp8"] = fp8_settings_to_json(*s.fp8);
    j["fp8_all_gather_saved_s"] = e.fp8_all_gather_saved_s;  // already left out of dp_comm_time_s
  }
  j["tp_cp_comm_time_s"] = e.tp_cp_comm_time_s;
  j["step_time_lower_bound_s"] = e.step_time_lower_bound_s;
  j["tokens_per_step"] = e.tokens_per_step;
  j["tokens_per_s_per_gpu_upper_bound"] = e.tokens_per_s_per_gpu_upper_bound;
  j["mfu_upper_bound"] = e.mfu_upper_bound;
  return j;
}

namespace {

std::string partial_estimate_text(const Estimate& e) {
  const auto& mem = e.memory;
  return "Per-GPU model state (analytic)\n" +
         table({{"params", gib(mem.params)}, {"grads", gib(mem.grads)}, {"optimizer", gib(mem.optimizer)},
                {"model FLOPs/token", fmt::format("{:.3e}", e.model_flops_per_token)}}) +
         "\nNot estimated: " + e.not_modelled + "\n";
}

}  // namespace

std::string estimate_text(const Estimate& e, const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s) {
  std::string out = fmt::format("fsdpx estimate: {} on {} ({} nodes x {} GPUs = {})\n", m.name, c.name, c.nodes,
                                c.gpus_per_node, c.world_size());
  out += fmt::format("  parallelism: dp_replicate {} x dp_shard {} x cp {} x tp {}, {}, micro-batch {} x seq {}, "
                     "accumulation {}, recompute {}\n",
                     s.dp_replicate, s.dp_shard, s.cp, s.tp,
                     fmt::format("{} ({})", plan_sharding_name(s.mode), sharding_mode_name(s.mode)), s.micro_batch, s.seq,
                     s.grad_accum, recompute_name(s.recompute));
  out += fmt::format("  parameters: {} total, {} active per token, {} per GPU before data-parallel sharding\n\n",
                     billions(double(e.total_params)), billions(double(e.active_params)), billions(e.params_per_gpu));
  if (!e.not_modelled.empty()) return wrap_text(out + partial_estimate_text(e));
  if (s.lora)
    out = out.substr(0, out.size() - 1) +
          fmt::format("  LoRA r {} alpha {} on {}: {} adapter parameters trained, the base frozen\n\n", s.lora->rank,
                      s.lora->alpha, lora_to_json(*s.lora)["targets"].dump(), billions(e.adapter_params));
  const auto& mem = e.memory;
  out += fmt::format("Per-GPU memory (analytic; total = {})\n", memory_metric::kDeviceMeaning) +
         table({{"params", gib(mem.params)}, {"grads", gib(mem.grads)}, {"optimizer", gib(mem.optimizer)},
                {"activations", gib(mem.activations)}, {"transient (unsharded units)", gib(mem.transient)},
                {"other (context, NCCL, allocator)", gib(mem.other)}, {"total", gib(mem.total())},
                {"GPU memory", gib(c.gpu.hbm_bytes)}, {"fits", mem.total() <= c.gpu.hbm_bytes ? "yes" : "NO"}}) +
         "\n";
  std::vector<std::vector<std::string>> rows{{"compute", seconds(e.compute_time_s)}};
  if (s.loss_scale) rows.push_back({"  of which fp16 unscale pass", seconds(e.unscale_time_s)});
  rows.push_back({"data-parallel communication", seconds(e.dp_comm_time_s)});
  if (s.fp8 && s.fp8->all_gather)
    rows.push_back({"  saved by fp8 all-gather (vs bf16)", seconds(e.fp8_all_gather_saved_s)});
  rows.insert(rows.end(), {
                           {"TP/CP communication", seconds(e.tp_cp_comm_time_s)},
                           {"step time >=", seconds(e.step_time_lower_bound_s)},
                           {"tokens/s/GPU <=", fmt::format("{:.0f}", e.tokens_per_s_per_gpu_upper_bound)},
                           {"MFU <=", fmt::format("{:.1f} %", 100 * e.mfu_upper_bound)},
                           {"model FLOPs/token", fmt::format("{:.3e}", e.model_flops_per_token)}});
  out += "Step time (lower bound: communication fully overlapped)\n" + table(rows);
  return wrap_text(out);
}

std::string estimate_bound_text(const Estimate& e, const ClusterSpec& c) {
  if (!e.not_modelled.empty()) return wrap_text("  not estimated: " + e.not_modelled + "\n");
  const auto& mem = e.memory;
  return wrap_text(fmt::format(
      "  memory {} of {} per GPU ({}; activations {}); step time >= {} (compute {}, data-parallel communication {}, "
      "TP/CP {}), so tokens/s/GPU <= {:.0f}, MFU <= {:.1f}%\n",
      gib(mem.total()), gib(c.gpu.hbm_bytes), mem.total() <= c.gpu.hbm_bytes ? "fits" : "does NOT fit",
      gib(mem.activations), seconds(e.step_time_lower_bound_s), seconds(e.compute_time_s), seconds(e.dp_comm_time_s),
      seconds(e.tp_cp_comm_time_s), e.tokens_per_s_per_gpu_upper_bound, 100 * e.mfu_upper_bound));
}

}  // namespace fsdpx
