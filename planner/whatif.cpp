// planner/whatif.cpp — parsing --vary axes, the grid of points, and resizing a cluster, a plan or a
// plan request to a point. Running the points (simulate / search) is in whatif_sweep.cpp.
#include "planner/whatif.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

namespace {

constexpr std::array<std::pair<WhatIfParam, const char*>, 4> kParamNames{{{WhatIfParam::nodes, "nodes"},
                                                                         {WhatIfParam::inter_node_gbit, "inter_node_gbit"},
                                                                         {WhatIfParam::seq, "seq"},
                                                                         {WhatIfParam::ep, "ep"}}};

bool is_integral(WhatIfParam p) { return p != WhatIfParam::inter_node_gbit; }

double parse_value(const std::string& text, WhatIfParam p, const std::string& spec) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0)
    throw ConfigError(fmt::format("command line: --vary {}: '{}' is not a positive number", spec, text));
  if (is_integral(p) && v != std::floor(v))
    throw ConfigError(fmt::format("command line: --vary {}: {} must be a positive integer, got '{}'", spec,
                                  whatif_param_name(p), text));
  return v;
}

std::string value_text(WhatIfParam p, double v) {
  return is_integral(p) ? fmt::format("{}", static_cast<long long>(v)) : fmt::format("{:g}", v);
}

double setting(const WhatIfPoint& point, WhatIfParam p, double otherwise) {
  for (const auto& [param, v] : point.settings)
    if (param == p) return v;
  return otherwise;
}

// The per-GPU batch is kept: the global batch scales with the data-parallel degree.
std::int64_t scaled_batch(std::int64_t global_batch, int new_dp, int old_dp, const std::string& where) {
  const std::int64_t scaled = global_batch * new_dp;
  if (scaled % old_dp != 0)
    throw ConfigError(fmt::format("{}: global batch {} x {} data-parallel ranks / {} is not an integer", where,
                                  global_batch, new_dp, old_dp));
  return scaled / old_dp;
}

// Strong scaling: the global batch stays; the micro-batch shrinks to divide the new per-rank batch.
void keep_global_batch(Plan& p, int dp, const std::string& where) {
  const std::int64_t global = p.training.global_batch;
  if (global % dp != 0)
    throw ConfigError(fmt::format("{}: global batch {} is not divisible by {} data-parallel ranks (strong scaling "
                                  "keeps the global batch)", where, global, dp));
  const std::int64_t per_rank = global / dp;
  std::int64_t mb = std::min(p.training.micro_batch, per_rank);
  while (per_rank % mb != 0) --mb;
  p.training.micro_batch = mb;
}

void resize_data_parallel(Plan& p, int world, Scaling scaling, const std::string& where) {
  Parallelism& par = p.parallelism;
  const int model_parallel = par.tp * par.cp * par.pp;
  if (world % model_parallel != 0)
    throw ConfigError(fmt::format("{}: {} GPUs are not a multiple of tp x cp x pp = {}", where, world, model_parallel));
  const int old_dp = par.data_parallel_ranks();
  const int dp = world / model_parallel;
  if (par.data_parallel == DataParallel::hsdp) {
    if (dp % par.dp_shard != 0)
      throw ConfigError(fmt::format("{}: {} data-parallel ranks are not a multiple of dp_shard {}", where, dp, par.dp_shard));
    par.dp_replicate = dp / par.dp_shard;
    if (par.dp_replicate == 1) par.data_parallel = DataParallel::fsdp_full_shard;
  } else {
    FSDP_CHECK(par.dp_replicate == 1, "only hsdp plans have dp_replicate > 1");
    par.dp_shard = dp;
  }
  // reshard_after_forward g must divide the new dp_shard; g equal to the old dp_shard meant "full".
  for (PlanUnit& u : p.units)
    if (u.reshard_after_forward > 1 && par.dp_shard % u.reshard_after_forward != 0) u.reshard_after_forward = 1;
  if (scaling == Scaling::strong) keep_global_batch(p, dp, where);
  else p.training.global_batch = scaled_batch(p.training.global_batch, dp, old_dp, where);
}

}  // namespace

const char* whatif_param_name(WhatIfParam p) {
  for (const auto& [v, n] : kParamNames)
    if (v == p) return n;
  FSDP_CHECK(false, "what-if parameter without a name");
  return "";
}

const char* scaling_name(Scaling s) { return s == Scaling::strong ? "strong" : "weak"; }

WhatIfAxis parse_whatif_axis(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos)
    throw ConfigError(fmt::format("command line: --vary {}: expected NAME=V1,V2,... with NAME one of nodes, "
                                  "inter_node_gbit, seq", spec));
  const std::string name = spec.substr(0, eq);
  WhatIfAxis axis;
  bool known = false;
  for (const auto& [v, n] : kParamNames)
    if (name == n) axis.param = v, known = true;
  if (!known)
    throw ConfigError(fmt::format("command line: --vary {}: unknown parameter '{}' (expected nodes, inter_node_gbit "
                                  "or seq)", spec, name));
  std::string rest = spec.substr(eq + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    axis.values.push_back(parse_value(item, axis.param, spec));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return axis;
}

std::string WhatIfPoint::label() const {
  if (settings.empty()) return "base";
  std::string out;
  for (const auto& [p, v] : settings) out += fmt::format("{}{}={}", out.empty() ? "" : " ", whatif_param_name(p), value_text(p, v));
  return out;
}

std::vector<WhatIfPoint> whatif_grid(const std::vector<WhatIfAxis>& axes) {
  for (std::size_t i = 0; i < axes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (axes[i].param == axes[j].param)
        throw ConfigError(fmt::format("command line: --vary: {} is given twice", whatif_param_name(axes[i].param)));
  std::vector<WhatIfPoint> points{WhatIfPoint{}};
  for (const WhatIfAxis& axis : axes) {
    std::vector<WhatIfPoint> next;
    for (const WhatIfPoint& p : points)
      for (double v : axis.values) {
        WhatIfPoint q = p;
        q.settings.emplace_back(axis.param, v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  return points;
}

ClusterSpec whatif_cluster(ClusterSpec c, const WhatIfPoint& point) {
  const std::string where = fmt::format("what-if point {}", point.label());
  const int nodes = static_cast<int>(setting(point, WhatIfParam::nodes, c.nodes));
  if (nodes != c.nodes) c.gpus = 0;  // a node count means whole nodes
  c.nodes = nodes;
  const double gbit = setting(point, WhatIfParam::inter_node_gbit, 0);
  const bool needs_fabric = c.nodes > 1 || gbit > 0;
  if (needs_fabric && c.inter.nics_per_node <= 0)
    throw ConfigError(fmt::format("{}: cluster {} has no inter-node fabric", where, c.name));
  // Per GPU: nics_per_node x nic_bw / gpus_per_node = gbit x 1e9 / 8 bytes/s.
  if (gbit > 0) c.inter.nic_bw_bytes_per_s = gbit * 1e9 / 8 * c.gpus_per_node / c.inter.nics_per_node;
  return c;
}

Plan whatif_plan(const Plan& base, const WhatIfPoint& point, Scaling scaling) {
  const std::string where = fmt::format("what-if point {}", point.label());
  Plan p = base;
  p.predicted.reset();
  p.cluster = whatif_cluster(base.cluster, point);
  if (p.cluster.world_size() != base.cluster.world_size()) resize_data_parallel(p, p.cluster.world_size(), scaling, where);
  p.training.seq = static_cast<std::int64_t>(setting(point, WhatIfParam::seq, double(base.training.seq)));
  p.parallelism.ep = static_cast<int>(setting(point, WhatIfParam::ep, base.parallelism.ep));  // checked below
  validate_plan(p, where);
  return p;
}

PlanRequest whatif_request(const PlanRequest& base, const WhatIfPoint& point, Scaling scaling) {
  const std::string where = fmt::format("what-if point {}", point.label());
  PlanRequest r = base;
  r.cluster = whatif_cluster(base.cluster, point);
  r.seq = static_cast<std::int64_t>(setting(point, WhatIfParam::seq, double(base.seq)));
  r.space.fixed.ep = static_cast<int>(setting(point, WhatIfParam::ep, base.space.fixed.ep));
  if (r.space.fixed.ep > 1 && !r.model.is_moe())
    throw ConfigError(fmt::format("{}: ep {} needs a mixture-of-experts model; {} is dense", where, r.space.fixed.ep,
                                  r.model.name));
  if (r.seq > r.model.max_seq)
    throw ConfigError(fmt::format("{}: seq {} exceeds the model's max_seq {}", where, r.seq, r.model.max_seq));
  if (scaling == Scaling::weak)
    r.global_batch = scaled_batch(base.global_batch, r.cluster.world_size(), base.cluster.world_size(), where);
  return r;
}

std::string plan_shape_desc(const Plan& p) {
  const Parallelism& par = p.parallelism;
  std::string shape = par.dp_replicate > 1 ? fmt::format("dp_replicate {} x dp_shard {}", par.dp_replicate, par.dp_shard)
                                           : fmt::format("dp_shard {}", par.dp_shard);
  if (par.tp > 1) shape += fmt::format(", tp {}", par.tp);
  if (par.cp > 1) shape += fmt::format(", cp {}", par.cp);
  if (par.ep > 1) shape += fmt::format(", ep {}", par.ep);
  std::size_t full = 0, selective = 0, selective_op = 0;
  for (RecomputeMode r : p.recompute) {
    full += r == RecomputeMode::full;
    selective += r == RecomputeMode::selective;
    selective_op += r == RecomputeMode::selective_op;
  }
  std::string recompute = full == 0 && selective == 0 ? "none"
                          : fmt::format("{} full, {} selective of {}", full, selective, p.recompute.size());
  if (selective_op > 0)
    recompute = fmt::format("{} full, {} selective, {} selective_op of {}", full, selective, selective_op,
                            p.recompute.size());
  return fmt::format("{} ({}), mb {}, ga {}, {} units, recompute {}", shape, data_parallel_name(par.data_parallel),
                     p.training.micro_batch, p.grad_accum(), p.units.size(), recompute);
}

}  // namespace fsdpx
