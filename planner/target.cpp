// planner/target.cpp — target names and what each target cannot run. fsdpx's limits are the searched
// settings of its backend's row in core/backend_capabilities.h (parallelism axes, pipelines with tp or
// cp, schedules, reduction dtype), which the executor refuses by the same table
// (executor/session/runtime_program_from_plan.cpp), plus the checks both read from the plan: on the CPU
// tp degrees that split the FFN, vocabulary, KV heads and tokens evenly, without op-level selective
// recompute; a tied head in the embedding's unit, or under pp the embedding alone in its unit; fp16 with
// loss scaling on both backends (check_fp16_target); the attention kernel its backend runs by default
// (target_attention_kernel), so the prediction is that kernel's. torchtitan's are the exporter's notes
// (export_torchtitan_map.cpp).
#include "planner/target.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/backend_capabilities.h"
#include "core/errors.h"
#include "planner/export_torchtitan.h"

namespace fsdpx {

namespace {

std::vector<std::string> fsdpx_gaps(const Plan& p) {
  std::vector<std::string> gaps;
  for (const CapabilityGap& g : capability_gaps(p, backend_capabilities(cluster_device(p.cluster))))
    if (g.searched) gaps.push_back(fmt::format("{}: {}", g.path, g.what));
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

AttentionKernel target_attention_kernel(const Target& t, const ClusterSpec& cluster, std::int64_t head_dim) {
  const ExecutorDevice device = cluster_device(cluster);
  if (t.kind == TargetKind::torchtitan && device == ExecutorDevice::cuda) return AttentionKernel::flash2;
  const auto& kernels = backend_capabilities(device).attention_kernels;
  for (const AttentionKernelSupport& k : kernels)
    if (k.head_dims.empty() || std::find(k.head_dims.begin(), k.head_dims.end(), head_dim) != k.head_dims.end())
      return k.kernel;
  return kernels.front().kernel;
}

void check_fp16_target(const Target& t, std::string_view where) {
  if (t.kind == TargetKind::torchtitan)
    throw ConfigError(fmt::format("{}: torchtitan's mixed_precision_param is bfloat16 or float32 (no fp16 with loss "
                                  "scaling); plan for --target fsdpx", where));
}

void check_fp8_target(const Target& t, const ClusterSpec& cluster, const Fp8Settings& fp8, std::string_view where) {
  const std::string scaling(fp8_scaling_name(fp8.scaling));
  if (t.kind == TargetKind::torchtitan) {
    if (!fp8_is_torchao(fp8.scaling))
      throw ConfigError(fmt::format("{}: torchtitan's float8 converter (torchao) scales tensorwise or rowwise, not \"{}\" "
                                    "(Transformer Engine's)", where, scaling));
    return;
  }
  const BackendCapabilities& caps = backend_capabilities(cluster_device(cluster));
  if (std::find(caps.fp8_scalings.begin(), caps.fp8_scalings.end(), fp8.scaling) == caps.fp8_scalings.end())
    throw ConfigError(fmt::format("{}: fsdpx's {} backend does not train with fp8 scaling \"{}\"; plan for "
                                  "--target torchtitan@<release> (torchao recipes) or without --fp8",
                                  where, caps.name, scaling));
  if (fp8.all_gather && !caps.fp8_all_gather)
    throw ConfigError(fmt::format("{}: fsdpx's {} backend all-gathers parameters in their storage dtype, not fp8; "
                                  "leave out --fp8-all-gather", where, caps.name));
}

std::vector<std::string> target_gaps(const Plan& plan, const Target& t) {
  if (t.kind == TargetKind::fsdpx) return fsdpx_gaps(plan);
  std::vector<std::string> gaps;
  for (const TorchtitanNote& n : torchtitan_settings(plan, t.version).notes) gaps.push_back(n.key + ": " + n.text);
  return gaps;
}

}  // namespace fsdpx
