// core/plan_json.cpp — strict reading and exact writing of "fsdpx-plan/1" files. The model and the
// cluster are embedded (the GPU with all its figures) so a plan needs no other file; errors of the
// nested readers are re-rooted at /model or /cluster. Keys, types and defaults: docs/plan-format.md
// and the comment at the top of plan.cpp. Cross-field consistency is plan_validate.cpp's job.
#include <algorithm>
#include <climits>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "core/memory_metric.h"
#include "core/plan.h"

namespace fsdpx {

namespace {

constexpr std::string_view kFormat = "fsdpx-plan/1";

// Nested readers (model, GPU, cluster) report paths from their own root; prefix them with the
// position of that object in the plan so the message points into the plan file.
std::string rebase_message(std::string_view msg, const std::string& file, const std::string& prefix) {
  const std::string head = file + ": /";
  if (!msg.starts_with(head)) return std::string(msg);
  std::string_view rest = msg.substr(file.size() + 2);  // "/path: what", or "/: what" at the root
  if (rest.starts_with("/: ")) rest.remove_prefix(1);
  return fmt::format("{}: {}{}", file, prefix, rest);
}

template <typename F>
auto under_path(const std::string& file, const std::string& prefix, F&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const ConfigError& e) {
    throw ConfigError(rebase_message(e.what(), file, prefix));
  }
}

int optional_degree(JsonObject& o, std::string_view key, int fallback) {
  return static_cast<int>(o.optional_integer_in(key, input_range::kDegree).value_or(fallback));
}

int optional_int_in(JsonObject& o, std::string_view key, IntRange range, int fallback) {
  return static_cast<int>(o.optional_integer_in(key, range).value_or(fallback));
}

double optional_number(JsonObject& o, std::string_view key, double fallback) {
  return o.has(key) ? o.number(key) : fallback;
}

// Maps a string already restricted by JsonObject::choice to its enum value via the name function.
template <typename E, std::size_t N>
E enum_of(JsonObject& o, std::string_view key, const E (&values)[N], const char* (*name)(E), E fallback) {
  if (!o.has(key)) return fallback;
  const nlohmann::json& v = o.raw(key);
  for (E e : values)
    if (v.is_string() && v.get<std::string>() == name(e)) return e;
  std::vector<std::string> names;
  for (E e : values) names.emplace_back(name(e));
  o.fail(key, fmt::format("expected one of {}, got {}", fmt::join(names, ", "), json_type_name(v)));
}

constexpr DataParallel kDataParallels[] = {DataParallel::fsdp_full_shard, DataParallel::fsdp_shard_grad_op,
                                           DataParallel::hsdp,            DataParallel::ddp,
                                           DataParallel::zero1,           DataParallel::distributed_optimizer};
constexpr PipelineSchedule kSchedules[] = {PipelineSchedule::none, PipelineSchedule::gpipe,
                                           PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved_1f1b,
                                           PipelineSchedule::zero_bubble};
constexpr RecomputeMode kRecomputeModes[] = {RecomputeMode::none, RecomputeMode::selective, RecomputeMode::full,
                                             RecomputeMode::selective_op};
constexpr ReduceGrads kReduceGrads[] = {ReduceGrads::every_micro_batch, ReduceGrads::last_micro_batch};
constexpr AttentionKernel kAttentionKernels[] = {AttentionKernel::flash2, AttentionKernel::flash1,
                                                 AttentionKernel::unfused, AttentionKernel::cuda_core,
                                                 AttentionKernel::tensor_core, AttentionKernel::cudnn};
const char* attention_kernel_cname(AttentionKernel k) { return attention_kernel_name(k).data(); }

ModelSpec parse_model(JsonObject& o) {
  const nlohmann::json& j = o.raw("model");
  if (!j.is_object()) o.fail("model", fmt::format("expected the model as an object, got {}", json_type_name(j)));
  return under_path(o.file(), "/model", [&] { return parse_model_spec(j, o.file()); });
}

// The cluster as cluster_spec_to_json writes it, except that "gpu" holds gpu_spec_to_json's object
// (every figure) instead of a name to resolve, so a plan is read the same on any machine.
ClusterSpec parse_cluster(JsonObject& o) {
  const nlohmann::json& j = o.raw("cluster");
  const std::string& file = o.file();
  JsonObject c(j, file, "/cluster");
  const nlohmann::json& gpu_json = c.raw("gpu");
  if (!gpu_json.is_object())
    c.fail("gpu", fmt::format("expected the GPU embedded with all its figures (gpu_spec_to_json), got {}",
                              json_type_name(gpu_json)));
  GpuSpec gpu = under_path(file, "/cluster/gpu", [&] { return parse_gpu_spec(gpu_json, file); });
  nlohmann::json by_name = j;
  by_name["gpu"] = gpu.name;
  // The resolver only has to echo the name: the embedded spec replaces the result below.
  GpuResolver echo = [](const std::string& name) {
    GpuSpec g;
    g.name = name;
    return g;
  };
  ClusterSpec cluster = under_path(file, "/cluster", [&] { return parse_cluster_spec(by_name, file, echo); });
  cluster.gpu = std::move(gpu);
  return cluster;
}

TrainingSettings parse_training(JsonObject o) {
  TrainingSettings t;
  o.ignore("micro_batches");  // derived; checked against the other keys by check_stated_micro_batches
  t.seq = o.integer_in("seq", input_range::kMaxSeq);
  t.micro_batch = o.integer_in("micro_batch", input_range::kMicroBatch);
  t.global_batch = o.integer_in("global_batch", input_range::kGlobalBatch);
  if (o.has("seed")) {
    const nlohmann::json& s = o.raw("seed");
    if (!s.is_number_unsigned()) o.fail("seed", fmt::format("expected an integer >= 0, got {}", json_type_name(s)));
    t.seed = s.get<std::uint64_t>();
  }
  if (o.has("dropout")) {
    t.dropout = o.number("dropout");
    if (!(t.dropout >= 0 && t.dropout < 1))
      o.fail("dropout", fmt::format("expected a probability in [0, 1), got {}", t.dropout));
  }
  o.finish();
  return t;
}

Parallelism parse_parallelism(JsonObject o) {
  Parallelism p;
  p.dp_replicate = optional_degree(o, "dp_replicate", 1);
  p.dp_shard = static_cast<int>(o.integer_in("dp_shard", input_range::kDegree));
  p.tp = optional_degree(o, "tp", 1);
  p.cp = optional_degree(o, "cp", 1);
  p.sequence_parallel = o.optional_boolean("sequence_parallel").value_or(false);
  p.pp = optional_degree(o, "pp", 1);
  p.vpp = optional_degree(o, "vpp", 1);
  p.ep = optional_degree(o, "ep", 1);
  p.pp_schedule = enum_of(o, "pp_schedule", kSchedules, pipeline_schedule_name, PipelineSchedule::none);
  p.data_parallel = enum_of(o, "data_parallel", kDataParallels, data_parallel_name, DataParallel::fsdp_full_shard);
  o.finish();
  return p;
}

// true -> 1, false -> 0, integer g >= 1 -> g; g == the shard group's size (dp_shard x cp) means the same
// as true and is stored as 1.
int parse_reshard(JsonObject& u, int shard_ranks) {
  if (!u.has("reshard_after_forward")) return 1;
  const nlohmann::json& v = u.raw("reshard_after_forward");
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1 ||
      v.get<std::int64_t>() > input_range::kDegree.max)
    u.fail("reshard_after_forward",
           fmt::format("expected true, false or an integer >= 1 (reshard to that many ranks), got {}",
                       json_type_name(v)));
  const int g = static_cast<int>(v.get<std::int64_t>());
  return g == shard_ranks ? 1 : g;
}

std::vector<PlanUnit> parse_units(JsonObject& o, int shard_ranks) {
  std::vector<PlanUnit> units;
  const auto elements = o.array("units");
  if (elements.empty()) o.fail("units", "expected at least one unit");
  for (const auto& [uj, upath] : elements) {
    JsonObject u(*uj, o.file(), upath);
    PlanUnit unit;
    const auto modules = u.array("modules");
    if (modules.empty()) u.fail("modules", "expected at least one module name");
    for (const auto& [mj, mpath] : modules) {
      if (!mj->is_string())
        throw_config_error(o.file(), mpath, fmt::format("expected a module name, got {}", json_type_name(*mj)));
      unit.modules.push_back(mj->get<std::string>());
    }
    unit.reshard_after_forward = parse_reshard(u, shard_ranks);
    unit.stage = optional_int_in(u, "stage", input_range::kStage, 0);
    u.finish();
    units.push_back(std::move(unit));
  }
  return units;
}

Prefetch parse_prefetch(JsonObject o) {
  Prefetch p;
  p.forward = optional_int_in(o, "forward", input_range::kPrefetch, p.forward);
  p.backward = optional_int_in(o, "backward", input_range::kPrefetch, p.backward);
  p.max_all_gathers_in_flight = optional_int_in(o, "max_all_gathers_in_flight",
                                                  {1, input_range::kPrefetch.max}, p.max_all_gathers_in_flight);
  o.finish();
  return p;
}

RecomputeMode recompute_of(const nlohmann::json& v, const std::string& file, const std::string& path) {
  for (RecomputeMode r : kRecomputeModes)
    if (v.is_string() && v.get<std::string>() == recompute_mode_name(r)) return r;
  throw_config_error(file, path,
                     fmt::format("expected one of none, selective, full, selective_op, got {}", json_type_name(v)));
}

// "none|selective|full|selective_op" for every block, an array with one entry per block, or {"full_first_blocks": k}.
std::vector<RecomputeMode> parse_recompute(JsonObject& o, std::int64_t layers) {
  const auto n = static_cast<std::size_t>(layers);
  if (!o.has("recompute")) return std::vector<RecomputeMode>(n, RecomputeMode::none);
  const nlohmann::json& v = o.raw("recompute");
  const std::string path = o.path_of("recompute");
  if (v.is_string()) return std::vector<RecomputeMode>(n, recompute_of(v, o.file(), path));
  std::vector<RecomputeMode> out;
  if (v.is_array()) {
    for (const auto& [ej, epath] : o.array("recompute")) out.push_back(recompute_of(*ej, o.file(), epath));
    return out;  // the length is checked by validate_plan
  }
  if (!v.is_object())
    o.fail("recompute", fmt::format("expected \"none\", \"selective\", \"full\", \"selective_op\", an array with one "
                                    "entry per block "
                                    "or {{\"full_first_blocks\": k}}, got {}", json_type_name(v)));
  JsonObject r(v, o.file(), path);
  const std::int64_t k = r.integer("full_first_blocks");
  if (k < 0 || k > layers)
    r.fail("full_first_blocks", fmt::format("expected 0 <= k <= layers ({}), got {}", layers, k));
  r.finish();
  out.assign(n, RecomputeMode::none);
  std::fill_n(out.begin(), k, RecomputeMode::full);
  return out;
}

DType dtype_of(JsonObject& o, std::string_view key, DType fallback) {
  if (!o.has(key)) return fallback;
  const std::string name = o.string(key);
  DType t = fallback;
  if (!parse_dtype(name, t)) o.fail(key, fmt::format("expected one of fp32, tf32, bf16, fp16, fp8, got \"{}\"", name));
  return t;
}

MixedPrecision parse_precision(JsonObject o) {
  MixedPrecision m;
  m.param = dtype_of(o, "param_dtype", m.param);
  m.reduce = dtype_of(o, "reduce_dtype", m.reduce);
  m.fp32_master_weights = o.optional_boolean("fp32_master_weights").value_or(m.fp32_master_weights);
  o.finish();
  return m;
}

OptimizerSettings parse_optimizer(JsonObject o) {
  OptimizerSettings s;
  if (o.has("kind")) o.choice("kind", {"adamw"});
  s.lr = optional_number(o, "lr", s.lr);
  s.beta1 = optional_number(o, "beta1", s.beta1);
  s.beta2 = optional_number(o, "beta2", s.beta2);
  s.eps = optional_number(o, "eps", s.eps);
  s.weight_decay = optional_number(o, "weight_decay", s.weight_decay);
  s.grad_clip_norm = optional_number(o, "grad_clip_norm", s.grad_clip_norm);
  if (o.has("warmup_steps")) s.warmup_steps = o.integer("warmup_steps");
  if (o.has("total_steps")) s.total_steps = o.integer("total_steps");
  s.min_lr_ratio = optional_number(o, "min_lr_ratio", s.min_lr_ratio);
  o.finish();  // ranges are checked by validate_plan, which also sees plans built in code
  return s;
}

Framework parse_framework(JsonObject& o) {
  if (!o.has("framework")) return Framework::fsdpx;
  const nlohmann::json& v = o.raw("framework");
  if (v.is_string())
    if (auto f = framework_from_name(v.get<std::string>())) return *f;
  o.fail("framework", fmt::format("expected one of fsdpx, torchtitan, llm-foundry, megatron, got {}",
                                  v.is_string() ? "\"" + v.get<std::string>() + "\"" : json_type_name(v)));
}

// Strict: one of the framework's versions (core/framework.h), absent when not stated.
std::string parse_framework_version(JsonObject& o, Framework f) {
  if (!o.has("framework_version")) return {};
  const nlohmann::json& v = o.raw("framework_version");
  const std::vector<std::string>& known = framework_versions(f);
  if (v.is_string() && std::find(known.begin(), known.end(), v.get<std::string>()) != known.end())
    return v.get<std::string>();
  const std::string got = v.is_string() ? fmt::format("\"{}\"", v.get<std::string>()) : std::string(json_type_name(v));
  if (known.empty())
    o.fail("framework_version", fmt::format("{} has no versions fsdpx distinguishes, got {}",
                                            framework_name(f), got));
  o.fail("framework_version",
         fmt::format("expected one of {} for {}, got {}", fmt::join(known, ", "), framework_name(f), got));
}

PredictedMetrics parse_predicted(JsonObject o) {
  PredictedMetrics m;
  auto get = [&o](std::string_view key) { return o.has(key) ? o.non_negative_number(key) : 0.0; };
  m.step_time_s = get("step_time_s");
  m.tokens_per_s_per_gpu = get("tokens_per_s_per_gpu");
  m.mfu = get("mfu");
  m.exposed_comm_s = get("exposed_comm_s");
  m.peak_memory_bytes = get("peak_memory_bytes");
  // The peak fsdpx plans predict is the device total (core/memory_metric.h); older plans omit the name.
  if (o.has("peak_memory_metric")) o.choice("peak_memory_metric", {memory_metric::kDevice});
  o.finish();
  return m;
}

PlannerRecord parse_planner_record(JsonObject o) {
  PlannerRecord r;
  r.target = o.string("target");
  r.memory_capacity_bytes = o.positive_number("memory_capacity_bytes");
  r.memory_margin_bytes = o.non_negative_number("memory_margin_bytes");
  r.throughput_tolerance = o.non_negative_number("throughput_tolerance");
  r.allow_bf16_reduce = o.boolean("allow_bf16_reduce");
  o.finish();
  return r;
}

nlohmann::json recompute_to_json(const std::vector<RecomputeMode>& r) {
  if (!r.empty() && std::all_of(r.begin(), r.end(), [&](RecomputeMode m) { return m == r.front(); }))
    return recompute_mode_name(r.front());
  const auto first_none = std::find(r.begin(), r.end(), RecomputeMode::none);
  if (!r.empty() && r.front() == RecomputeMode::full &&
      std::all_of(r.begin(), first_none, [](RecomputeMode m) { return m == RecomputeMode::full; }) &&
      std::all_of(first_none, r.end(), [](RecomputeMode m) { return m == RecomputeMode::none; }))
    return {{"full_first_blocks", first_none - r.begin()}};
  nlohmann::json a = nlohmann::json::array();
  for (RecomputeMode m : r) a.push_back(recompute_mode_name(m));
  return a;
}

// "stage" is written only with pipeline parallelism (absent = 0).
nlohmann::json units_to_json(const std::vector<PlanUnit>& units, bool pipelined) {
  nlohmann::json a = nlohmann::json::array();
  for (const PlanUnit& u : units) {
    nlohmann::json reshard = u.reshard_after_forward;
    if (u.reshard_after_forward == 0 || u.reshard_after_forward == 1) reshard = u.reshard_after_forward == 1;
    a.push_back({{"modules", u.modules}, {"reshard_after_forward", reshard}});
    if (pipelined) a.back()["stage"] = u.stage;
  }
  return a;
}

// training.micro_batches is derived (Plan::grad_accum); a file may state it, and then it must agree.
void check_stated_micro_batches(JsonObject training, const Plan& p) {
  if (!training.has("micro_batches")) return;
  const std::int64_t stated = training.positive_integer("micro_batches");
  if (stated != p.grad_accum())
    training.fail("micro_batches",
                  fmt::format("{} micro-batches stated, but global_batch ({}) / (micro_batch ({}) x data-parallel "
                              "ranks ({})) = {}", stated, p.training.global_batch, p.training.micro_batch,
                              p.parallelism.data_parallel_ranks(), p.grad_accum()));
}

nlohmann::json parallelism_to_json(const Parallelism& p) {
  nlohmann::json j{{"dp_replicate", p.dp_replicate},
          {"dp_shard", p.dp_shard},
          {"tp", p.tp},
          {"cp", p.cp},
          {"sequence_parallel", p.sequence_parallel},
          {"pp", p.pp},
          {"vpp", p.vpp},
          {"pp_schedule", pipeline_schedule_name(p.pp_schedule)},
          {"data_parallel", data_parallel_name(p.data_parallel)}};
  if (p.ep > 1) j["ep"] = p.ep;  // absent = 1: dense plans keep their bytes
  return j;
}

nlohmann::json optimizer_to_json(const OptimizerSettings& s) {
  return {{"kind", "adamw"},        {"lr", s.lr},
          {"beta1", s.beta1},       {"beta2", s.beta2},
          {"eps", s.eps},           {"weight_decay", s.weight_decay},
          {"grad_clip_norm", s.grad_clip_norm}, {"warmup_steps", s.warmup_steps},
          {"total_steps", s.total_steps},       {"min_lr_ratio", s.min_lr_ratio}};
}

}  // namespace

Plan parse_plan(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file);
  const std::string format = o.string("format");
  if (format != kFormat) o.fail("format", fmt::format("expected \"{}\", got \"{}\"", kFormat, format));
  Plan p;
  p.model = parse_model(o);
  p.cluster = parse_cluster(o);
  p.training = parse_training(o.object("training"));
  p.parallelism = parse_parallelism(o.object("parallelism"));
  p.units = parse_units(o, p.parallelism.dp_shard * p.parallelism.cp);
  if (auto pf = o.optional_object("prefetch")) p.prefetch = parse_prefetch(*pf);
  p.recompute = parse_recompute(o, p.model.layers);
  if (auto mp = o.optional_object("mixed_precision")) p.precision = parse_precision(*mp);
  if (auto ls = o.optional_object("loss_scale")) p.loss_scale = parse_loss_scale(*ls);
  if (auto f8 = o.optional_object("fp8")) p.fp8 = parse_fp8_settings(*f8);
  if (auto opt = o.optional_object("optimizer")) p.optimizer = parse_optimizer(*opt);
  p.reduce_grads = enum_of(o, "reduce_grads", kReduceGrads, reduce_grads_name, ReduceGrads::every_micro_batch);
  p.attention_kernel =
      enum_of(o, "attention_kernel", kAttentionKernels, attention_kernel_cname, AttentionKernel::flash2);
  p.framework = parse_framework(o);
  p.framework_version = parse_framework_version(o, p.framework);
  p.compiled = o.optional_boolean("compiled").value_or(false);
  if (auto l = o.optional_object("lora")) p.lora = parse_lora(*l, p.model);
  if (auto mr = o.optional_object("moe")) {
    if (!p.model.is_moe()) o.fail("moe", fmt::format("routing settings need a mixture-of-experts model; {} is dense",
                                                      p.model.name));
    p.moe_routing = parse_moe_routing(*mr);
  }
  if (auto pr = o.optional_object("predicted")) p.predicted = parse_predicted(*pr);
  if (auto pl = o.optional_object("planner")) p.planner = parse_planner_record(*pl);
  p.notes = o.optional_string("notes").value_or("");
  o.finish();
  validate_plan(p, file);
  check_stated_micro_batches(JsonObject(j.at("training"), file, "/training"), p);
  return p;
}

Plan load_plan(const std::string& path) { return parse_plan(load_json_file(path), path); }

nlohmann::json plan_to_json(const Plan& p) {
  nlohmann::json cluster = cluster_spec_to_json(p.cluster);
  cluster["gpu"] = gpu_spec_to_json(p.cluster.gpu);
  nlohmann::json j{
      {"format", kFormat},
      {"model", model_spec_to_json(p.model)},
      {"cluster", std::move(cluster)},
      {"training",
       {{"seq", p.training.seq}, {"micro_batch", p.training.micro_batch},
        {"global_batch", p.training.global_batch}, {"seed", p.training.seed}}},
      {"parallelism", parallelism_to_json(p.parallelism)},
      {"units", units_to_json(p.units, p.parallelism.pp > 1)},
      {"prefetch",
       {{"forward", p.prefetch.forward}, {"backward", p.prefetch.backward},
        {"max_all_gathers_in_flight", p.prefetch.max_all_gathers_in_flight}}},
      {"recompute", recompute_to_json(p.recompute)},
      {"mixed_precision",
       {{"param_dtype", dtype_name(p.precision.param)}, {"reduce_dtype", dtype_name(p.precision.reduce)},
        {"fp32_master_weights", p.precision.fp32_master_weights}}},
      {"optimizer", optimizer_to_json(p.optimizer)},
      {"reduce_grads", reduce_grads_name(p.reduce_grads)},
      {"attention_kernel", attention_kernel_cname(p.attention_kernel)},
      {"framework", std::string(framework_name(p.framework))},
      {"compiled", p.compiled}};
  if (!p.framework_version.empty()) j["framework_version"] = p.framework_version;
  if (p.predicted)
    j["predicted"] = {{"step_time_s", p.predicted->step_time_s},
                      {"tokens_per_s_per_gpu", p.predicted->tokens_per_s_per_gpu},
                      {"mfu", p.predicted->mfu},
                      {"exposed_comm_s", p.predicted->exposed_comm_s},
                      {"peak_memory_bytes", p.predicted->peak_memory_bytes},
                      {"peak_memory_metric", std::string(memory_metric::kDevice)}};
  if (p.planner)
    j["planner"] = {{"target", p.planner->target},
                    {"memory_capacity_bytes", p.planner->memory_capacity_bytes},
                    {"memory_margin_bytes", p.planner->memory_margin_bytes},
                    {"throughput_tolerance", p.planner->throughput_tolerance},
                    {"allow_bf16_reduce", p.planner->allow_bf16_reduce}};
  if (!p.notes.empty()) j["notes"] = p.notes;
  if (p.lora) j["lora"] = lora_to_json(*p.lora);
  if (p.model.is_moe()) j["moe"] = moe_routing_to_json(p.moe_routing);
  if (p.loss_scale) j["loss_scale"] = loss_scale_to_json(*p.loss_scale);
  if (p.fp8) j["fp8"] = fp8_settings_to_json(*p.fp8);
  if (p.training.dropout > 0) j["training"]["dropout"] = p.training.dropout;  // absent = 0
  if (p.parallelism.pp > 1) j["training"]["micro_batches"] = p.grad_accum();
  return j;
}

}  // namespace fsdpx
