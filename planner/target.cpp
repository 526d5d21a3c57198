// planner/target.cpp — target names and what each target cannot run. fsdpx's limits mirror the
// executor's checks (executor/runtime/runtime_program.cpp check_runnable: tp, cp and pp of 1 on CUDA;
// on the CPU tp and cp degrees that split the FFN, vocabulary, KV heads and tokens evenly, without
// op-level selective recompute, and pp with tp = cp = 1; a tied head in the embedding's unit, or under
// pp the embedding alone in its unit; the CPU backend reduces in fp32, the CUDA one in fp32 or bf16; fp16
// with loss scaling on both backends, check_fp16_target); torchtitan's are the exporter's notes
// (export_torchtitan_map.cpp).
#include "planner/target.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "planner/export_torchtitan.h"

namespace fsdpx {

namespace {

bool alone_in_unit(const Plan& p, const char* a) {
  for (const PlanUnit& u : p.units)
    if (std::find(u.modules.begin(), u.modules.end(), a) != u.modules.end()) return u.modules.size() == 1;
  return false;
}

bool same_unit(const Plan& p, const char* a, const char* b) {
  for (const PlanUnit& u : p.units) {
    const bool has_a = std::find(u.modules.begin(), u.modules.end(), a) != u.modules.end();
    const bool has_b = std::find(u.modules.begin(), u.modules.end(), b) != u.modules.end();
    if (has_a || has_b) return has_a && has_b;
  }
  return false;
}

// Tensor parallelism on the CPU backend: even splits, no op-level SAC (its step program re-runs tp
// collectives the CPU model does not).
void cpu_tensor_parallel_gaps(const Plan& p, std::vector<std::string>& gaps) {
  const Parallelism& par = p.parallelism;
  const ModelSpec& m = p.model;
  if (m.ffn_hidden % par.tp != 0 || m.vocab % par.tp != 0)
    gaps.push_back(fmt::format("tp = {}: the CPU backend splits ffn_hidden ({}) and vocab ({}) evenly", par.tp,
                               m.ffn_hidden, m.vocab));
  if (m.kv_heads % par.tp != 0 && par.tp % m.kv_heads != 0)
    gaps.push_back(fmt::format("tp = {}: tp and kv_heads ({}) must divide one another", par.tp, m.kv_heads));
  if (par.sequence_parallel && (p.training.micro_batch * p.training.seq / par.cp) % par.tp != 0)
    gaps.push_back(fmt::format("tp = {}: sequence parallelism splits a micro-batch's tokens evenly", par.tp));
  if (std::find(p.recompute.begin(), p.recompute.end(), RecomputeMode::selective_op) != p.recompute.end())
    gaps.push_back("recompute selective_op with tp > 1: the CPU model does not re-run its tp collectives");
}

std::vector<std::string> fsdpx_gaps(const Plan& p) {
  std::vector<std::string> gaps;
  const Parallelism& par = p.parallelism;
  const bool cpu = p.cluster.host_threads;
  for (auto [degree, name] : {std::pair{par.tp, "tp"}, {par.cp, "cp"}})
    if (degree > 1 && !cpu)
      gaps.push_back(fmt::format("{} = {}: fsdpx's CUDA backend runs {} = 1 only (the CPU backend runs it)", name,
                                 degree, name));
  if (par.pp > 1 && par.tp * par.cp > 1)
    gaps.push_back(fmt::format("pp = {} with tp = {}, cp = {}: fsdpx's executor runs pipelines with tp = cp = 1",
                               par.pp, par.tp, par.cp));
  if (cpu && par.tp > 1) cpu_tensor_parallel_gaps(p, gaps);
  if (p.model.tied_embeddings && par.pp == 1 && !same_unit(p, "embedding", "head"))
    gaps.push_back("a tied head outside the embedding's unit: the executor keeps the shared weight in one unit");
  if (p.model.tied_embeddings && par.pp > 1 && !alone_in_unit(p, "embedding"))
    gaps.push_back("a tied embedding sharing its unit under pp: the last stage's copy repeats the embedding's unit");
  if (cpu ? p.precision.reduce != DType::fp32 : (p.precision.reduce != DType::fp32 && p.precision.reduce != DType::bf16))
    gaps.push_back(fmt::format("reduce dtype {}: the {} backend reduces in {}", dtype_name(p.precision.reduce),
                               cpu ? "CPU" : "CUDA", cpu ? "fp32" : "fp32 or bf16"));
  return gaps;
}

}  // namespace

const std::vector<std::string>& torchtitan_versions() {
  static const std::vector<std::string> versions{"0.2.0", "0.2.1", "0.2.2"};
  return versions;
}

Target default_torchtitan_target() { return Target{TargetKind::torchtitan, torchtitan_versions().back()}; }

Target parse_target(std::string_view text, std::string_view where) {
  if (text == "fsdpx") return Target{};
  const std::string_view prefix = "torchtitan@";
  std::string accepted = "fsdpx";
  for (const std::string& v : torchtitan_versions()) accepted += ", torchtitan@" + v;
  if (text.substr(0, prefix.size()) != prefix)
    throw ConfigError(fmt::format("{}: unknown target \"{}\" (accepted: {})", where, text, accepted));
  const std::string version(text.substr(prefix.size()));
  const auto& versions = torchtitan_versions();
  if (std::find(versions.begin(), versions.end(), version) != versions.end())
    return Target{TargetKind::torchtitan, version};
  if (version.rfind("0.3", 0) == 0)
    throw ConfigError(fmt::format("{}: torchtitan {} configures jobs in Python (config_registry functions), not TOML; "
                                  "accepted: {}", where, version, accepted));
  throw ConfigError(fmt::format("{}: torchtitan release \"{}\" is not one fsdpx knows (accepted: {})", where, version,
                                accepted));
}

std::string target_name(const Target& t) {
  return t.kind == TargetKind::fsdpx ? std::string("fsdpx") : "torchtitan@" + t.version;
}

void check_fp16_target(const Target& t, std::string_view where) {
  if (t.kind == TargetKind::torchtitan)
    throw ConfigError(fmt::format("{}: torchtitan's mixed_precision_param is bfloat16 or float32 (no fp16 with loss "
                                  "scaling); plan for --target fsdpx", where));
}

std::vector<std::string> target_gaps(const Plan& plan, const Target& t) {
  if (t.kind == TargetKind::fsdpx) return fsdpx_gaps(plan);
  std::vector<std::string> gaps;
  for (const TorchtitanNote& n : torchtitan_settings(plan, t.version).notes) gaps.push_back(n.key + ": " + n.text);
  return gaps;
}

}  // namespace fsdpx
