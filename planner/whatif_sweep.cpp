// planner/whatif_sweep.cpp — runs what-if points: re-simulate a plan, or re-plan a request, per
// point; and the three wrapping policies side by side on one plan. A point that cannot hold the plan
// (or where nothing fits) is a row with an error, so one bad point never hides the others.
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/data_placement.h"
#include "core/errors.h"
#include "planner/whatif.h"
#include "planner/wrapping.h"

namespace fsdpx {

namespace {

// FSDP1's size_based_auto_wrap_policy default min_num_params (torch/distributed/fsdp/wrap.py, 1e8).
constexpr double kFsdp1DefaultMinParams = 1e8;

void set_shape(WhatIfRow& row, const ClusterSpec& c, std::int64_t global_batch, std::int64_t seq,
               double memory_capacity_bytes) {
  row.world_size = c.world_size();
  row.global_batch = global_batch;
  row.seq = seq;
  row.memory_capacity_bytes = memory_capacity_bytes;
}

WhatIfRow simulated_row(const WhatIfPoint& point, std::string label, const Plan& plan) {
  WhatIfRow row{point, std::move(label), "", plan_shape_desc(plan), {}};
  set_shape(row, plan.cluster, plan.training.global_batch, plan.training.seq, plan.cluster.gpu.hbm_bytes);
  EngineOptions eo;
  eo.record_ops = true;  // the exposed-communication split needs per-op times
  row.metrics = point_metrics(simulate(plan, eo));
  return row;
}

// Units that the data-parallel mode cannot reshard after forward must say so (validate_plan).
void fit_reshard_to_mode(Plan& p) {
  if (data_placement(p.parallelism).reshard_after_forward) return;
  for (PlanUnit& u : p.units) u.reshard_after_forward = 0;
}

}  // namespace

PointMetrics point_metrics(const Simulation& sim) {
  PointMetrics m;
  m.step_time_s = sim.step_time_s;
  m.tokens_per_s_per_gpu = sim.tokens_per_s_per_gpu;
  m.mfu = sim.mfu;
  m.exposed_comm_s = sim.exposed_comm_s;
  m.peak_memory_total_bytes = sim.peak_memory_total_bytes;
  m.peak_memory_bytes = sim.peak_memory_bytes;
  return m;
}

PointMetrics point_metrics(const CandidateMetrics& c) {
  PointMetrics m;
  m.step_time_s = c.step_time_s;
  m.tokens_per_s_per_gpu = c.tokens_per_s_per_gpu;
  m.mfu = c.mfu;
  m.exposed_comm_s = c.exposed_comm_s;
  m.peak_memory_total_bytes = c.peak_memory_bytes;
  std::copy(c.peak_memory_by_category_bytes.begin(), c.peak_memory_by_category_bytes.end(), m.peak_memory_bytes.begin());
  return m;
}

std::vector<WhatIfRow> sweep_plan(const Plan& base, const std::vector<WhatIfPoint>& points, Scaling scaling) {
  std::vector<WhatIfRow> rows;
  for (const WhatIfPoint& point : points) {
    try {
      rows.push_back(simulated_row(point, point.label(), whatif_plan(base, point, scaling)));
    } catch (const ConfigError& e) {
      rows.push_back(WhatIfRow{point, point.label(), e.what(), "", {}});
    }
  }
  return rows;
}

std::vector<WhatIfRow> sweep_request(const PlanRequest& base, const std::vector<WhatIfPoint>& points,
                                     Scaling scaling) {
  std::vector<WhatIfRow> rows;
  for (const WhatIfPoint& point : points) {
    WhatIfRow row{point, point.label(), "", "", {}};
    try {
      const PlanRequest request = whatif_request(base, point, scaling);
      set_shape(row, request.cluster, request.global_batch, request.seq,
                request.memory_limit_bytes.value_or(request.cluster.gpu.hbm_bytes));
      const PlanResult result = search_plans(request);
      if (result.best) {
        row.plan_desc = plan_shape_desc(result.best->plan);
        row.metrics = point_metrics(result.best->metrics);
      } else if (result.least_memory_needed_bytes <= 0) {
        row.error = fmt::format("global batch {} cannot be split evenly over the data-parallel ranks of any "
                                "factorisation of {} GPUs", request.global_batch, request.cluster.world_size());
      } else {
        row.error = fmt::format("no plan fits in {:.2f} GiB (the least any plan needs is {:.2f} GiB)",
                                result.memory_limit_bytes / (1ull << 30), result.least_memory_needed_bytes / (1ull << 30));
      }
    } catch (const ConfigError& e) {
      row.error = e.what();
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<WhatIfRow> compare_wrappings(const Plan& plan) {
  Plan per_block = plan, fsdp1 = plan, simple = plan;
  per_block.units = wrap_per_block(plan.model, PerBlockWrapping{});
  if (!plan.model.is_moe()) {
    fsdp1.units = wrap_fsdp1_size_based(plan.model, kFsdp1DefaultMinParams);
    // Memory budget 0: SimpleFSDP buckets by its overlap and size rules only (planner/wrapping.h).
    simple.units = wrap_simplefsdp_auto(plan, 0);
  }
  std::vector<std::pair<std::string, Plan*>> variants{
      {"per-block (FSDP2)", &per_block}, {"FSDP1 size-based 1e8", &fsdp1}, {"SimpleFSDP auto", &simple}};
  // The size-based wrappers weigh identical dense blocks (cost_models/params.h); an MoE model's blocks differ.
  if (plan.model.is_moe()) variants.resize(1);
  std::vector<WhatIfRow> rows;
  for (const auto& [name, p] : variants) {
    fit_reshard_to_mode(*p);
    p->predicted.reset();
    try {
      validate_plan(*p, name);
      rows.push_back(simulated_row(WhatIfPoint{}, name, *p));
    } catch (const ConfigError& e) {
      rows.push_back(WhatIfRow{WhatIfPoint{}, name, e.what(), "", {}});
    }
  }
  return rows;
}

}  // namespace fsdpx
