// simulator/validation_case.cpp — strict reading of the published-runs case format (see
// validation_case.h), the cases the simulator skips, the shipped cluster of each GPU and the summary key
// of a case. The plan a case describes is built in case_plan.cpp.
#include "simulator/validation_case.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/checked_math.h"
#include "core/config_paths.h"
#include "core/json_reader.h"
#include "core/model_spec_moe.h"

namespace fsdpx {

namespace {

template <typename E, std::size_t N>
E from_name(const std::array<std::pair<const char*, E>, N>& names, const std::string& s) {
  for (const auto& [n, v] : names)
    if (s == n) return v;
  FSDP_CHECK(false, "name accepted by JsonObject::choice without an enum value");
  return names[0].second;
}

constexpr std::array<std::pair<const char*, DataParallel>, 6> kDataParallel{{
    {"fsdp_full_shard", DataParallel::fsdp_full_shard},
    {"fsdp_shard_grad_op", DataParallel::fsdp_shard_grad_op},
    {"hsdp", DataParallel::hsdp},
    {"ddp", DataParallel::ddp},
    {"zero1", DataParallel::zero1},
    {"distributed_optimizer", DataParallel::distributed_optimizer},
}};
constexpr std::array<std::pair<const char*, PipelineSchedule>, 5> kSchedules{{
    {"none", PipelineSchedule::none},
    {"gpipe", PipelineSchedule::gpipe},
    {"1f1b", PipelineSchedule::one_f_one_b},
    {"interleaved_1f1b", PipelineSchedule::interleaved_1f1b},
    {"zero_bubble", PipelineSchedule::zero_bubble},
}};
constexpr std::array<std::pair<const char*, RecomputeMode>, 3> kRecompute{{
    {"none", RecomputeMode::none}, {"selective", RecomputeMode::selective}, {"full", RecomputeMode::full}}};
constexpr std::array<std::pair<const char*, FfnKind>, 3> kFfn{{
    {"swiglu", FfnKind::swiglu}, {"gelu", FfnKind::gelu}, {"squared_relu", FfnKind::squared_relu}}};

// A measured rate or size the simulator uses, or null.
std::optional<double> nullable_in(JsonObject& o, std::string_view key, NumberRange range) {
  o.raw(key);  // required: the format writes every key
  return o.optional_number_in(key, range);
}

int degree(JsonObject& o, std::string_view key) { return int(o.integer_in(key, input_range::kDegree)); }

ModelSpec parse_case_model(JsonObject o) {
  ModelSpec m;
  m.name = o.string("name");
  m.arch = o.choice("arch", {"llama", "gpt"}) == "llama" ? Arch::llama : Arch::gpt;
  m.layers = o.integer_in("layers", input_range::kLayers);
  m.hidden = o.integer_in("hidden", input_range::kHidden);
  m.heads = o.integer_in("heads", input_range::kHeads);
  m.kv_heads = o.integer_in("kv_heads", input_range::kHeads);
  m.ffn_hidden = o.integer_in("ffn_hidden", input_range::kFfnHidden);
  m.ffn_kind = from_name(kFfn, o.choice("ffn_kind", {"swiglu", "gelu", "squared_relu"}));
  m.vocab = o.integer_in("vocab", input_range::kVocab);
  m.tied_embeddings = o.boolean("tied_embeddings");
  // Same default as core/model_spec.cpp: GPT biases every linear layer, Llama none (< 0.1% of params).
  m.bias = m.arch == Arch::gpt ? LinearBias::all : LinearBias::none;
  // Optional, as in fsdpx's model files: head_dim (Qwen3's 128 with hidden / heads = 64), and the MoE,
  // latent-attention and qk_norm keys of the MoE runs (core/model_spec_moe.h).
  const std::optional<std::int64_t> head_dim = o.optional_integer_in("head_dim", input_range::kHeadDim);
  detail::read_own_moe_keys(o, m);
  o.finish();
  if (!head_dim && m.hidden % m.heads != 0) o.fail("hidden", "expected a multiple of heads");
  if (m.heads % m.kv_heads != 0) o.fail("kv_heads", "expected a divisor of heads");
  m.head_dim = head_dim.value_or(m.hidden / m.heads);
  const std::string at = o.path() + "/";
  detail::check_moe_layout(m, o.file(), {at + "moe/experts", at + "moe/top_k", at + "moe/groups",
                                         at + "moe/dense_layers", at + "moe/shared_ffn_hidden", at + "head_dim"});
  return m;
}

Parallelism parse_case_parallelism(JsonObject o, int& expert_tp) {
  Parallelism p;
  p.dp_replicate = degree(o, "dp_replicate");
  p.dp_shard = degree(o, "dp_shard");
  p.tp = degree(o, "tp");
  p.pp = degree(o, "pp");
  p.vpp = degree(o, "vpp");
  p.cp = degree(o, "cp");
  p.ep = o.has("ep") ? degree(o, "ep") : 1;  // dense cases leave ep and etp out
  expert_tp = o.has("etp") ? degree(o, "etp") : 1;
  p.sequence_parallel = o.boolean("sequence_parallel");
  p.pp_schedule =
      from_name(kSchedules, o.choice("pp_schedule", {"none", "gpipe", "1f1b", "interleaved_1f1b", "zero_bubble"}));
  p.data_parallel = from_name(kDataParallel, o.choice("data_parallel", {"fsdp_full_shard", "fsdp_shard_grad_op", "hsdp",
                                                                       "ddp", "zero1", "distributed_optimizer"}));
  o.finish();
  return p;
}

MeasuredRun parse_measured(JsonObject o) {
  MeasuredRun m;
  m.tokens_per_s_per_gpu = nullable_in(o, "tokens_per_s_per_gpu", input_range::kMeasuredTokensPerS);
  m.mfu_pct = nullable_in(o, "mfu_pct", input_range::kMeasuredMfuPct);
  m.peak_memory_gib = nullable_in(o, "peak_memory_gib", input_range::kHbmGib);
  m.step_time_s = nullable_in(o, "step_time_s", input_range::kMeasuredStepTimeS);
  o.finish();
  return m;
}

void parse_case_gpu(JsonObject o, ValidationCase& c) {
  c.gpu = o.choice("name", {"a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200-180gb", "gb200"});
  c.gpu_memory_gib = o.optional_number_in("memory_gib", input_range::kHbmGib);
  c.gpu_hbm_bw_tb_s = o.optional_number_in("hbm_bw_tb_s", input_range::kHbmBwTbPerS);
  c.gpu_power_w = o.optional_number_in("power_w", input_range::kPowerW);
  o.finish();
}

ValidationCase parse_case(JsonObject o) {
  ValidationCase c;
  c.id = o.string("id");
  c.source = o.string("source");
  c.framework = o.string("framework");
  c.model = parse_case_model(o.object("model"));
  c.seq_len = o.integer_in("seq_len", input_range::kMaxSeq);
  c.model.max_seq = c.seq_len;
  check_model_size(c.model, o.file(), o.path_of("model"));
  parse_case_gpu(o.object("gpu"), c);
  c.gpus = degree(o, "gpus");
  c.gpus_per_node = int(o.integer_in("gpus_per_node", input_range::kGpusPerNode));
  c.inter_node_bw_gbit_per_gpu = nullable_in(o, "inter_node_bw_gbit_per_gpu", input_range::kGbitPerS);
  c.parallelism = parse_case_parallelism(o.object("parallelism"), c.expert_tp);
  c.micro_batch = o.integer_in("micro_batch", input_range::kMicroBatch);
  c.global_batch = o.integer_in("global_batch", input_range::kGlobalBatch);
  c.recompute = from_name(kRecompute, o.choice("recompute", {"none", "selective", "full"}));
  if (const std::optional<double> fraction = o.optional_number_in("recompute_fraction", {0.0, 1.0})) {
    if (c.recompute != RecomputeMode::full || *fraction <= 0)
      throw_config_error(o.file(), o.path_of("recompute_fraction"),
                         "a share of blocks in (0, 1], only with recompute \"full\"");
    c.recompute_fraction = *fraction;
  }
  const bool fp8 = o.choice("precision", {"bf16", "fp8"}) == "fp8";
  c.compiled = o.boolean("compiled");
  c.measured = parse_measured(o.object("measured"));
  for (const auto& [v, path] : o.array("uncertain")) {
    if (!v->is_string()) throw_config_error(o.file(), path, "expected a string");
    c.uncertain.push_back(v->get<std::string>());
    if (auto range = parse_bandwidth_range(c.uncertain.back(), o.file(), path)) {
      if (c.inter_node_bw_range) throw_config_error(o.file(), path, "a second inter-node bandwidth range");
      if (!c.inter_node_bw_gbit_per_gpu || *c.inter_node_bw_gbit_per_gpu < range->low_gbit_per_gpu ||
          *c.inter_node_bw_gbit_per_gpu > range->high_gbit_per_gpu)
        throw_config_error(o.file(), path, "the range must contain the case's inter_node_bw_gbit_per_gpu");
      c.inter_node_bw_range = range;
    }
  }
  o.finish();
  if (fp8) c.fp8 = case_fp8_settings(c.framework, c.source, c.uncertain, c.parallelism.dp_shard);
  const Parallelism& p = c.parallelism;
  const auto world = try_product({p.dp_replicate, p.dp_shard, p.tp, p.pp, p.cp});
  if (world != c.gpus)
    o.fail("parallelism", fmt::format("dp_replicate x dp_shard x tp x pp x cp = {}, expected gpus = {}",
                                      world ? fmt::to_string(*world) : std::string("more than 2^63"), c.gpus));
  return c;
}

// What can be read of a malformed case for its row: its id (else its position), source and framework.
ValidationCase malformed_case(const nlohmann::json& v, std::size_t index, std::string reason) {
  ValidationCase c;
  const auto text = [&v](const char* key) {
    return v.is_object() && v.contains(key) && v.at(key).is_string() ? v.at(key).get<std::string>() : std::string();
  };
  c.id = text("id").empty() ? fmt::format("cases[{}]", index) : text("id");
  c.source = text("source");
  c.framework = text("framework");
  c.malformed = std::move(reason);
  return c;
}

ValidationCase read_case(const nlohmann::json& v, const std::string& file, const std::string& path, std::size_t index) {
  try {
    if (!v.is_object()) throw_config_error(file, path, fmt::format("expected an object, got {}", json_type_name(v)));
    return parse_case(JsonObject(v, file, path));
  } catch (const ConfigError& e) {
    return malformed_case(v, index, e.what());
  }
}

}  // namespace

ValidationCaseFile parse_validation_cases(const nlohmann::json& j, const std::string& file) {
  JsonObject root(j, file);
  root.choice("format", {"fsdpx-published-runs/1"});
  ValidationCaseFile out;
  out.file = file;
  for (const auto& [v, path] : root.array("cases")) {
    ValidationCase c = read_case(*v, file, path, out.cases.size());
    for (const ValidationCase& earlier : out.cases)
      if (!c.malformed && !earlier.malformed && earlier.id == c.id)
        c = malformed_case(*v, out.cases.size(), fmt::format("{}: {}/id: duplicate case id \"{}\"", file, path, c.id));
    out.cases.push_back(std::move(c));
  }
  root.finish();
  return out;
}

ValidationCaseFile load_validation_cases(const std::string& path) {
  return parse_validation_cases(load_json_file(path), path);
}

namespace {

// What fsdpx cannot yet model of a mixture-of-experts case (nullopt: nothing). Megatron-Core folds the
// experts' ep x etp x expert-dp onto tp x cp x dp separately from attention ("parallel folding",
// megatron/core/parallel_state.py initialize_model_parallel, expert_tensor_parallel_size); fsdpx folds
// ep onto dp_shard x cp with the experts split over tp (torchtitan's etp = tp, core/expert_parallel.h).
std::optional<std::string> moe_skip_reason(const ValidationCase& c) {
  const Parallelism& p = c.parallelism;
  if (!c.model.is_moe()) return std::nullopt;
  if (const auto why = unsimulated_model_reason(c.model)) return "model: " + *why;
  if (c.fp8) return std::string("fp8 mixture-of-experts training (fp8 grouped expert GEMMs and dispatch) is not "
                                "modelled yet: issue 30");
  if (c.expert_tp != p.tp)
    return fmt::format("expert tensor parallelism etp ({}) differs from tp ({}): fsdpx splits the experts over tp "
                       "(etp = tp, torchtitan's folding)", c.expert_tp, p.tp);
  if (p.ep % p.cp != 0 || (p.dp_shard * p.cp) % p.ep != 0)
    return fmt::format("ep ({}) does not fold onto dp_shard x cp ({} x {}) with cp dividing ep: Megatron-Core's "
                       "folding of ep over the tp ranks is not modelled", p.ep, p.dp_shard, p.cp);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> validation_skip_reason(const ValidationCase& c) {
  if (c.malformed) return "malformed case: " + *c.malformed;
  return moe_skip_reason(c);
}

std::string cluster_for_gpu(const std::string& gpu, const std::string& file, const std::string& path) {
  static constexpr std::array<std::pair<const char*, const char*>, 6> kClusters{{
      {"a100-sxm-40gb", "dgx-a100-40gb"},
      {"a100-sxm-80gb", "dgx-a100-80gb"},
      {"h100-sxm-80gb", "dgx-h100"},
      {"h200-sxm-141gb", "dgx-h200"},
      {"b200-180gb", "hgx-b200"},
      {"gb200", "gb200-nvl72"},
  }};
  for (const auto& [g, cl] : kClusters)
    if (gpu == g) return cl;
  throw_config_error(file, path, fmt::format("no shipped cluster for GPU \"{}\"", gpu));
}

std::string validation_source_key(const ValidationCase& c) {
  const std::size_t space = c.source.find(' ');
  const std::string head = c.source.substr(0, space);
  if (!head.empty()) return head;
  return c.framework.empty() ? "(unknown source)" : c.framework;
}

}  // namespace fsdpx
