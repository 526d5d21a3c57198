// planner/export_torchtitan.cpp — writes torchtitan_settings() as a job-config TOML file. Sections
// and keys follow torchtitan/config/job_config.py (Job, Model, Optimizer, LRScheduler, Training,
// Parallelism, ActivationCheckpoint, Compile, Debug) of the named release; values are formatted deterministically
// (shortest round-trip floats, always with a '.' or exponent so TOML reads them as floats).
#include <string>

#include <fmt/format.h>

#include "planner/export_torchtitan.h"

namespace fsdpx {

namespace {

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04X}", int(c));
    else out += c;
  }
  return out + "\"";
}

std::string toml_float(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// Writes `key = value`, preceded by the notes that concern `note_key`.
class TomlWriter {
 public:
  explicit TomlWriter(const TorchtitanSettings& s) : s_(s) {}
  void section(const char* name) { out_ += fmt::format("{}[{}]\n", out_.empty() ? "" : "\n", name); }
  void comment(const std::string& text) { out_ += "# " + text + "\n"; }
  void notes_for(const std::string& note_key) {
    for (const TorchtitanNote& n : s_.notes)
      if (n.key == note_key) comment("fsdpx: " + n.text);
  }
  void raw(const std::string& section_key, const std::string& key, const std::string& value) {
    notes_for(section_key + "." + key);
    out_ += fmt::format("{} = {}\n", key, value);
  }
  void str(const std::string& sec, const std::string& key, const std::string& v) { raw(sec, key, toml_string(v)); }
  void num(const std::string& sec, const std::string& key, double v) { raw(sec, key, toml_float(v)); }
  void integer(const std::string& sec, const std::string& key, long long v) { raw(sec, key, fmt::format("{}", v)); }
  std::string take() { return std::move(out_); }

 private:
  const TorchtitanSettings& s_;
  std::string out_;
};

// torchtitan 0.2.0 reads the seed from [training]; 0.2.1 moved it to [debug] (config/job_config.py Debug).
bool seed_in_training(const TorchtitanSettings& s) { return s.version == "0.2.0"; }

std::string predicted_text(const Plan& p) {
  return fmt::format("step {:.4g} s, {:.0f} tokens/s/GPU, MFU {:.1f}%, peak {:.2f} GiB", p.predicted->step_time_s,
                     p.predicted->tokens_per_s_per_gpu, 100 * p.predicted->mfu,
                     p.predicted->peak_memory_bytes / double(1ull << 30));
}

void write_header(TomlWriter& w, const Plan& p, const TorchtitanSettings& s, const std::string& description,
                  const Plan* closest) {
  w.comment(fmt::format("torchtitan {} job config written by `fsdpx export --target torchtitan@{}` from {}.",
                        s.version, s.version, description));
  w.comment(fmt::format("{} on {}: {} node(s) x {} GPUs = {} ranks (run with NGPU={} per node).", p.model.name,
                        p.cluster.name, p.cluster.nodes, p.cluster.gpus_per_node, p.cluster.world_size(),
                        p.cluster.gpus_per_node));
  if (p.predicted && p.predicted->step_time_s > 0) w.comment("fsdpx predicted for the plan: " + predicted_text(p) + ".");
  if (closest && closest->predicted)
    w.comment("fsdpx predicted for what this config runs (the closest expressible plan): " +
              predicted_text(*closest) + ".");
  if (s.notes.empty()) {
    w.comment("Every setting of the plan maps exactly.");
    return;
  }
  w.comment("Not expressible exactly (closest setting written; see docs/torchtitan-export.md):");
  for (const TorchtitanNote& n : s.notes) w.comment(fmt::format("  - {}: {}", n.key, n.text));
}

void write_model(TomlWriter& w, const TorchtitanSettings& s) {
  w.section("model");
  w.notes_for("model");
  if (s.model_flavor.empty()) {
    w.comment(fmt::format("name = \"llama3\"  # model \"{}\": set name and flavor once a flavor is registered",
                          s.model_name));
    return;
  }
  w.str("model", "name", s.model_name);
  w.str("model", "flavor", s.model_flavor);
}

void write_float8(TomlWriter& w, const TorchtitanSettings& s) {
  if (!s.fp8) return;
  w.raw("model", "converters", "[\"float8\"]");
  w.section("float8");
  w.str("float8", "recipe_name", std::string(fp8_scaling_name(s.fp8->scaling)));
  w.raw("float8", "enable_fsdp_float8_all_gather", s.fp8->all_gather ? "true" : "false");
  w.raw("float8", "precompute_float8_dynamic_scale_for_fsdp", s.fp8->all_gather ? "true" : "false");
  w.raw("float8", "filter_fqns", "[\"output\"]");
}

void write_optimizer(TomlWriter& w, const OptimizerSettings& o) {
  w.section("optimizer");
  w.str("optimizer", "name", "AdamW");
  w.num("optimizer", "lr", o.lr);
  w.num("optimizer", "beta1", o.beta1);
  w.num("optimizer", "beta2", o.beta2);
  w.num("optimizer", "eps", o.eps);
  w.num("optimizer", "weight_decay", o.weight_decay);
  // fsdpx: linear warm-up, then cosine decay to min_lr_ratio x lr at total_steps (decay_ratio unset:
  // torchtitan decays right after warm-up, lr_scheduler.py linear_warmup_stable_decay).
  w.section("lr_scheduler");
  w.integer("lr_scheduler", "warmup_steps", o.warmup_steps);
  w.str("lr_scheduler", "decay_type", "cosine");
  w.num("lr_scheduler", "min_lr_factor", o.min_lr_ratio);
}

void write_training(TomlWriter& w, const Plan& p, const TorchtitanSettings& s) {
  w.section("training");
  w.integer("training", "local_batch_size", p.training.micro_batch);
  w.integer("training", "global_batch_size", p.training.global_batch);
  w.integer("training", "seq_len", p.training.seq);
  // torch clip_grad_norm_ with max_norm 0 would zero the gradients; 1e30 never clips.
  w.num("training", "max_norm", p.optimizer.grad_clip_norm > 0 ? p.optimizer.grad_clip_norm : 1e30);
  w.integer("training", "steps", p.optimizer.total_steps);
  if (seed_in_training(s)) w.integer("training", "seed", static_cast<long long>(p.training.seed));
  w.str("training", "mixed_precision_param", s.param_dtype);
  w.str("training", "mixed_precision_reduce", s.reduce_dtype);
}

void write_parallelism(TomlWriter& w, const TorchtitanSettings& s, const Plan& p) {
  w.section("parallelism");
  w.integer("parallelism", "data_parallel_replicate_degree", s.dp_replicate);
  w.integer("parallelism", "data_parallel_shard_degree", s.dp_shard);
  w.notes_for("fsdp_units");
  w.str("parallelism", "fsdp_reshard_after_forward", s.reshard_policy);
  w.integer("parallelism", "tensor_parallel_degree", s.tp);
  w.raw("parallelism", "enable_async_tensor_parallel", "false");
  w.integer("parallelism", "context_parallel_degree", s.cp);
  w.integer("parallelism", "pipeline_parallel_degree", s.pp);
  if (p.model.is_moe()) w.integer("parallelism", "expert_parallel_degree", s.ep);
  if (s.pp > 1) {
    w.str("parallelism", "pipeline_parallel_schedule", s.pp_schedule);
    std::string parts = "[";
    for (std::size_t i = 0; i < s.pp_model_parts.size(); ++i) {
      parts += i ? ", [" : "[";
      for (std::size_t j = 0; j < s.pp_model_parts[i].size(); ++j)
        parts += (j ? ", " : "") + toml_string(s.pp_model_parts[i][j]);
      parts += "]";
    }
    w.raw("parallelism", "module_fqns_per_model_part", parts + "]");
    w.integer("parallelism", "pipeline_parallel_microbatch_size", p.training.micro_batch);
  }
}

}  // namespace

std::string torchtitan_toml(const Plan& plan, const std::string& description, const std::string& version,
                            const Plan* closest) {
  const TorchtitanSettings s = torchtitan_settings(plan, version);
  TomlWriter w(s);
  write_header(w, plan, s, description, closest);
  w.section("job");
  w.str("job", "description", description);
  w.str("job", "dump_folder", "./outputs");
  write_model(w, s);
  write_float8(w, s);
  write_optimizer(w, plan.optimizer);
  write_training(w, plan, s);
  write_parallelism(w, s, plan);
  w.section("activation_checkpoint");
  w.str("activation_checkpoint", "mode", s.ac_mode);
  if (!s.ac_selective_option.empty())
    w.str("activation_checkpoint", "selective_ac_option", s.ac_selective_option);
  w.section("compile");
  w.raw("compile", "enable", s.compile ? "true" : "false");
  if (s.compile) w.raw("compile", "components", "[\"model\", \"loss\"]");
  if (!seed_in_training(s)) {
    w.section("debug");
    w.integer("debug", "seed", static_cast<long long>(plan.training.seed));
  }
  return w.take();
}

}  // namespace fsdpx
