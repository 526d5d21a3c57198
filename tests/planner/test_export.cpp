// tests/planner/test_export.cpp — the torchtitan export: golden TOML files for an exact plan (Llama 3.1
// 8B, FSDP 8 on one DGX H100) and an inexact one (HSDP, per-block recompute mix, bf16 reduce); each
// written key read back and compared with the plan; the recompute mapping against torchtitan's
// every-n-th-block rule; reshard policies; data-parallel modes; pipelines (stages as torchtitan's
// generate_llm_fqn_per_model_part splits them); determinism. Regenerate the golden
// files with FSDPX_UPDATE_GOLDEN=1 after checking the diff.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "planner/export_torchtitan.h"

namespace fsdpx {
namespace {

const std::string kGolden = std::string(FSDPX_TEST_DATA_DIR) + "/../golden/";
const std::string kVersion = "0.2.2";

Plan llama8b_fsdp8() {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = 1;
  TrainingSettings t;
  t.seq = 8192, t.micro_batch = 2, t.global_batch = 16, t.seed = 7;
  Parallelism par;
  par.dp_shard = 8;
  Plan p = default_plan(load_model("llama3.1-8b"), c, t, par, 1, RecomputeMode::selective_op);
  p.framework = Framework::torchtitan;  // planned for torchtitan: its costs are the ones the config runs
  validate_plan(p, "test");
  return p;
}

Plan llama70b_hsdp_mixed() {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = 4;
  TrainingSettings t;
  t.seq = 4096, t.micro_batch = 1, t.global_batch = 64;
  Parallelism par;
  par.dp_replicate = 2, par.dp_shard = 8, par.tp = 2, par.sequence_parallel = true;
  par.data_parallel = DataParallel::hsdp;
  Plan p = default_plan(load_model("llama3.1-70b"), c, t, par, 2, RecomputeMode::none);
  for (std::size_t i = 0; i < 30; ++i) p.recompute[i] = RecomputeMode::full;  // first 30 of 80 blocks
  p.precision.reduce = DType::bf16;
  p.framework = Framework::torchtitan;
  validate_plan(p, "test");
  return p;
}

// key -> value text of "key = value" lines (section-qualified: "training.seq_len").
std::map<std::string, std::string> toml_keys(const std::string& toml) {
  std::map<std::string, std::string> keys;
  std::istringstream in(toml);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const auto eq = line.find(" = ");
    REQUIRE_MESSAGE(eq != std::string::npos, "not a key line: ", line);
    keys[section + "." + line.substr(0, eq)] = line.substr(eq + 3);
  }
  return keys;
}

void check_golden(const std::string& text, const std::string& name) {
  const std::string path = kGolden + name;
  if (std::getenv("FSDPX_UPDATE_GOLDEN")) std::ofstream(path, std::ios::binary) << text;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file ", path);
  std::stringstream golden;
  golden << in.rdbuf();
  CHECK_MESSAGE(golden.str() == text, "export differs from ", path, ":\n", text);
}

int torchtitan_checkpointed_blocks(int layers, int every_n) {
  int n = 0;
  for (int i = 0; i < layers; ++i) n += (i + 1) % every_n == 0;  // _apply_layer_sac: count incremented first
  return n;
}

}  // namespace

TEST_CASE("golden: Llama 3.1 8B FSDP 8 maps exactly") {
  const Plan p = llama8b_fsdp8();
  const std::string toml = torchtitan_toml(p, "fsdpx plan llama3.1-8b-fsdp8", kVersion);
  check_golden(toml, "torchtitan_llama3.1-8b-fsdp8.toml");
  CHECK(torchtitan_settings(p, kVersion).notes.empty());
  const auto k = toml_keys(toml);
  CHECK(k.at("model.name") == "\"llama3\"");
  CHECK(k.at("model.flavor") == "\"8B\"");
  CHECK(k.at("training.local_batch_size") == std::to_string(p.training.micro_batch));
  CHECK(k.at("training.global_batch_size") == std::to_string(p.training.global_batch));
  CHECK(k.at("training.seq_len") == "8192");
  CHECK(k.at("training.mixed_precision_param") == "\"bfloat16\"");
  CHECK(k.at("training.mixed_precision_reduce") == "\"float32\"");
  CHECK(std::stod(k.at("training.max_norm")) == p.optimizer.grad_clip_norm);
  CHECK(std::stod(k.at("optimizer.lr")) == p.optimizer.lr);
  CHECK(std::stod(k.at("optimizer.eps")) == p.optimizer.eps);
  CHECK(std::stod(k.at("lr_scheduler.min_lr_factor")) == p.optimizer.min_lr_ratio);
  CHECK(k.at("parallelism.data_parallel_shard_degree") == "8");
  CHECK(k.at("parallelism.data_parallel_replicate_degree") == "1");
  CHECK(k.at("parallelism.fsdp_reshard_after_forward") == "\"default\"");
  CHECK(k.at("parallelism.enable_async_tensor_parallel") == "false");
  CHECK(k.at("activation_checkpoint.mode") == "\"selective\"");
  CHECK(k.at("activation_checkpoint.selective_ac_option") == "\"op\"");
  CHECK(torchtitan_toml(p, "fsdpx plan llama3.1-8b-fsdp8", kVersion) == toml);  // deterministic
}

TEST_CASE("golden: Llama 3.1 70B HSDP with a recompute mix is approximated and says so") {
  const Plan p = llama70b_hsdp_mixed();
  const std::string toml = torchtitan_toml(p, "fsdpx plan llama3.1-70b-hsdp", kVersion);
  check_golden(toml, "torchtitan_llama3.1-70b-hsdp-mixed.toml");
  const auto k = toml_keys(toml);
  CHECK(k.at("model.flavor") == "\"70B\"");
  CHECK(k.at("parallelism.data_parallel_replicate_degree") == "2");
  CHECK(k.at("parallelism.data_parallel_shard_degree") == "8");
  CHECK(k.at("parallelism.tensor_parallel_degree") == "2");
  // 30 of 80 full: n = floor(80 / 30) = 2 checkpoints 40 >= 30 blocks (never more memory than planned).
  CHECK(k.at("activation_checkpoint.selective_ac_option") == "\"2\"");
  CHECK(torchtitan_checkpointed_blocks(80, 2) >= 30);
  const TorchtitanSettings s = torchtitan_settings(p, kVersion);
  std::map<std::string, int> notes;
  for (const auto& n : s.notes) ++notes[n.key];
  CHECK(notes["fsdp_units"] == 1);  // two blocks per unit
  CHECK(notes["activation_checkpoint.selective_ac_option"] == 1);
  CHECK(notes["training.mixed_precision_reduce"] == 1);
  CHECK(toml.find("# fsdpx: the plan reduces gradients in bf16") != std::string::npos);
}

TEST_CASE("recompute: every-n-th-block patterns map exactly to torchtitan's layer option") {
  Plan p = llama8b_fsdp8();
  for (int n : {1, 2, 3, 5}) {
    for (std::size_t i = 0; i < p.recompute.size(); ++i)
      p.recompute[i] = (i + 1) % std::size_t(n) == 0 ? RecomputeMode::full : RecomputeMode::none;
    const TorchtitanSettings s = torchtitan_settings(p, kVersion);
    CAPTURE(n);
    if (n == 1) {
      CHECK(s.ac_mode == "full");
    } else {
      CHECK(s.ac_mode == "selective");
      CHECK(s.ac_selective_option == std::to_string(n));
    }
    CHECK(s.notes.empty());
  }
  std::fill(p.recompute.begin(), p.recompute.end(), RecomputeMode::none);
  CHECK(torchtitan_settings(p, kVersion).ac_mode == "none");
  p.recompute[0] = RecomputeMode::selective;  // selective + none mix: closest with no more memory
  const TorchtitanSettings s = torchtitan_settings(p, kVersion);
  CHECK(s.ac_mode == "selective");
  CHECK(s.ac_selective_option == "op");
  CHECK(s.notes.size() == 1);
  // Korthikanti's selective on every block has no exact torchtitan counterpart: "op", with a note;
  // torchtitan's op-level SAC (selective_op) maps exactly, without one.
  std::fill(p.recompute.begin(), p.recompute.end(), RecomputeMode::selective);
  const TorchtitanSettings k = torchtitan_settings(p, kVersion);
  CHECK(k.ac_selective_option == "op");
  CHECK(k.notes.size() == 1);
  std::fill(p.recompute.begin(), p.recompute.end(), RecomputeMode::selective_op);
  const TorchtitanSettings o = torchtitan_settings(p, kVersion);
  CHECK(o.ac_mode == "selective");
  CHECK(o.ac_selective_option == "op");
  CHECK(o.notes.empty());
}

TEST_CASE("reshard policy: always, never, default, and a per-unit mix") {
  Plan p = llama8b_fsdp8();
  CHECK(torchtitan_settings(p, kVersion).reshard_policy == "default");
  for (auto& u : p.units) u.reshard_after_forward = 1;
  CHECK(torchtitan_settings(p, kVersion).reshard_policy == "always");
  for (auto& u : p.units) u.reshard_after_forward = 0;
  CHECK(torchtitan_settings(p, kVersion).reshard_policy == "never");
  CHECK(torchtitan_settings(p, kVersion).notes.empty());
  for (std::size_t i = 0; i < p.units.size(); ++i) p.units[i].reshard_after_forward = i % 2 == 0 ? 1 : 0;
  const TorchtitanSettings s = torchtitan_settings(p, kVersion);
  CHECK(s.notes.size() == 1);
  CHECK(s.notes[0].key == "parallelism.fsdp_reshard_after_forward");
}

TEST_CASE("data-parallel modes: DDP replicates, ZeRO-1 becomes FSDP without reshard and says so") {
  Plan p = llama8b_fsdp8();
  for (auto& u : p.units) u.reshard_after_forward = 0;
  p.parallelism.data_parallel = DataParallel::ddp;
  TorchtitanSettings s = torchtitan_settings(p, kVersion);
  CHECK(s.dp_replicate == 8);
  CHECK(s.dp_shard == 1);
  CHECK(s.notes.empty());
  p.parallelism.data_parallel = DataParallel::zero1;
  s = torchtitan_settings(p, kVersion);
  CHECK(s.dp_replicate == 1);
  CHECK(s.dp_shard == 8);
  CHECK(s.reshard_policy == "never");
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0].key == "parallelism.data_parallel_shard_degree");
}

TEST_CASE("an unknown model gets no flavor, a commented name and a note with its dimensions") {
  Plan p = llama8b_fsdp8();
  p.model.name = "my-model";
  p.model.layers = 30;
  p.recompute.resize(30);
  const std::string toml = torchtitan_toml(p, "x", kVersion);
  const auto k = toml_keys(toml);
  CHECK(k.count("model.name") == 0);
  CHECK(k.count("model.flavor") == 0);
  CHECK(toml.find("n_layers=30") != std::string::npos);
}

TEST_CASE("a Llama 3 flavor with another RoPE base keeps the flavor and notes the base") {
  Plan p = llama8b_fsdp8();
  CHECK(torchtitan_toml(p, "x", kVersion).find("RoPE base") == std::string::npos);  // 500000, as torchtitan
  p.model.rope_theta = 10000.0;
  const std::string toml = torchtitan_toml(p, "x", kVersion);
  CHECK(toml_keys(toml).at("model.flavor") == "\"8B\"");
  CHECK(toml.find("RoPE base is 10000; torchtitan's llama3 flavors use 500000") != std::string::npos);
}

TEST_CASE("[compile]: a compiled plan enables torch.compile of model and loss; an eager plan writes enable = false") {
  Plan p = llama8b_fsdp8();
  auto k = toml_keys(torchtitan_toml(p, "eager", kVersion));
  CHECK(k.at("compile.enable") == "false");
  CHECK(k.count("compile.components") == 0);
  p.compiled = true;
  const TorchtitanSettings s = torchtitan_settings(p, kVersion);
  CHECK(s.notes.empty());
  k = toml_keys(torchtitan_toml(p, "compiled", kVersion));
  CHECK(k.at("compile.enable") == "true");
  CHECK(k.at("compile.components") == "[\"model\", \"loss\"]");
  CHECK(torchtitan_closest_plan(p, s).compiled);
}

TEST_CASE("a plan predicted with another stack's costs says so; the closest plan runs torchtitan's") {
  Plan p = llama8b_fsdp8();
  p.framework = Framework::fsdpx;
  const TorchtitanSettings s = torchtitan_settings(p, kVersion);
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0].key == "compile");
  CHECK(s.notes[0].text.find("fsdpx's kernels") != std::string::npos);
  const std::string toml = torchtitan_toml(p, "fsdpx target", kVersion);
  CHECK(toml.find("maps exactly") == std::string::npos);
  const Plan closest = torchtitan_closest_plan(p, s);
  CHECK(closest.framework == Framework::torchtitan);
  CHECK_FALSE(closest.compiled);
}

TEST_CASE("disabled clipping never writes max_norm 0 (torch would zero the gradients)") {
  Plan p = llama8b_fsdp8();
  p.optimizer.grad_clip_norm = 0;
  const auto k = toml_keys(torchtitan_toml(p, "x", kVersion));
  CHECK(std::stod(k.at("training.max_norm")) >= 1e29);
}

}  // namespace fsdpx

namespace fsdpx {

TEST_CASE("the closest expressible plan: the plan itself when exact, otherwise a plan with no notes") {
  Plan exact = llama8b_fsdp8();
  const Plan unstated = torchtitan_closest_plan(exact, torchtitan_settings(exact, kVersion));
  CHECK(unstated.framework_version == kVersion);  // the plan torchtitan runs is that release's
  exact.framework_version = kVersion;
  const Plan same = torchtitan_closest_plan(exact, torchtitan_settings(exact, kVersion));
  CHECK(plan_to_json(same).dump() == plan_to_json(exact).dump());
  const Plan mixed = llama70b_hsdp_mixed();
  const TorchtitanSettings s = torchtitan_settings(mixed, kVersion);
  REQUIRE_FALSE(s.notes.empty());
  const Plan closest = torchtitan_closest_plan(mixed, s);
  CHECK_NOTHROW(validate_plan(closest, "closest"));
  CHECK(torchtitan_settings(closest, kVersion).notes.empty());
  CHECK(closest.precision.reduce == DType::fp32);
  CHECK(closest.units.size() == std::size_t(closest.model.layers) + 2);  // embedding, each block, norm + head
  int full = 0;
  for (RecomputeMode m : closest.recompute) full += m == RecomputeMode::full;
  CHECK(full == 40);  // every 2nd of 80 blocks: at least the plan's 30
  // The same config written again from the closest plan is the same job, without notes.
  const auto a = toml_keys(torchtitan_toml(mixed, "x", kVersion));
  const auto b = toml_keys(torchtitan_toml(closest, "x", kVersion));
  CHECK(a == b);
}

TEST_CASE("pipelines: degree, schedule and the plan's stages as module_fqns_per_model_part") {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = 4;
  TrainingSettings t;
  t.seq = 4096, t.micro_batch = 1, t.global_batch = 64;
  Parallelism par;
  par.pp = 4, par.pp_schedule = PipelineSchedule::one_f_one_b, par.dp_shard = 8;
  Plan p = default_plan(load_model("llama3.1-70b"), c, t, par, 1, RecomputeMode::none);
  p.framework = Framework::torchtitan;
  p.framework_version = kVersion;
  validate_plan(p, "test");
  const TorchtitanSettings s = torchtitan_settings(p, kVersion);
  CHECK(s.notes.empty());
  const auto k = toml_keys(torchtitan_toml(p, "x", kVersion));
  CHECK(k.at("parallelism.pipeline_parallel_degree") == "4");
  CHECK(k.at("parallelism.pipeline_parallel_schedule") == "\"1F1B\"");
  CHECK(k.at("parallelism.pipeline_parallel_microbatch_size") == "1");
  // torchtitan's generate_llm_fqn_per_model_part(4, 80): 82 effective layers (embedding and norm + output
  // count one each) as 21, 21, 20, 20, so 20, 21, 20 and 19 blocks.
  std::string parts = "[[\"tok_embeddings\"";
  const int blocks[] = {20, 21, 20, 19};
  for (int stage = 0, layer = 0; stage < 4; ++stage) {
    if (stage > 0) parts += ", [";
    for (int i = 0; i < blocks[stage]; ++i, ++layer)
      parts += fmt::format("{}\"layers.{}\"", stage == 0 || i ? ", " : "", layer);
    parts += stage == 3 ? ", \"norm\", \"output\"]" : "]";
  }
  CHECK(k.at("parallelism.module_fqns_per_model_part") == parts + "]");
  CHECK(plan_to_json(torchtitan_closest_plan(p, s)).dump() == plan_to_json(p).dump());
  // Interleaving keeps the schedule's name; ZB-H1 has no single-stage torchtitan schedule and says so.
  Plan zb = p;
  zb.parallelism.pp_schedule = PipelineSchedule::zero_bubble;
  const TorchtitanSettings z = torchtitan_settings(zb, kVersion);
  CHECK(z.pp_schedule == "1F1B");
  REQUIRE(z.notes.size() == 1);
  CHECK(z.notes[0].key == "parallelism.pipeline_parallel_schedule");
  CHECK(torchtitan_closest_plan(zb, z).parallelism.pp_schedule == PipelineSchedule::one_f_one_b);
}

}  // namespace fsdpx
