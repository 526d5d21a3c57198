// tests/simulator/test_validation.cpp — the published-runs case reader, the plan built from a case,
// pipeline-parallel cases with their framework's stage split, and the error statistics, on
// tests/data/validation/tiny_cases.json (three hand-made cases derived from the shipped format) and on
// inline JSON for strictness.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "core/pipeline.h"
#include "cost_models/communication.h"
#include "cost_models/compute.h"
#include "cost_models/memory.h"
#include "program/lower.h"
#include "simulator/op_timing.h"
#include "simulator/simulate.h"
#include "simulator/validate.h"

namespace fsdpx {

namespace {

const std::string kTiny = std::string(FSDPX_TEST_DATA_DIR) + "/validation/tiny_cases.json";

nlohmann::json tiny_json() { return load_json_file(kTiny); }

// The error of the one malformed case in `j` (the others must read), or "" when every case reads.
std::string config_error_of(const nlohmann::json& j) {
  const ValidationCaseFile f = parse_validation_cases(j, "cases.json");
  std::string error;
  int malformed = 0;
  for (const ValidationCase& c : f.cases)
    if (c.malformed) {
      error = *c.malformed;
      ++malformed;
    }
  CHECK(malformed <= 1);
  CHECK(f.cases.size() == j.at("cases").size());
  return error;
}

}  // namespace

TEST_CASE("validation cases: strict reading with file and JSON path") {
  const ValidationCaseFile f = load_validation_cases(kTiny);
  REQUIRE(f.cases.size() == 3);
  CHECK(f.cases[0].model.head_dim == 2048 / 16);
  CHECK(f.cases[0].model.max_seq == f.cases[0].seq_len);
  CHECK_FALSE(f.cases[2].inter_node_bw_gbit_per_gpu.has_value());
  CHECK(f.cases[2].gpu_memory_gib.value() == doctest::Approx(96));

  nlohmann::json bad = tiny_json();
  bad["cases"][1]["parallelism"]["tpp"] = 2;
  CHECK(config_error_of(bad).find("cases.json: /cases/1/parallelism") != std::string::npos);
  bad = tiny_json();
  bad["cases"][0]["recompute"] = "sometimes";
  CHECK(config_error_of(bad).find("/cases/0/recompute") != std::string::npos);
  bad = tiny_json();
  bad["cases"][0]["recompute"] = "selective";
  bad["cases"][0]["recompute_fraction"] = 0.5;  // a share of blocks only for whole-block ("full") recompute
  CHECK(config_error_of(bad).find("/cases/0/recompute_fraction") != std::string::npos);
  bad["cases"][0]["recompute"] = "full";
  CHECK(config_error_of(bad).empty());
  bad["cases"][0]["recompute_fraction"] = 1.5;
  CHECK(config_error_of(bad).find("/cases/0/recompute_fraction") != std::string::npos);
  bad = tiny_json();
  bad["cases"][0]["gpus"] = 32;  // degrees no longer multiply to the GPU count
  CHECK(config_error_of(bad).find("/cases/0/parallelism") != std::string::npos);
  bad = tiny_json();
  bad["cases"][2]["id"] = bad["cases"][0]["id"];
  CHECK(config_error_of(bad).find("duplicate case id") != std::string::npos);
  // The file's own structure stays strict.
  bad = tiny_json();
  bad["format"] = "fsdpx-published-runs/2";
  CHECK_THROWS_AS(parse_validation_cases(bad, "cases.json"), ConfigError);
}

TEST_CASE("validation cases: an unsure inter-node bandwidth is read from `uncertain`, strictly") {
  nlohmann::json j = tiny_json();
  auto& unsure = j["cases"][0]["uncertain"];
  unsure.push_back("inter-node bandwidth between 25 and 400 Gb/s per GPU: the source prints one figure per cluster");
  ValidationCaseFile f = parse_validation_cases(j, "cases.json");
  REQUIRE(f.cases[0].inter_node_bw_range.has_value());
  CHECK(f.cases[0].inter_node_bw_range->low_gbit_per_gpu == 25);
  CHECK(f.cases[0].inter_node_bw_range->high_gbit_per_gpu == 400);
  CHECK_FALSE(f.cases[1].inter_node_bw_range.has_value());
  const std::string at = fmt::format("/cases/0/uncertain/{}", unsure.size() - 1);
  for (const char* wrong : {"inter-node bandwidth between 250 and 400 Gb/s per GPU",  // misses the stated 200
                            "inter-node bandwidth between 400 and 25 Gb/s per GPU",   // LO above HI
                            "inter-node bandwidth between 25 and 400 Gb/s per node",  // not per GPU
                            "inter-node bandwidth between 0 and 400 Gb/s per GPU",    // outside the range
                            "inter-node bandwidth between some and more"}) {
    unsure.back() = wrong;
    CHECK(config_error_of(j).find("cases.json: " + at) != std::string::npos);
  }
  unsure.back() = "inter-node bandwidth between 25 and 400 Gb/s per GPU";
  unsure.push_back("inter-node bandwidth between 25 and 300 Gb/s per GPU");
  CHECK(config_error_of(j).find("a second inter-node bandwidth range") != std::string::npos);
  j = tiny_json();
  j["cases"][2]["uncertain"].push_back("inter-node bandwidth between 25 and 400 Gb/s per GPU");  // states none
  CHECK(config_error_of(j).find("/cases/2/uncertain/") != std::string::npos);
}

TEST_CASE("validation: a case with an unsure bandwidth is simulated at both ends, its error becomes a range") {
  nlohmann::json j = tiny_json();
  j["cases"][0]["uncertain"].push_back("inter-node bandwidth between 25 and 400 Gb/s per GPU: test");
  const ValidationCaseFile f = parse_validation_cases(j, "cases.json");
  const CaseResult r = validate_case(f.cases[0], f.file);
  REQUIRE(r.tokens_error_pct.has_value());
  REQUIRE(r.tokens_error_range_pct.has_value());
  CHECK(r.tokens_error_range_pct->first <= *r.tokens_error_pct);
  CHECK(r.tokens_error_range_pct->second >= *r.tokens_error_pct);
  // 16 GPUs over two nodes: an eighth of the stated bandwidth slows the step.
  CHECK(r.tokens_error_range_pct->first < *r.tokens_error_pct - 0.1);
  CHECK_FALSE(validate_case(f.cases[1], f.file).tokens_error_range_pct.has_value());
}

TEST_CASE("validation: a malformed case in a file of good ones is reported on its row, the others scored") {
  nlohmann::json j = tiny_json();
  j["cases"][1]["model"]["layers"] = "many";
  j["cases"].push_back(42);  // not even an object
  const ValidationReport r = run_validation(parse_validation_cases(j, "cases.json"));
  REQUIRE(r.cases.size() == 4);
  CHECK(r.cases[0].predicted.has_value());
  CHECK(r.cases[2].predicted.has_value());
  REQUIRE(r.cases[1].skipped.has_value());
  CHECK(r.cases[1].skipped->find("malformed case: cases.json: /cases/1/model/layers") != std::string::npos);
  CHECK(r.cases[1].id == j["cases"][1]["id"].get<std::string>());
  REQUIRE(r.cases[3].skipped.has_value());
  CHECK(r.cases[3].id == "cases[3]");
  CHECK(r.cases[3].skipped->find("/cases/3: expected an object") != std::string::npos);
  CHECK(r.summary.front().cases == 4);
  CHECK(r.summary.front().skipped == 2);
  CHECK(validation_text(r).find("cases[3]") != std::string::npos);
}

TEST_CASE("validation: partial nodes simulate (2 GPUs of an 8-GPU node, 128 GPUs on 72-GPU NVL72 domains)") {
  nlohmann::json j = tiny_json();
  nlohmann::json two = j["cases"][2];
  two["id"] = "two-of-eight";
  two["gpus"] = 2;
  two["parallelism"]["dp_shard"] = 2;
  two["global_batch"] = two["micro_batch"].get<int>() * 2;
  nlohmann::json nvl = j["cases"][2];
  nvl["id"] = "128-on-nvl72";
  nvl["gpu"] = {{"name", "gb200"}};
  nvl["gpus"] = 128;
  nvl["gpus_per_node"] = 72;
  nvl["parallelism"]["dp_shard"] = 128;
  nvl["global_batch"] = nvl["micro_batch"].get<int>() * 128;
  j["cases"] = nlohmann::json::array({two, nvl});
  const ValidationCaseFile f = parse_validation_cases(j, "cases.json");
  for (const ValidationCase& c : f.cases) {
    CAPTURE(c.id);
    CHECK_FALSE(c.malformed.has_value());
    const CaseResult r = validate_case(c, f.file);
    INFO(r.skipped.value_or(""));
    CHECK_FALSE(r.skipped.has_value());
    REQUIRE(r.predicted.has_value());
    CHECK(r.predicted->tokens_per_s_per_gpu > 0);
  }
  const Plan nvl_plan = build_case_plan(f.cases[1], f.file).plan;
  CHECK(nvl_plan.cluster.world_size() == 128);
  CHECK(nvl_plan.cluster.nodes == 2);
  CHECK(build_case_plan(f.cases[0], f.file).plan.cluster.world_size() == 2);
}

TEST_CASE("validation plan: a MosaicML case becomes per-block FSDP units with a tied root unit") {
  const ValidationCaseFile f = load_validation_cases(kTiny);
  const ValidationCase& c = f.cases[0];
  const CasePlan cp = build_case_plan(c, f.file);
  const Plan& p = cp.plan;
  CHECK(p.cluster.name == "dgx-a100-40gb");
  CHECK(p.cluster.nodes == 2);
  CHECK(p.parallelism.dp_shard == 16);
  // 512 sequences / (8 per micro-batch x 16 ranks) = 4 micro-batches.
  CHECK(p.grad_accum() == 4);
  // Tied: one unit per block plus the root unit holding embedding, final norm and head.
  REQUIRE(p.units.size() == std::size_t(c.model.layers + 1));
  CHECK(p.units[0].modules == std::vector<std::string>{"block.0"});
  CHECK(p.units[0].reshard_after_forward == 1);
  CHECK(p.units.back().modules == std::vector<std::string>{"embedding", "final_norm", "head"});
  CHECK(p.units.back().reshard_after_forward == 0);
  CHECK(p.recompute.size() == std::size_t(c.model.layers));
  CHECK(p.precision.param == DType::bf16);
  CHECK(p.precision.reduce == DType::fp32);  // Composer's DEFAULT mixed precision (benchmark tables)
  CHECK(p.attention_kernel == AttentionKernel::flash1);  // MPT's attn_impl: triton
  // 200 Gb/s per GPU = 25 GB/s line rate per NIC, kept at the shipped 24/25 achievable ratio.
  CHECK(p.cluster.inter.nic_bw_bytes_per_s == doctest::Approx(24e9).epsilon(1e-9));
  CHECK(cp.notes.empty());
  CHECK(p.framework == Framework::llm_foundry);
}

TEST_CASE("validation plan: untied torchtitan case, unstated bandwidth and GPU overrides") {
  const ValidationCaseFile f = load_validation_cases(kTiny);
  const CasePlan cp = build_case_plan(f.cases[2], f.file);
  const Plan& p = cp.plan;
  CHECK(p.cluster.name == "dgx-h100");
  // torchtitan's apply_fsdp: one unit per block, the last not resharded after forward, then the root
  // unit owning embedding, final norm and output, resharded after forward.
  const std::size_t layers = std::size_t(f.cases[2].model.layers);
  REQUIRE(p.units.size() == layers + 1);
  CHECK(p.units[0].modules == std::vector<std::string>{"block.0"});
  CHECK(p.units[layers - 1].reshard_after_forward == 0);
  CHECK(p.units.back().modules == std::vector<std::string>{"embedding", "final_norm", "head"});
  CHECK(p.units.back().reshard_after_forward == 1);
  CHECK(p.framework == Framework::torchtitan);
  CHECK_FALSE(p.compiled);
  // The 500 W limit the case states becomes the GPU's power limit (H100 SXM rated at 700 W).
  CHECK(p.cluster.gpu.power_limit_w == doctest::Approx(500));
  CHECK(p.cluster.gpu.clock_factor() == doctest::Approx(std::cbrt(500.0 / 700.0)));
  CHECK(p.precision.reduce == DType::fp32);
  CHECK(p.cluster.gpu.hbm_bytes == doctest::Approx(96.0 * 1024 * 1024 * 1024));
  CHECK(p.cluster.gpu.hbm_bw_bytes_per_s == doctest::Approx(2.4e12));
  CHECK(p.cluster.inter.nic_bw_bytes_per_s == doctest::Approx(48e9));  // shipped default kept
  bool said_default = false;
  for (const auto& n : cp.notes) said_default |= n.find("inter-node bandwidth not stated") != std::string::npos;
  CHECK(said_default);
}

TEST_CASE("validation: framework recompute semantics, memory metric and attention era") {
  ValidationCaseFile f = load_validation_cases(kTiny);
  // torchtitan's "selective" is op-level SAC (llama3 train configs: selective_ac_option = 'op');
  // Megatron's stays Korthikanti's.
  const CasePlan titan = build_case_plan(f.cases[2], f.file);
  CHECK(titan.plan.recompute.front() == RecomputeMode::selective_op);
  CHECK(titan.memory_metric == MemoryMetric::allocator_reserved);
  CHECK(framework_recompute("megatron", RecomputeMode::selective) == RecomputeMode::selective);
  CHECK(framework_recompute("nemo", RecomputeMode::selective) == RecomputeMode::selective);
  CHECK(framework_recompute("torchtitan", RecomputeMode::full) == RecomputeMode::full);
  CHECK(build_case_plan(f.cases[0], f.file).memory_metric == MemoryMetric::device_total);
  // The first standalone year of the citation; commit hashes and arXiv ids are not years.
  CHECK(source_year("Narayanan et al. 2021 (arXiv 2104.04473) Table 1 @2e90a342f5") == 2021);
  CHECK(source_year("pytorch/torchtitan docs/performance.md @eaea6f6a (Dec-2024)") == 2024);
  CHECK_FALSE(source_year("NVIDIA/Megatron-LM README (Megatron-Core r0.8.0, @f2e5db402c)").has_value());
  ValidationCase c = f.cases[1];
  // Transformer Engine's cuDNN attention needs the GPU file's cuDNN curves (Hopper's, when shipped).
  const GpuSpec a100 = load_gpu("a100-sxm-80gb"), b200 = load_gpu("b200-180gb");
  GpuSpec h100 = load_gpu("h100-sxm-80gb");
  h100.cudnn_attention_efficiency.points = {{512, 0.3184}, {16384, 0.5448}};
  h100.cudnn_attention_backward_efficiency.points = {{512, 0.2218}, {16384, 0.5215}};
  c.source = "Narayanan et al. 2021 (arXiv 2104.04473) Table 1";
  CHECK(case_attention_kernel(c, a100) == AttentionKernel::unfused);
  CHECK(case_attention_kernel(c, h100) == AttentionKernel::unfused);
  CHECK(case_dropout(c) == 0.1);  // Megatron-LM 2021's GPT default
  c.source = "NVIDIA/Megatron-LM README (Megatron-Core r0.8.0, @f2e5db402c)";
  // Transformer Engine prefers cuDNN's fused attention on Hopper, keeps flash-attn on the A100.
  CHECK(case_attention_kernel(c, a100) == AttentionKernel::flash2);
  CHECK(case_attention_kernel(c, h100) == AttentionKernel::cudnn);
  CHECK(case_dropout(c) == 0);
  // fms-fsdp's selective_checkpointing spreads full checkpointing over a share of the blocks
  // (fms_fsdp/policies/ac_handler.py docstring: p = 1/2 -> [ac, no-ac, ...], 1/3 -> [no-ac, ac, no-ac, ...]).
  const auto spread = [](int blocks, double p) {
    std::vector<RecomputeMode> r(std::size_t(blocks), RecomputeMode::none);
    spread_recompute(r, p);
    std::string s;
    for (RecomputeMode m : r) s += m == RecomputeMode::full ? 'a' : '-';
    return s;
  };
  CHECK(spread(6, 0.5) == "a-a-a-");
  CHECK(spread(6, 1.0 / 3) == "-a--a-");
  CHECK(spread(6, 2.0 / 3) == "a-aa-a");
  CHECK(spread(4, 1) == "aaaa");
  // fms-fsdp's FSDP1 runs with bfSixteen (reduce_dtype bf16); torchtitan and unknown stacks reduce in fp32.
  CHECK(framework_reduce_dtype("fms-fsdp") == DType::bf16);
  CHECK(framework_reduce_dtype("torchtitan") == DType::fp32);
  CHECK(framework_reduce_dtype("some-stack") == DType::fp32);
  // fms-fsdp is its own stack (its RoPE, cost_models/stack_costs.cpp); an unlisted one is costed as
  // torchtitan's, and the notes say so.
  {
    ValidationCase named;
    named.framework = "fms-fsdp";
    std::vector<std::string> notes;
    CHECK(case_framework(named, notes) == Framework::fms_fsdp);
    CHECK(notes.empty());
    named.framework = "some-stack";
    CHECK(case_framework(named, notes) == Framework::torchtitan);
    CHECK(notes.size() == 1);
  }
  // NeMo's GPT ran Megatron's attention until flash attention entered it (NVIDIA/NeMo PR #6666, 2023-06).
  c.framework = "nemo";
  c.source = "NVIDIA/NeMo-Framework-Launcher README.md @3579cdb3 (2022-09)";
  CHECK(case_attention_kernel(c, h100) == AttentionKernel::unfused);
  CHECK(case_dropout(c) == 0.1);
  c.source = "NVIDIA/NeMo docs performance summary (24.07)";
  CHECK(case_attention_kernel(c, a100) == AttentionKernel::flash2);
  CHECK(case_attention_kernel(c, h100) == AttentionKernel::cudnn);
  c.framework = "megatron-bridge";
  CHECK(case_attention_kernel(c, h100) == AttentionKernel::cudnn);
  CHECK(case_attention_kernel(c, b200) == (b200.cudnn_attention_efficiency.points.empty() ? AttentionKernel::flash2
                                                                                         : AttentionKernel::cudnn));
  // The PyTorch stacks run SDPA's FlashAttention-2 on Hopper too.
  c.framework = "torchtitan";
  c.source = "pytorch/torchtitan 2021";
  CHECK(case_attention_kernel(c, h100) == AttentionKernel::flash2);
}

TEST_CASE("validation: shard_grad_op keeps every unit unsharded after forward") {
  ValidationCaseFile f = load_validation_cases(kTiny);
  f.cases[0].parallelism.data_parallel = DataParallel::fsdp_shard_grad_op;
  const Plan p = build_case_plan(f.cases[0], f.file).plan;
  for (const PlanUnit& u : p.units) CHECK(u.reshard_after_forward == 0);
}

TEST_CASE("validation: pipeline-parallel cases are simulated with their framework's stage split") {
  const ValidationCaseFile f = load_validation_cases(kTiny);
  CHECK_FALSE(validation_skip_reason(f.cases[1]).has_value());
  // Megatron-LM splits the 48 blocks evenly over pp 2 (24 each); embedding first, head last.
  const Plan p = build_case_plan(f.cases[1], f.file).plan;
  std::vector<int> blocks(2, 0);
  for (const PlanUnit& u : p.units)
    for (const std::string& m : u.modules) blocks[std::size_t(u.stage)] += m.rfind("block.", 0) == 0;
  CHECK(blocks == std::vector<int>{24, 24});
  CHECK(p.units.front().stage == 0);
  CHECK(p.units.back().stage == 1);
  // torchtitan counts the embedding and the head as one block each (26 effective per stage).
  ValidationCase t = f.cases[1];
  t.framework = "torchtitan";
  blocks.assign(2, 0);
  for (const PlanUnit& u : build_case_plan(t, f.file).plan.units)
    for (const std::string& m : u.modules) blocks[std::size_t(u.stage)] += m.rfind("block.", 0) == 0;
  CHECK(blocks == std::vector<int>{24, 24});
  t.model.layers = 49;  // 51 effective: 26 then 25, minus one each
  t.model.max_seq = t.seq_len;
  blocks.assign(2, 0);
  for (const PlanUnit& u : build_case_plan(t, f.file).plan.units)
    for (const std::string& m : u.modules) blocks[std::size_t(u.stage)] += m.rfind("block.", 0) == 0;
  CHECK(blocks == std::vector<int>{25, 24});
  // A Megatron stack whose stages do not divide the blocks is simulated, not refused: 49 blocks + the
  // loss counted as one = 50 over 2 stages (25, 24), and the note says so.
  ValidationCaseFile odd = f;
  odd.cases[1].model.layers = 49;
  odd.cases[1].model.max_seq = odd.cases[1].seq_len;
  const ValidationReport r = run_validation(odd);
  CHECK_FALSE(r.cases[1].skipped.has_value());
  blocks.assign(2, 0);
  const CasePlan odd_plan = build_case_plan(odd.cases[1], f.file);
  for (const PlanUnit& u : odd_plan.plan.units)
    for (const std::string& m : u.modules) blocks[std::size_t(u.stage)] += m.rfind("block.", 0) == 0;
  CHECK(blocks == std::vector<int>{25, 24});
  CHECK(std::count(odd_plan.notes.begin(), odd_plan.notes.end(), "loss counted as a block in the pipeline split") == 1);
  const ValidationReport full = run_validation(f);
  REQUIRE(full.cases.size() == 3);
  REQUIRE(full.cases[1].predicted.has_value());
  CHECK(full.cases[1].predicted->tokens_per_s_per_gpu > 0);
  REQUIRE(full.cases[0].predicted.has_value());
  // The signed error is (predicted - measured) / measured.
  const double pred = full.cases[0].predicted->tokens_per_s_per_gpu;
  CHECK(full.cases[0].tokens_error_pct.value() == doctest::Approx((pred - 20000.0) / 20000.0 * 100));
  CHECK(full.cases[2].memory_error_pct.has_value());
  CHECK_FALSE(full.cases[0].memory_error_pct.has_value());
  // A case that could not be read is listed with its reason, in text and JSON.
  ValidationCaseFile bad = f;
  bad.cases[1].malformed = "cases.json: /cases/1/precision: expected one of bf16, fp8, got \"fp4\"";
  const nlohmann::json j = validation_json(run_validation(bad));
  CHECK(j["cases"][1]["skipped"].is_string());
  CHECK(j["cases"][0]["skipped"].is_null());
}

namespace {

// The first forward op of a block in role 0: its duration, its kernels alone and its kernels plus
// every serial collective run one after the other.
struct BlockTiming {
  double duration_s = 0, kernels_s = 0, serial_s = 0;
};
BlockTiming first_block_forward(const Plan& plan) {
  StepProgram program = lower(plan);
  time_program(program, plan);
  for (const Op& op : program.roles[0].ops) {
    if (op.kind != OpKind::forward || op.work_set < 0) continue;
    const WorkSet& w = program.work_sets[std::size_t(op.work_set)];
    const auto is_qkv = [](const KernelWork& k) { return k.name == "qkv"; };
    if (std::none_of(w.kernels.begin(), w.kernels.end(), is_qkv)) continue;  // not a block
    BlockTiming t;
    t.duration_s = op.duration_s;
    t.kernels_s = kernels_time_s(w.kernels, plan.cluster.gpu, plan.precision.param);
    t.serial_s = t.kernels_s;
    for (const SerialCollective& sc : w.serial_comms)
      t.serial_s += sc.count * collective_time_s(sc.kind, sc.bytes, program.groups[std::size_t(sc.group)].shape,
                                                 plan.cluster);
    return t;
  }
  FAIL("no block forward op");
  return {};
}

}  // namespace

// Blocks per pipeline rank of a plan (summed over the rank's virtual stages).
std::vector<int> blocks_per_rank(const Plan& p) {
  std::vector<int> blocks(std::size_t(p.parallelism.pp), 0);
  for (const PlanUnit& u : p.units)
    for (const std::string& m : u.modules)
      blocks[std::size_t(stage_rank(u.stage, p.parallelism.pp))] += m.rfind("block.", 0) == 0;
  return blocks;
}

TEST_CASE("validation: Llama 3.1 405B's 126 blocks on 8 and 16 pipeline ranks are simulated by every stack") {
  const ValidationCaseFile f = load_validation_cases(kTiny);
  for (const char* framework : {"megatron", "nemo", "megatron-bridge", "torchtitan"})
    for (auto [pp, vpp] : {std::pair{8, 1}, std::pair{16, 1}, std::pair{8, 8}, std::pair{16, 4}, std::pair{8, 3}}) {
      CAPTURE(framework);
      CAPTURE(pp);
      CAPTURE(vpp);
      ValidationCase c = f.cases[1];
      c.framework = framework;
      c.model.layers = 126;
      c.parallelism.pp = pp;
      c.parallelism.vpp = vpp;
      c.parallelism.pp_schedule = vpp > 1 ? PipelineSchedule::interleaved_1f1b : PipelineSchedule::one_f_one_b;
      c.parallelism.dp_shard = 1;  // tp 8 x pp ranks
      c.gpus = 8 * pp;
      c.global_batch = c.micro_batch * 2 * pp;
      std::vector<int> blocks;
      REQUIRE_NOTHROW(blocks = blocks_per_rank(build_case_plan(c, f.file).plan));
      CHECK(std::accumulate(blocks.begin(), blocks.end(), 0) == 126);
      // 128 effective over pp x vpp stages: the first and last stage hold one block fewer.
      if (pp * vpp != 8 * 3) {
        CHECK(blocks.front() == 128 / pp - 1);
        CHECK(blocks[1] == 128 / pp);
      }
    }
}

TEST_CASE("validation: Megatron with Transformer Engine hides sequence-parallel TP collectives behind GEMMs") {
  const ValidationCaseFile f = load_validation_cases(kTiny);
  ValidationCase c = f.cases[1];  // Megatron, tp 8, undated source: the Transformer Engine era
  c.parallelism.sequence_parallel = true;
  const BlockTiming te = first_block_forward(build_case_plan(c, f.file).plan);
  CHECK(te.duration_s < te.serial_s);
  CHECK(te.duration_s >= te.kernels_s);
  // Megatron-LM of 2021 ran without Transformer Engine: the collectives stay between the GEMMs.
  c.source = "Narayanan et al. 2021 (arXiv 2104.04473) Table 1";
  const BlockTiming old = first_block_forward(build_case_plan(c, f.file).plan);
  CHECK(old.duration_s == doctest::Approx(old.serial_s));
  // Without sequence parallelism there are no userbuffers (Megatron-LM asserts it for --tp-comm-overlap).
  c = f.cases[1];
  c.parallelism.sequence_parallel = false;
  const BlockTiming no_sp = first_block_forward(build_case_plan(c, f.file).plan);
  CHECK(no_sp.duration_s == doctest::Approx(no_sp.serial_s));
}

namespace {

// The first all-gather of unit 0's parameters in a lowered and timed plan.
Op first_param_gather(const Plan& plan) {
  StepProgram program = lower(plan);
  time_program(program, plan);
  for (const Op& op : program.roles[0].ops)
    if (op.kind == OpKind::all_gather && op.payload == Payload::params && op.unit == 0) return op;
  FAIL("no parameter all-gather");
  return {};
}

}  // namespace

TEST_CASE("validation: the 2022 NeMo distributed optimizer is Apex's, in 100 MB buckets, gathered unprefetched") {
  const ValidationCaseFile f = load_validation_cases(kTiny);
  ValidationCase c = f.cases[1];  // GPT 39B, tp 8 x pp 2 x dp 32
  c.framework = "nemo";
  c.parallelism.data_parallel = DataParallel::distributed_optimizer;
  c.source = "NVIDIA/NeMo-Framework-Launcher README.md @3579cdb3 (2022-09)";
  const Plan apex = build_case_plan(c, f.file).plan;
  CHECK(apex_distributed_adam(apex));
  CHECK(apex.prefetch.forward == 0);  // step()'s parameter all-gather overlaps no compute
  c.source = "NVIDIA/NeMo docs performance summary (24.07)";  // Megatron-Core's overlapped optimizer
  const Plan core = build_case_plan(c, f.file).plan;
  CHECK_FALSE(apex_distributed_adam(core));
  CHECK(core.prefetch.forward == 1);
  const Op a = first_param_gather(apex), b = first_param_gather(core);
  // One NCCL call per 100 MB of fp32 gradient (26,214,400 elements), each after the first paying the
  // collective's latency again; the bandwidth term is the same bytes either way.
  const double calls = a.comm_bytes / dtype_bytes(apex.precision.param) / (100.0 * 1024 * 1024 / 4);
  CHECK(calls > 1);
  CHECK(a.comm_bytes == b.comm_bytes);
  CHECK(a.duration_s == doctest::Approx(b.duration_s + (calls - 1) * b.latency_s));
  CHECK(a.latency_s == doctest::Approx(calls * b.latency_s));
  // Megatron-LM's 2021 data-parallel path (DDP) is not Apex's optimizer.
  c.parallelism.data_parallel = DataParallel::ddp;
  c.source = "Narayanan et al. 2021 (arXiv 2104.04473) Table 1";
  CHECK_FALSE(apex_distributed_adam(build_case_plan(c, f.file).plan));
}

namespace {

// Unit 0's backward op on micro-batches 0 and 1 of a lowered and timed plan, with the time of its
// kernels and serial collectives alone.
struct UnitBackward {
  Op mb0, mb1;
  double plain_s = 0;  // kernels + serial collectives of the backward work set
  double params = 0;   // unit 0's parameters on this rank
};
UnitBackward unit0_backward(const Plan& plan) {
  StepProgram program = lower(plan);
  time_program(program, plan);
  UnitBackward b;
  for (const Op& op : program.roles[0].ops)
    if (op.kind == OpKind::backward && op.unit == 0 && (op.micro_batch == 0 || op.micro_batch == 1))
      (op.micro_batch == 0 ? b.mb0 : b.mb1) = op;
  REQUIRE(b.mb1.work_set >= 0);
  b.plain_s = kernels_time_s(program.work_sets[std::size_t(b.mb1.work_set)].kernels, plan.cluster.gpu,
                             plan.precision.param) + b.mb1.serial_comm_time_s;
  b.params = program.units[0].param_bytes / dtype_bytes(plan.precision.param);
  return b;
}

}  // namespace

TEST_CASE("validation: the 2022 NeMo distributed optimizer copies each micro-batch's gradients into its fp32 buckets") {
  const ValidationCaseFile f = load_validation_cases(kTiny);
  ValidationCase c = f.cases[1];  // GPT 39B on A100s
  c.framework = "nemo";
  c.parallelism.data_parallel = DataParallel::distributed_optimizer;
  c.parallelism.pp = 1;
  c.parallelism.pp_schedule = PipelineSchedule::none;
  c.parallelism.dp_shard = 64;  // tp 8 x dp 64 on the 512 GPUs
  c.source = "NVIDIA/NeMo-Framework-Launcher README.md @3579cdb3 (2022-09)";
  const Plan apex = build_case_plan(c, f.file).plan;
  REQUIRE(apex_distributed_adam(apex));
  const UnitBackward a = unit0_backward(apex);
  // Apex's _grad_copy: read the fp32 bucket and the bf16 gradient, write the bucket (10 bytes per
  // parameter) on every micro-batch; micro-batch 0 also carries zero_grad's zeroing of the buffer.
  const double copy_s = a.mb1.duration_s - a.plain_s;
  const double hbm = apex.cluster.gpu.hbm_bw_bytes_per_s;
  CHECK(copy_s >= 10 * a.params / hbm);         // no faster than the HBM's peak
  CHECK(copy_s <= 10 * a.params / (0.3 * hbm));  // the memory-efficiency curve's floor
  CHECK(a.mb0.duration_s - a.mb1.duration_s >= 4 * a.params / hbm);
  // With pipeline parallelism the launcher's gradient_accumulation_fusion writes the weight gradients
  // into the buffer itself, and Megatron-Core's distributed optimizer (2023 on) is not Apex's: no copy.
  c.parallelism.pp = 2;
  c.parallelism.pp_schedule = PipelineSchedule::one_f_one_b;
  c.parallelism.dp_shard = 32;
  const UnitBackward piped = unit0_backward(build_case_plan(c, f.file).plan);
  CHECK(piped.mb1.duration_s == doctest::Approx(piped.plain_s));
  c.parallelism.pp = 1;
  c.parallelism.pp_schedule = PipelineSchedule::none;
  c.parallelism.dp_shard = 64;
  c.source = "NVIDIA/NeMo docs performance summary (24.07)";
  const UnitBackward core = unit0_backward(build_case_plan(c, f.file).plan);
  CHECK(core.mb1.duration_s == doctest::Approx(core.plain_s));
  CHECK(core.mb0.duration_s == doctest::Approx(core.plain_s));
}

TEST_CASE("validation summary: median, mean, shares, overall and per source") {
  const ErrorStats s = error_stats({10.0, -20.0, 5.0, -30.0});
  CHECK(s.count == 4);
  CHECK(s.median_abs_pct == doctest::Approx(15.0));  // mean of the middle two, 10 and 20
  CHECK(s.mean_abs_pct == doctest::Approx(16.25));
  CHECK(s.within_10_share == doctest::Approx(0.5));
  CHECK(s.within_20_share == doctest::Approx(0.75));
  CHECK(error_stats({-7.0, 3.0, 40.0}).median_abs_pct == doctest::Approx(7.0));
  CHECK(error_stats({}).count == 0);

  const ValidationReport r = run_validation(load_validation_cases(kTiny));
  REQUIRE(r.summary.size() == 4);
  CHECK(r.summary[0].name == "overall");
  CHECK(r.summary[0].cases == 3);
  CHECK(r.summary[0].skipped == 0);
  CHECK(r.summary[0].tokens.count == 3);
  CHECK(r.summary[1].name == "mosaicml/llm-foundry");
  CHECK(r.summary[2].name == "Narayanan");
  CHECK(r.summary[2].skipped == 0);
  CHECK(r.summary[3].name == "pytorch/torchtitan");
  CHECK(r.summary[3].memory.count == 1);
}

}  // namespace fsdpx
