// planner/wrapping_fsdp1.cpp — FSDP1's size_based_auto_wrap_policy on the module tree
// root -> {embedding, layers -> {block.0 .. block.L-1}, final_norm, head} (arXiv 2304.11277 §3;
// torch/distributed/fsdp/wrap.py _recursive_wrap: children first, then wrap a module when its
// not-yet-wrapped numel >= min_num_params; the root is always wrapped). Leaves out sub-block modules
// (attention, MLP), which FSDP1 could wrap apart when one alone reaches the threshold.
#include <algorithm>

#include <fmt/format.h>

#include "cost_models/params.h"
#include "core/errors.h"
#include "planner/wrapping.h"

namespace fsdpx {

namespace {

// Runs of consecutive leaf indices (modules in forward order) as units.
void push_runs(const std::vector<int>& leaves, const std::vector<std::string>& names,
               std::vector<std::pair<int, PlanUnit>>& out) {
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (i == 0 || leaves[i] != leaves[i - 1] + 1) out.push_back({leaves[i], PlanUnit{{}, 1}});
    out.back().second.modules.push_back(names[std::size_t(leaves[i])]);
  }
}

}  // namespace

std::vector<PlanUnit> wrap_fsdp1_size_based(const ModelSpec& m, double min_params) {
  const ParamCounts pc = count_params(m);
  const std::vector<std::string> names = module_names(m);
  const int last_block = int(m.layers);  // leaf index of block.L-1 (embedding is 0)
  std::vector<std::pair<int, PlanUnit>> units;  // (first leaf, unit), sorted at the end
  std::vector<int> root_rest;
  // Root's children, post-order. Embedding and head are leaves: wrapped alone when large enough.
  auto leaf = [&](int index, double params) {
    if (params >= min_params && !(m.tied_embeddings && index == 0)) units.push_back({index, PlanUnit{{names[std::size_t(index)]}, 1}});
    else root_rest.push_back(index);
  };
  leaf(0, double(pc.embedding));
  // layers (ModuleList): blocks reaching the threshold are wrapped alone; the rest join the
  // ModuleList's unit when together they reach it, else the root.
  std::vector<int> layer_rest;
  for (int b = 1; b <= last_block; ++b) {
    if (double(pc.per_block) >= min_params) units.push_back({b, PlanUnit{{names[std::size_t(b)]}, 1}});
    else layer_rest.push_back(b);
  }
  if (!layer_rest.empty() && double(pc.per_block) * double(layer_rest.size()) >= min_params) {
    push_runs(layer_rest, names, units);
  } else {
    root_rest.insert(root_rest.end(), layer_rest.begin(), layer_rest.end());
  }
  leaf(last_block + 1, double(pc.final_norm));
  leaf(last_block + 2, double(pc.head));
  std::sort(root_rest.begin(), root_rest.end());
  std::sort(units.begin(), units.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // The root's remainder: consecutive runs, except that a tied embedding goes with the head's unit.
  std::vector<int> rest = root_rest;
  const bool tied_left = m.tied_embeddings && !rest.empty() && rest.front() == 0;
  if (tied_left) rest.erase(rest.begin());
  push_runs(rest, names, units);
  std::sort(units.begin(), units.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PlanUnit> out;
  for (auto& [first, u] : units) out.push_back(std::move(u));
  if (tied_left) {
    for (auto& u : out)
      if (u.modules.back() == "head") u.modules.insert(u.modules.begin(), "embedding");
  }
  out.back().reshard_after_forward = 0;
  return out;
}

}  // namespace fsdpx
