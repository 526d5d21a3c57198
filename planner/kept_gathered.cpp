// planner/kept_gathered.cpp — the gathered-parameter terms of kept_gathered.h.
#include "planner/kept_gathered.h"

#include <algorithm>
#include <string>

#include "core/data_placement.h"
#include "cost_models/compute_fp8.h"
#include "cost_models/memory.h"
#include "cost_models/params.h"

namespace fsdpx {

// Per unit, the bytes its all-gather allocates (program/lower.cpp gather_bytes_: the param dtype, a block's
// linear weights in fp8 under fp8 all-gather).
std::vector<double> unit_gather_bytes(const Plan& plan, const std::vector<double>& params_per_unit) {
  const double pb = dtype_bytes(plan.precision.param);
  const double linear_bytes = fp8_linear_params_per_block(plan.model) / plan.parallelism.tp *
                              (pb - fp8_linear_gather_bytes(plan.fp8, pb));
  std::vector<double> out;
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    double blocks = 0;
    for (const std::string& m : plan.units[u].modules) blocks += m.rfind("block.", 0) == 0 ? 1 : 0;
    out.push_back(params_per_unit[u] * pb - blocks * linear_bytes);
  }
  return out;
}

// Without pipelining, a dense model's sharded units that the plan does not reshard fully after forward:
// when the last forward op starts, a unit kept gathered (reshard_after_forward 0) holds its whole gather and
// one resharded to g ranks its copy over g (program/lower_units.cpp forward_segment); the head's unit holds
// its gather for that op whatever its reshard. -1 when the plan has no such unit or this does not apply
// (pipelines, MoE experts' own gathers, LoRA), so the caller keeps the head alone.
double kept_gathered_bytes(const Plan& plan, const std::vector<double>& gather) {
  const auto& par = plan.parallelism;
  if (par.pp > 1 || plan.model.is_moe() || plan.lora || !is_sharded(data_placement(par).params)) return -1;
  double kept = 0;
  bool any = false;
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const auto& modules = plan.units[u].modules;
    const bool head = std::find(modules.begin(), modules.end(), "head") != modules.end();
    const int g = plan.units[u].reshard_after_forward >= par.dp_shard ? 1 : plan.units[u].reshard_after_forward;
    if (g == 0 || head) kept += gather[u], any |= g == 0;
    else if (g > 1) kept += gather[u] / g, any = true;
  }
  return any ? kept : -1;
}

MemoryBound kept_gathered_bound(const Plan& plan, MemoryBound b) {
  // Every unit kept: kept_gathered_bytes of the plan with reshard_after_forward 0 on all units, that is all
  // of their gathers (without copying the plan).
  const auto& par = plan.parallelism;
  if (par.pp > 1 || plan.model.is_moe() || plan.lora || !is_sharded(data_placement(par).params)) return b;
  const std::vector<double> gather = unit_gather_bytes(plan);
  double bytes = 0;
  for (double g : gather) bytes += g;
  if (bytes <= b.gathered_bytes) return b;
  b.gathered_bytes = bytes;
  b.headroom_bytes = allocator_headroom_bytes(b.activation_bytes + b.gathered_bytes);
  return b;
}

std::vector<double> unit_gather_bytes(const Plan& plan) { return unit_gather_bytes(plan, unit_params(plan)); }

}  // namespace fsdpx
