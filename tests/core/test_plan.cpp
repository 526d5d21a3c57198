// tests/core/test_plan.cpp — the plan file: exact round trips of the shipped plans (field by field and
// byte for byte), the default plan's unit layout against closed forms, recompute's compact forms, and one
// test per class of input error asserting that the message names the file and the JSON path.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <vector>
#include <nlohmann/json.hpp>
#include <string>

#include "core/config_paths.h"
#include "core/gpu_spec.h"
#include "core/json_reader.h"
#include "core/plan.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;
const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;
const std::string kSample = kData + "/plans/llama-tiny-cpu.json";

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// The message must name the file and the JSON path, and say what was wrong.
void check_error(const std::string& msg, const std::string& file, const std::string& path, const std::string& what) {
  INFO("message: " << msg);
  CHECK(msg.find(file + ": " + path + ":") != std::string::npos);
  CHECK(msg.find(what) != std::string::npos);
}

// Applies `edit` to the sample plan's JSON and returns the error of parsing it as "edited.json".
template <typename F>
std::string error_after(F&& edit) {
  nlohmann::json j = load_json_file(kSample);
  edit(j);
  return error_of([&] { parse_plan(j, "edited.json"); });
}

void check_gpus_equal(const GpuSpec& a, const GpuSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.peak_flops_per_s == b.peak_flops_per_s);
  CHECK(a.vector_flops_per_s == b.vector_flops_per_s);
  CHECK(a.hbm_bytes == b.hbm_bytes);
  CHECK(a.hbm_bw_bytes_per_s == b.hbm_bw_bytes_per_s);
  CHECK(a.nvlink_bw_bytes_per_s == b.nvlink_bw_bytes_per_s);
  CHECK(a.sm_count == b.sm_count);
  CHECK(a.matmul_efficiency.points == b.matmul_efficiency.points);
  CHECK(a.memory_efficiency.points == b.memory_efficiency.points);
  CHECK(a.sources == b.sources);
}

void check_specs_equal(const Plan& a, const Plan& b) {
  const ModelSpec &m = a.model, &n = b.model;
  CHECK(m.name == n.name);
  CHECK(m.arch == n.arch);
  CHECK(m.layers == n.layers);
  CHECK(m.hidden == n.hidden);
  CHECK(m.heads == n.heads);
  CHECK(m.kv_heads == n.kv_heads);
  CHECK(m.head_dim == n.head_dim);
  CHECK(m.ffn_hidden == n.ffn_hidden);
  CHECK(m.ffn_kind == n.ffn_kind);
  CHECK(m.vocab == n.vocab);
  CHECK(m.max_seq == n.max_seq);
  CHECK(m.tied_embeddings == n.tied_embeddings);
  CHECK(m.bias == n.bias);
  CHECK(m.rope_theta == n.rope_theta);
  CHECK(m.norm_eps == n.norm_eps);
  const ClusterSpec &c = a.cluster, &d = b.cluster;
  check_gpus_equal(c.gpu, d.gpu);
  CHECK(c.name == d.name);
  CHECK(c.gpus_per_node == d.gpus_per_node);
  CHECK(c.nodes == d.nodes);
  CHECK(c.host_threads == d.host_threads);
  CHECK(c.intra.bus_bw_bytes_per_s == d.intra.bus_bw_bytes_per_s);
  CHECK(c.intra.latency_s == d.intra.latency_s);
  CHECK(c.intra.nvls == d.intra.nvls);
  CHECK(c.inter.nics_per_node == d.inter.nics_per_node);
  CHECK(c.inter.nic_bw_bytes_per_s == d.inter.nic_bw_bytes_per_s);
  CHECK(c.inter.latency_s == d.inter.latency_s);
}

void check_plans_equal(const Plan& a, const Plan& b) {
  check_specs_equal(a, b);
  CHECK(a.training.seq == b.training.seq);
  CHECK(a.training.micro_batch == b.training.micro_batch);
  CHECK(a.training.global_batch == b.training.global_batch);
  CHECK(a.training.seed == b.training.seed);
  const Parallelism &p = a.parallelism, &q = b.parallelism;
  CHECK(p.dp_replicate == q.dp_replicate);
  CHECK(p.dp_shard == q.dp_shard);
  CHECK(p.tp == q.tp);
  CHECK(p.cp == q.cp);
  CHECK(p.sequence_parallel == q.sequence_parallel);
  CHECK(p.pp == q.pp);
  CHECK(p.vpp == q.vpp);
  CHECK(p.pp_schedule == q.pp_schedule);
  CHECK(p.data_parallel == q.data_parallel);
  REQUIRE(a.units.size() == b.units.size());
  for (std::size_t i = 0; i < a.units.size(); ++i) {
    CHECK(a.units[i].modules == b.units[i].modules);
    CHECK(a.units[i].reshard_after_forward == b.units[i].reshard_after_forward);
    CHECK(a.units[i].stage == b.units[i].stage);
  }
  CHECK(a.prefetch.forward == b.prefetch.forward);
  CHECK(a.prefetch.backward == b.prefetch.backward);
  CHECK(a.prefetch.max_all_gathers_in_flight == b.prefetch.max_all_gathers_in_flight);
  CHECK(a.recompute == b.recompute);
  CHECK(a.precision.param == b.precision.param);
  CHECK(a.precision.reduce == b.precision.reduce);
  CHECK(a.precision.fp32_master_weights == b.precision.fp32_master_weights);
  const OptimizerSettings &o = a.optimizer, &r = b.optimizer;
  CHECK((o.lr == r.lr && o.beta1 == r.beta1 && o.beta2 == r.beta2 && o.eps == r.eps));
  CHECK((o.weight_decay == r.weight_decay && o.grad_clip_norm == r.grad_clip_norm));
  CHECK((o.warmup_steps == r.warmup_steps && o.total_steps == r.total_steps && o.min_lr_ratio == r.min_lr_ratio));
  CHECK(a.reduce_grads == b.reduce_grads);
  REQUIRE(a.predicted.has_value() == b.predicted.has_value());
  if (a.predicted) {
    CHECK(a.predicted->step_time_s == b.predicted->step_time_s);
    CHECK(a.predicted->tokens_per_s_per_gpu == b.predicted->tokens_per_s_per_gpu);
    CHECK(a.predicted->mfu == b.predicted->mfu);
    CHECK(a.predicted->exposed_comm_s == b.predicted->exposed_comm_s);
    CHECK(a.predicted->peak_memory_bytes == b.predicted->peak_memory_bytes);
  }
  CHECK(a.notes == b.notes);
}

// parse(plan_to_json(p)) == p field by field, and a second trip gives the same bytes.
void check_round_trip(const Plan& p) {
  const nlohmann::json j1 = plan_to_json(p);
  const Plan q = parse_plan(j1, "round-trip.json");
  check_plans_equal(p, q);
  CHECK(plan_to_json(q).dump() == j1.dump());
}

std::vector<std::string> shipped_plans() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(kConfigs + "/plans"))
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST_CASE("shipped plans load, are written canonically and round-trip exactly") {
  const auto paths = shipped_plans();
  CHECK(paths.size() >= 3);
  for (const std::string& path : paths) {
    INFO("plan: " << path);
    const Plan p = load_plan(path);
    CHECK(p.parallelism.world_size() == p.cluster.world_size());
    CHECK(plan_to_json(p) == load_json_file(path));  // the file is what plan_to_json writes
    check_round_trip(p);
  }
}

// A plan embeds its GPU's curves; an example whose GPU ships in configs/gpus/ must carry that file's values,
// or its predictions drift from the same plan made today (the H100 examples kept pre-2026-11 attention curves).
TEST_CASE("shipped plans embed the GPU file of the same name as it is now") {
  for (const std::string& path : shipped_plans()) {
    INFO("plan: " << path);
    const Plan p = load_plan(path);
    if (p.cluster.gpu.name == "cpu-host") continue;  // the CPU examples carry this machine's measured peak
    CHECK(gpu_spec_to_json(p.cluster.gpu) == gpu_spec_to_json(load_gpu(p.cluster.gpu.name)));
  }
}

TEST_CASE("the 70B plan is FSDP 16 x TP 8 on 16 DGX-H100 nodes") {
  const Plan p = load_plan(kConfigs + "/plans/llama3.1-70b-dgx-h100x16-fsdp16-tp8.json");
  CHECK(p.cluster.nodes * p.cluster.gpus_per_node == 16 * 8);
  CHECK(p.parallelism.dp_shard == 16);
  CHECK(p.parallelism.tp == 8);
  CHECK(p.model.layers == 80);
  CHECK(p.units.size() == 80 + 2);  // embedding, one unit per block, final_norm + head
  // global_batch = micro_batch x dp ranks x grad_accum.
  CHECK(p.grad_accum() * p.training.micro_batch * 16 == p.training.global_batch);
}

TEST_CASE("module names follow forward order") {
  const ModelSpec m = load_model(kConfigs + "/models/llama-tiny.json");
  CHECK(module_names(m) == std::vector<std::string>{"embedding", "block.0", "block.1", "final_norm", "head"});
}

TEST_CASE("default plan: unit counts and reshard flags match the closed form") {
  const ModelSpec m = load_model(kConfigs + "/models/llama3.1-8b.json");
  ClusterSpec c = load_cluster(kConfigs + "/clusters/dgx-h100.json");
  Parallelism par;
  par.dp_shard = 8;
  const TrainingSettings t{8192, 1, 8, 0};
  for (int per_unit : {1, 3, 32, 40}) {
    INFO("blocks_per_unit " << per_unit);
    const Plan p = default_plan(m, c, t, par, per_unit, RecomputeMode::selective);
    const std::size_t block_units = static_cast<std::size_t>((32 + per_unit - 1) / per_unit);
    REQUIRE(p.units.size() == block_units + 2);
    CHECK(p.units.front().modules == std::vector<std::string>{"embedding"});
    CHECK(p.units.back().modules == std::vector<std::string>{"final_norm", "head"});
    CHECK(p.units.back().reshard_after_forward == 0);  // backward starts with it
    for (std::size_t i = 0; i + 1 < p.units.size(); ++i) CHECK(p.units[i].reshard_after_forward == 1);
    CHECK(p.units[block_units].modules.back() == "block.31");
    CHECK(p.recompute == std::vector<RecomputeMode>(32, RecomputeMode::selective));
    validate_plan(p, "default");
    check_round_trip(p);
  }
}

TEST_CASE("default plan: tied embedding joins the head; ZeRO-2 keeps every unit unsharded") {
  const ModelSpec m = load_model(kConfigs + "/models/gpt-tiny.json");
  const ClusterSpec c = load_cluster(kConfigs + "/clusters/cpu.json");
  Parallelism par;
  par.dp_shard = c.world_size();
  const TrainingSettings t{128, 1, 8, 7};
  const Plan p = default_plan(m, c, t, par, 1, RecomputeMode::none);
  REQUIRE(p.units.size() == 3);  // block.0, block.1, embedding + final_norm + head
  CHECK(p.units.back().modules == std::vector<std::string>{"embedding", "final_norm", "head"});
  validate_plan(p, "default");
  check_round_trip(p);
  par.data_parallel = DataParallel::fsdp_shard_grad_op;
  const Plan z2 = default_plan(m, c, t, par, 1, RecomputeMode::full);
  for (const PlanUnit& u : z2.units) CHECK(u.reshard_after_forward == 0);
  validate_plan(z2, "default");
}

TEST_CASE("reshard_after_forward: bool and int forms") {
  Plan p = load_plan(kSample);  // dp_shard 4
  nlohmann::json j = plan_to_json(p);
  j["units"][1]["reshard_after_forward"] = 2;
  j["units"][2]["reshard_after_forward"] = 4;  // == dp_shard: the same as true
  j["units"][0]["reshard_after_forward"] = false;
  const Plan q = parse_plan(j, "int.json");
  CHECK(q.units[0].reshard_after_forward == 0);
  CHECK(q.units[1].reshard_after_forward == 2);
  CHECK(q.units[2].reshard_after_forward == 1);
  CHECK(plan_to_json(q)["units"][1]["reshard_after_forward"] == 2);
  CHECK(plan_to_json(q)["units"][2]["reshard_after_forward"] == true);
  check_round_trip(q);
}

TEST_CASE("recompute: string, per-block array and full_first_blocks, written compactly") {
  const ModelSpec m = load_model(kConfigs + "/models/llama3.1-8b.json");
  const ClusterSpec c = load_cluster(kConfigs + "/clusters/dgx-h100.json");
  Parallelism par;
  par.dp_shard = 8;
  Plan p = default_plan(m, c, TrainingSettings{4096, 1, 8, 0}, par, 1, RecomputeMode::none);
  nlohmann::json j = plan_to_json(p);
  CHECK(j["recompute"] == "none");
  j["recompute"] = {{"full_first_blocks", 5}};
  Plan q = parse_plan(j, "ffb.json");
  for (std::size_t b = 0; b < 32; ++b) CHECK(q.recompute[b] == (b < 5 ? RecomputeMode::full : RecomputeMode::none));
  CHECK(plan_to_json(q)["recompute"] == nlohmann::json{{"full_first_blocks", 5}});
  q.recompute[31] = RecomputeMode::selective;
  const nlohmann::json mixed = plan_to_json(q)["recompute"];
  REQUIRE(mixed.is_array());
  CHECK(mixed.size() == 32);
  CHECK(mixed[31] == "selective");
  q.predicted = PredictedMetrics{1.25, 3120.5, 0.413, 0.0625, 7.5e10};
  q.notes = "mixed recompute";
  check_round_trip(q);
  // The predicted peak names its metric (issue 31): the device total; any other name is an error.
  nlohmann::json named = plan_to_json(q);
  CHECK(named["predicted"]["peak_memory_metric"] == "device");
  named["predicted"]["peak_memory_metric"] = "reserved";
  check_error(error_of([&] { parse_plan(named, "metric.json"); }), "metric.json", "/predicted/peak_memory_metric",
              "device");
  j["recompute"] = {{"full_first_blocks", 33}};
  check_error(error_of([&] { parse_plan(j, "ffb.json"); }), "ffb.json", "/recompute/full_first_blocks", "<= layers");
}

TEST_CASE("recompute selective_op (torchtitan's op-level SAC) parses, round-trips and stays distinct") {
  const ModelSpec m = load_model(kConfigs + "/models/llama3.1-8b.json");
  const ClusterSpec c = load_cluster(kConfigs + "/clusters/dgx-h100.json");
  Parallelism par;
  par.dp_shard = 8;
  Plan p = default_plan(m, c, TrainingSettings{4096, 1, 8, 0}, par, 1, RecomputeMode::selective_op);
  nlohmann::json j = plan_to_json(p);
  CHECK(j["recompute"] == "selective_op");
  check_round_trip(p);
  p.recompute[0] = RecomputeMode::selective;  // Korthikanti's selective next to op-level SAC
  const nlohmann::json mixed = plan_to_json(p)["recompute"];
  REQUIRE(mixed.is_array());
  CHECK(mixed[0] == "selective");
  CHECK(mixed[1] == "selective_op");
  check_round_trip(p);
  j["recompute"] = "selective-op";
  check_error(error_of([&] { parse_plan(j, "op.json"); }), "op.json", "/recompute", "selective_op");
}

// Llama-3.1-8B on one DGX H100 node, FSDP 8, full recompute: the plan the key round-trip tests edit.
Plan llama8b_fsdp8_plan() {
  const ModelSpec m = load_model(kConfigs + "/models/llama3.1-8b.json");
  const ClusterSpec c = load_cluster(kConfigs + "/clusters/dgx-h100.json");
  Parallelism par;
  par.dp_shard = 8;
  return default_plan(m, c, TrainingSettings{4096, 1, 8, 0}, par, 1, RecomputeMode::full);
}

TEST_CASE("attention_kernel unfused (Megatron-LM 2021 materialised scores) round-trips") {
  Plan p = llama8b_fsdp8_plan();
  p.attention_kernel = AttentionKernel::unfused;
  CHECK(plan_to_json(p)["attention_kernel"] == "unfused");
  check_round_trip(p);
  CHECK(parse_plan(plan_to_json(p), "u.json").attention_kernel == AttentionKernel::unfused);
  p.attention_kernel = AttentionKernel::cuda_core;  // fsdpx's CUDA-core kernel (executor/cuda/attention.cu)
  CHECK(plan_to_json(p)["attention_kernel"] == "cuda_core");
  check_round_trip(p);
  CHECK(parse_plan(plan_to_json(p), "u.json").attention_kernel == AttentionKernel::cuda_core);
  p.attention_kernel = AttentionKernel::tensor_core;  // fsdpx's tensor-core kernel (executor/cuda/attention_tc.cu)
  CHECK(plan_to_json(p)["attention_kernel"] == "tensor_core");
  check_round_trip(p);
  CHECK(parse_plan(plan_to_json(p), "u.json").attention_kernel == AttentionKernel::tensor_core);
  // cuDNN's fused attention (Transformer Engine on Hopper) runs at the GPU file's cuDNN curves: refused without them.
  p.attention_kernel = AttentionKernel::cudnn;
  p.cluster.gpu.cudnn_attention_efficiency.points.clear();
  p.cluster.gpu.cudnn_attention_backward_efficiency.points.clear();
  CHECK(error_of([&] { parse_plan(plan_to_json(p), "u.json"); }).find("u.json: /attention_kernel:") != std::string::npos);
  p.cluster.gpu.cudnn_attention_efficiency.points = {{512, 0.3184}, {16384, 0.5448}};
  p.cluster.gpu.cudnn_attention_backward_efficiency.points = {{512, 0.2218}, {16384, 0.5215}};
  CHECK(plan_to_json(p)["attention_kernel"] == "cudnn");
  check_round_trip(p);
}

TEST_CASE("framework_version: a torchtitan release round-trips; absent is unstated; unknown values name the path") {
  Plan p = llama8b_fsdp8_plan();
  p.framework = Framework::torchtitan;
  CHECK_FALSE(plan_to_json(p).contains("framework_version"));
  CHECK(parse_plan(plan_to_json(p), "v.json").framework_version.empty());
  for (const std::string& v : framework_versions(Framework::torchtitan)) {
    p.framework_version = v;
    CHECK(plan_to_json(p)["framework_version"] == v);
    check_round_trip(p);
  }
  nlohmann::json j = plan_to_json(p);
  j["framework_version"] = "0.3.0";
  check_error(error_of([&] { parse_plan(j, "v.json"); }), "v.json", "/framework_version", "pre-0.1.0, 0.1.0");
  j["framework_version"] = 2;
  check_error(error_of([&] { parse_plan(j, "v.json"); }), "v.json", "/framework_version", "got the number 2");
  j["framework_version"] = "0.2.2";
  j["framework"] = "megatron";
  check_error(error_of([&] { parse_plan(j, "v.json"); }), "v.json", "/framework_version", "megatron has no versions");
}

TEST_CASE("training.dropout: absent is 0 and not written; a probability round-trips") {
  const Plan p = load_plan(kSample);
  CHECK(p.training.dropout == 0);
  CHECK_FALSE(plan_to_json(p)["training"].contains("dropout"));
  Plan d = p;
  d.training.dropout = 0.1;
  CHECK(plan_to_json(d)["training"]["dropout"] == 0.1);
  check_round_trip(d);
  CHECK(parse_plan(plan_to_json(d), "d.json").training.dropout == 0.1);
}

TEST_CASE("optional keys take the documented defaults") {
  nlohmann::json j = load_json_file(kSample);
  for (const char* key : {"prefetch", "recompute", "mixed_precision", "optimizer", "reduce_grads", "predicted", "notes"})
    j.erase(key);
  j["training"].erase("seed");
  for (const char* key : {"dp_replicate", "tp", "cp", "pp", "vpp", "sequence_parallel", "pp_schedule", "data_parallel"})
    j["parallelism"].erase(key);
  for (auto& u : j["units"]) u.erase("reshard_after_forward");
  const Plan p = parse_plan(j, "minimal.json");
  CHECK(p.training.seed == 0);
  CHECK(p.parallelism.data_parallel == DataParallel::fsdp_full_shard);
  CHECK(p.parallelism.tp == 1);
  CHECK(p.prefetch.max_all_gathers_in_flight == 2);  // FSDP1 rate limiter: two all-gathers in flight
  CHECK(p.recompute == std::vector<RecomputeMode>(2, RecomputeMode::none));
  CHECK(p.precision.param == DType::bf16);
  CHECK(p.precision.reduce == DType::fp32);
  CHECK(p.reduce_grads == ReduceGrads::every_micro_batch);
  CHECK(!p.predicted.has_value());
  for (const PlanUnit& u : p.units) CHECK(u.reshard_after_forward == 1);
  // Plans written before the model carried rope_theta and norm_eps load with the defaults.
  CHECK_FALSE(j["model"].contains("rope_theta"));
  CHECK(p.model.rope_theta == 10000.0);
  CHECK(p.model.norm_eps == 1e-5);
}

TEST_CASE("bad plan files: message names the file and the JSON path") {
  const std::string bad = kData + "/plans/bad/";
  struct Case { const char* file; const char* path; const char* what; };
  for (const Case& c : {Case{"unknown_key_deep.json", "/prefetch/max_all_gather_in_flight", "unknown key"},
                        Case{"world_size.json", "/parallelism", "= 2, but cluster \"cpu\" has 1 nodes x 4"},
                        Case{"skipped_block.json", "/units", "\"block.1\" is in no unit"},
                        Case{"tied_split.json", "/units/0/modules/0", "same unit as \"head\""},
                        Case{"nested_gpu_type.json", "/cluster/gpu/sm_count", "expected an integer in [1, 1000000]"}}) {
    const std::string file = bad + c.file;
    check_error(error_of([&] { load_plan(file); }), file, c.path, c.what);
  }
}

TEST_CASE("each class of error names the JSON path") {
  using J = nlohmann::json;
  struct Case { std::function<void(J&)> edit; const char* path; const char* what; };
  const std::vector<Case> cases = {
      {[](J& j) { j["format"] = "fsdpx-plan/2"; }, "/format", "fsdpx-plan/1"},
      {[](J& j) { j["optimizer"]["lrr"] = 1; }, "/optimizer/lrr", "unknown key"},
      {[](J& j) { j["units"][2]["wrap"] = true; }, "/units/2/wrap", "unknown key"},
      {[](J& j) { j["cluster"]["intra_node"]["nvl"] = 1; }, "/cluster/intra_node/nvl", "unknown key"},
      {[](J& j) { j["model"]["layerz"] = 2; }, "/model/layerz", "unknown key"},
      {[](J& j) { j["model"]["rope_theta"] = 0; }, "/model/rope_theta", "expected a number in [1, "},
      {[](J& j) { j["model"]["norm_eps"] = 1; }, "/model/norm_eps", "expected a number in [1e-12, 0.5]"},
      {[](J& j) { j["training"]["seq"] = "128"; }, "/training/seq", "expected an integer in"},
      {[](J& j) { j["units"][1]["modules"][0] = 3; }, "/units/1/modules/0", "module name"},
      {[](J& j) { j["cluster"]["gpu"] = "cpu-host"; }, "/cluster/gpu", "all its figures"},
      {[](J& j) { j["parallelism"]["dp_shard"] = 8; }, "/parallelism", "= 8, but cluster"},
      {[](J& j) { j["units"].erase(2); }, "/units", "\"block.1\" is in no unit"},
      {[](J& j) { j["units"][2]["modules"].push_back("block.0"); }, "/units/2/modules/1", "already in /units/1/modules/0"},
      {[](J& j) { j["units"][2]["modules"][0] = "block.9"; }, "/units/2/modules/0", "unknown module \"block.9\""},
      {[](J& j) { std::swap(j["units"][1], j["units"][2]); }, "/units/1/modules/0", "expected \"block.0\" here"},
      {[](J& j) { j["recompute"] = {"full"}; }, "/recompute", "one entry per block (2 blocks), got 1"},
      {[](J& j) { j["recompute"] = {"full", "some"}; }, "/recompute/1", "none, selective, full"},
      {[](J& j) { j["units"][1]["reshard_after_forward"] = 3; }, "/units/1/reshard_after_forward", "divisor of dp_shard x cp (4)"},
      {[](J& j) { j["units"][1]["reshard_after_forward"] = 0; }, "/units/1/reshard_after_forward", "integer >= 1"},
      {[](J& j) { j["training"]["global_batch"] = 6; }, "/training/global_batch", "micro_batch (1) x dp_replicate (1) x dp_shard (4) = 4"},
      {[](J& j) { j["training"]["seq"] = 256; }, "/training/seq", "max_seq (128)"},
      {[](J& j) { j["model"]["heads"] = 2; j["parallelism"]["tp"] = 4; j["parallelism"]["dp_shard"] = 1; }, "/parallelism/tp", "attention heads (2)"},
      {[](J& j) {
         j["cluster"]["gpus_per_node"] = 2;
         j["cluster"]["nodes"] = 2;
         j["cluster"]["inter_node"] = {{"nics_per_node", 1}, {"nic_gb_per_s", 10}, {"latency_us", 5}};
         j["parallelism"]["tp"] = 4;
         j["parallelism"]["dp_shard"] = 1;
       }, "/parallelism/tp", "gpus_per_node (2)"},
      {[](J& j) { j["parallelism"]["data_parallel"] = "hsdp"; }, "/parallelism/data_parallel", "dp_replicate"},
      {[](J& j) { j["parallelism"]["dp_replicate"] = 2; j["parallelism"]["dp_shard"] = 2; }, "/parallelism/data_parallel", "use \"hsdp\""},
      {[](J& j) { j["parallelism"]["data_parallel"] = "ddp"; }, "/units/0/reshard_after_forward", "must be false"},
      {[](J& j) { j["parallelism"]["data_parallel"] = "zero4"; }, "/parallelism/data_parallel", "fsdp_full_shard"},
      {[](J& j) { j["parallelism"]["vpp"] = 2; }, "/parallelism/vpp", "interleaved_1f1b"},
      {[](J& j) { j["prefetch"]["max_all_gathers_in_flight"] = 0; }, "/prefetch/max_all_gathers_in_flight", "expected an integer in [1, 65536]"},
      {[](J& j) { j["optimizer"]["beta2"] = 1.0; }, "/optimizer/beta2", "[0, 1)"},
      {[](J& j) { j["training"]["dropout"] = 1.0; }, "/training/dropout", "probability in [0, 1)"},
      {[](J& j) { j["training"]["dropout"] = -0.1; }, "/training/dropout", "probability in [0, 1)"},
      {[](J& j) { j["training"]["dropout"] = "0.1"; }, "/training/dropout", "number"},
      {[](J& j) { j["mixed_precision"]["param_dtype"] = "bf8"; }, "/mixed_precision/param_dtype", "bf16"},
      {[](J& j) { j["model"]["tied_embeddings"] = true; }, "/units/0/modules/0", "same unit as \"head\""},
      {[](J& j) { j["parallelism"]["pp_schedule"] = "zb"; }, "/parallelism/pp_schedule", "zero_bubble"},
      {[](J& j) { j["units"][1]["stage"] = 1; }, "/units/1/stage", "pp is 1, so every unit is on stage 0"},
      {[](J& j) { j["units"][1]["stage"] = -1; }, "/units/1/stage", "expected an integer in [0, 268435455]"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << " at " << cases[i].path);
    check_error(error_after(cases[i].edit), "edited.json", cases[i].path, cases[i].what);
  }
}

// The sample plan (2 blocks, 4 CPU ranks) as pp 2 x dp_shard 2 under `schedule`: embedding and block.0
// on stage 0, block.1 and final_norm + head on stage 1; 8 sequences = 4 micro-batches of 1 per rank.
nlohmann::json pipelined_sample(const char* schedule = "1f1b") {
  nlohmann::json j = load_json_file(kSample);
  j["parallelism"]["pp"] = 2;
  j["parallelism"]["dp_shard"] = 2;
  j["parallelism"]["pp_schedule"] = schedule;
  for (int u = 0; u < 4; ++u) j["units"][u]["stage"] = u < 2 ? 0 : 1;
  return j;
}

std::string pipelined_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = pipelined_sample();
  edit(j);
  return error_of([&] { parse_plan(j, "pp.json"); });
}

TEST_CASE("a pipelined plan round-trips with the stage of every unit and the micro-batches written") {
  for (const char* schedule : {"gpipe", "1f1b", "zero_bubble"}) {
    INFO(schedule);
    const Plan p = parse_plan(pipelined_sample(schedule), "pp.json");
    CHECK(p.parallelism.pp == 2);
    CHECK(p.units[1].stage == 0);
    CHECK(p.units[2].stage == 1);
    const nlohmann::json j = plan_to_json(p);
    CHECK(j["training"]["micro_batches"] == 4);
    CHECK(j["units"][3]["stage"] == 1);
    check_round_trip(p);
  }
  // Without pipelining neither key is written (plans of earlier versions read the same).
  const nlohmann::json plain = plan_to_json(load_plan(kSample));
  CHECK_FALSE(plain["training"].contains("micro_batches"));
  CHECK_FALSE(plain["units"][0].contains("stage"));
}

TEST_CASE("pipeline errors name the JSON path") {
  using J = nlohmann::json;
  struct Case { std::function<void(J&)> edit; const char* path; const char* what; };
  const std::vector<Case> cases = {
      {[](J& j) { j["parallelism"]["pp_schedule"] = "none"; }, "/parallelism/pp_schedule", "needs a schedule"},
      {[](J& j) { j["units"][2]["stage"] = 2; }, "/units/2/stage", "[0, pp x vpp = 2)"},
      {[](J& j) { j["units"][2]["stage"] = 0; j["units"][1]["stage"] = 1; }, "/units/2/stage", "never decrease"},
      {[](J& j) { j["units"][0]["stage"] = 1; j["units"][1]["stage"] = 1; }, "/units", "first stage runs the embedding"},
      {[](J& j) { j["units"][3]["stage"] = 0; j["units"][2]["stage"] = 0; }, "/units", "the head and the loss"},
      {[](J& j) { j["parallelism"]["vpp"] = 2; }, "/parallelism/vpp", "needs pp_schedule \"interleaved_1f1b\""},
      {[](J& j) { j["parallelism"]["pp_schedule"] = "interleaved_1f1b"; }, "/parallelism/vpp", "vpp > 1"},
      {[](J& j) { j["training"]["micro_batches"] = 3; }, "/training/micro_batches", "= 4"},
      {[](J& j) { j["training"]["micro_batches"] = "4"; }, "/training/micro_batches", "positive integer"},
      // Issue 15: pp x vpp is bounded by the units before a per-stage vector is sized; stages are range-checked.
      {[](J& j) { j["parallelism"]["pp_schedule"] = "interleaved_1f1b"; j["parallelism"]["vpp"] = 268435456; },
       "/parallelism/vpp", "536870912 virtual stages, but the plan has 4 units"},
      {[](J& j) { j["units"][2]["stage"] = 1099511627776; }, "/units/2/stage", "268435455"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << " at " << cases[i].path);
    check_error(pipelined_error(cases[i].edit), "pp.json", cases[i].path, cases[i].what);
  }
}

TEST_CASE("1F1B takes fewer micro-batches than stages; interleaved 1F1B needs a multiple of pp") {
  nlohmann::json few = pipelined_sample();
  few["training"]["global_batch"] = 2;  // one micro-batch per data-parallel rank, two stages
  CHECK(parse_plan(few, "few.json").grad_accum() == 1);
  nlohmann::json j = pipelined_sample("interleaved_1f1b");
  j["parallelism"]["vpp"] = 2;
  j["parallelism"]["pp"] = 2;
  // 4 virtual stages: embedding+block.0 on 0, block.1 on 1... there are only 2 blocks, so split
  // embedding | block.0 | block.1 | final_norm + head.
  for (int u = 0; u < 4; ++u) j["units"][u]["stage"] = u;
  const Plan p = parse_plan(j, "vpp.json");
  CHECK(p.units[3].stage == 3);
  j["training"]["global_batch"] = 6;  // 3 micro-batches of 1 on 2 data-parallel ranks
  check_error(error_of([&] { parse_plan(j, "vpp.json"); }), "vpp.json", "/training/global_batch",
              "divisible by pp (2) for \"interleaved_1f1b\"");
  j["training"]["global_batch"] = 8;
  j["units"][3]["stage"] = 2;
  check_error(error_of([&] { parse_plan(j, "vpp.json"); }), "vpp.json", "/units", "stage 3 of 4 holds no unit");
}

TEST_CASE("tied embeddings under pipeline parallelism: the embedding stays first, on stage 0") {
  nlohmann::json j = pipelined_sample();
  j["model"]["tied_embeddings"] = true;
  const Plan p = parse_plan(j, "tied.json");
  CHECK(p.units[0].modules == std::vector<std::string>{"embedding"});
  CHECK(p.units[0].stage == 0);
}

TEST_CASE("default_plan under pipeline parallelism: balanced stages, units within stages, no resharding") {
  const ModelSpec m = load_model(kConfigs + "/models/llama3.1-8b.json");
  const ClusterSpec c = load_cluster(kConfigs + "/clusters/dgx-h100.json");
  Parallelism par;
  par.dp_shard = 2;
  par.pp = 4;
  par.pp_schedule = PipelineSchedule::one_f_one_b;
  const Plan p = default_plan(m, c, TrainingSettings{8192, 1, 8, 0}, par, 2, RecomputeMode::none);
  validate_plan(p, "default-pp.json");
  // 32 blocks + embedding + head = 34 effective over 4 stages: 8, 9, 8, 7 blocks (torchtitan's split).
  std::vector<int> blocks(4, 0);
  for (const PlanUnit& u : p.units) {
    CHECK(u.reshard_after_forward == 0);
    for (const auto& mod : u.modules)
      if (mod.rfind("block.", 0) == 0) ++blocks[std::size_t(u.stage)];
  }
  CHECK(blocks == std::vector<int>{8, 9, 8, 7});
  CHECK(p.units.front().modules == std::vector<std::string>{"embedding"});
  CHECK(p.units.back().stage == 3);
  CHECK(p.reduce_grads == ReduceGrads::last_micro_batch);
  // Megatron's accounting (weights 0): 8 blocks per stage.
  const Plan q = default_plan(m, c, TrainingSettings{8192, 1, 8, 0}, par, 8, RecomputeMode::none, {0, 0});
  CHECK(q.units.size() == 6);
  validate_plan(q, "megatron-pp.json");
}

TEST_CASE("context parallelism needs seq divisible by 2 x cp") {
  const ModelSpec m = load_model(kConfigs + "/models/llama3.1-8b.json");
  const ClusterSpec c = load_cluster(kConfigs + "/clusters/dgx-h100.json");
  Parallelism par;
  par.dp_shard = 4;
  par.cp = 2;
  Plan p = default_plan(m, c, TrainingSettings{8192, 1, 4, 0}, par, 1, RecomputeMode::full);
  validate_plan(p, "cp.json");  // 8192 = 2048 x (2 x 2)
  p.training.seq = 8190;
  check_error(error_of([&] { validate_plan(p, "cp.json"); }), "cp.json", "/training/seq", "2 x cp = 4");
}

}  // namespace
}  // namespace fsdpx
