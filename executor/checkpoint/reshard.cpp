// executor/checkpoint/reshard.cpp — check the saved units' modules against the model, gather every
// module's elements from the saved shards, then cut them along the target layout's units.
#include "executor/checkpoint/reshard.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/errors.h"

namespace fsdpx {

namespace {

// The model's modules as the target layout holds them, joined unit after unit: `modules[k].offset` is
// the module's first element in the gathered buffer. For an untied model this is forward order (every
// valid plan joins its units so; core/plan_validate.cpp).
struct ModelIndex {
  std::vector<UnitModule> modules;
  std::map<std::string, std::size_t> index;  // name -> position in `modules`
  std::int64_t total = 0;
  const UnitModule& at(const std::string& name) const { return modules[index.at(name)]; }
};

// Every logical element of the model, laid out as ModelIndex says.
struct FullModel {
  std::vector<float> params, exp_avg, exp_avg_sq;
  std::vector<int> covered;  // times each element was found in a shard
};

using UnitModules = std::vector<std::vector<UnitModule>>;  // per unit

ModelIndex model_index(const RankState& layout) {
  ModelIndex m;
  for (const UnitShardState& u : layout.units) {
    FSDP_CHECK(!u.modules.empty(), "reshard_state: the target layout needs module lists");
    for (const UnitModule& mod : u.modules) {
      FSDP_CHECK(m.index.emplace(mod.name, m.modules.size()).second, "reshard_state: a module twice in the layout");
      m.modules.push_back(UnitModule{mod.name, m.total, mod.numel});
      m.total += mod.numel;
    }
  }
  return m;
}

// A format-1 state records unit sizes only: cut the model's modules, joined in forward order, at the
// saved unit boundaries. A tied head has no elements of its own (executor/runtime/param_layout.cpp);
// that is how a tied model, whose embedding sat at an unrecorded place in the head's unit, is told.
UnitModules forward_order_modules(const RankState& r, const ModelIndex& model, const std::string& origin) {
  const auto head = model.index.find("head");
  if (head != model.index.end() && model.modules[head->second].numel == 0)
    throw ConfigError(fmt::format(
        "{}: a format-1 checkpoint records unit sizes but not which modules each unit holds, and this model ties "
        "its head to the embedding, whose place in the saved units is unknown; resume it with the fsdpx version "
        "and the plan that saved it, or start over",
        origin));
  UnitModules out;
  std::size_t next = 0;
  for (std::size_t u = 0; u < r.units.size(); ++u) {
    std::vector<UnitModule> mods;
    std::int64_t at = 0;
    while (at < r.units[u].unit_numel && next < model.modules.size()) {
      mods.push_back(UnitModule{model.modules[next].name, at, model.modules[next].numel});
      at += model.modules[next++].numel;
    }
    if (at != r.units[u].unit_numel)
      throw ConfigError(fmt::format("{}: format-1 checkpoint: saved unit {} ({} elements) does not end where a module "
                                    "of the model in forward order ends",
                                    origin, u, r.units[u].unit_numel));
    out.push_back(std::move(mods));
  }
  return out;
}

// Each saved module is a module of the model with the same size, and each model module is saved once.
void check_against_model(const UnitModules& saved, const ModelIndex& model, const std::string& origin) {
  std::map<std::string, std::size_t> unit_of;
  for (std::size_t u = 0; u < saved.size(); ++u)
    for (const UnitModule& m : saved[u]) {
      const auto it = model.index.find(m.name);
      if (it == model.index.end())
        throw ConfigError(fmt::format("{}: saved unit {} holds module \"{}\", which this model does not have", origin,
                                      u, m.name));
      if (const std::int64_t want = model.modules[it->second].numel; m.numel != want)
        throw ConfigError(fmt::format("{}: module \"{}\" has {} elements in the checkpoint but {} in this model",
                                      origin, m.name, m.numel, want));
      if (const auto [prev, fresh] = unit_of.emplace(m.name, u); !fresh)
        throw ConfigError(
            fmt::format("{}: module \"{}\" is in saved units {} and {}", origin, m.name, prev->second, u));
    }
  for (const UnitModule& m : model.modules)
    if (!unit_of.contains(m.name))
      throw ConfigError(fmt::format("{}: module \"{}\" of this model is in no saved unit", origin, m.name));
}

// The module lists of the saved units (rank 0's; every rank must agree), checked against the model.
UnitModules saved_unit_modules(const TrainerState& saved, const ModelIndex& model, const std::string& origin) {
  const RankState& first = saved.ranks.front();
  const bool listed =
      std::any_of(first.units.begin(), first.units.end(), [](const auto& u) { return !u.modules.empty(); });
  std::int64_t total = 0;
  for (const UnitShardState& u : first.units) total += u.unit_numel;
  if (!listed && total != model.total)
    throw ConfigError(fmt::format("{}: rank {} holds units of {} elements in all; this plan's model has {}", origin,
                                  first.rank, total, model.total));
  UnitModules lists;
  if (!listed) lists = forward_order_modules(first, model, origin);
  for (std::size_t u = 0; listed && u < first.units.size(); ++u) {
    check_unit_modules(first.units[u].modules, first.units[u].unit_numel, fmt::format("{}: saved unit {}", origin, u));
    lists.push_back(first.units[u].modules);
  }
  for (const RankState& r : saved.ranks) {
    bool same = r.units.size() == first.units.size();
    for (std::size_t u = 0; same && u < first.units.size(); ++u)
      same = r.units[u].unit_numel == first.units[u].unit_numel && r.units[u].modules == first.units[u].modules;
    if (!same)
      throw ConfigError(fmt::format("{}: rank {} holds other units than rank {}", origin, r.rank, first.rank));
  }
  check_against_model(lists, model, origin);
  return lists;
}

void gather_shard(const UnitShardState& s, const std::vector<UnitModule>& mods, const ModelIndex& model, FullModel& f,
                  const std::string& where) {
  if (s.exp_avg.size() != s.params.size() || s.exp_avg_sq.size() != s.params.size() || s.shard_offset < 0 ||
      s.unit_numel < 0)
    throw ConfigError(where + ": inconsistent shard arrays");
  const std::int64_t lo = s.shard_offset;
  const std::int64_t hi = std::min<std::int64_t>(s.unit_numel, lo + std::int64_t(s.params.size()));
  for (const UnitModule& m : mods) {
    const std::int64_t base = model.at(m.name).offset;
    for (std::int64_t i = std::max(lo, m.offset); i < std::min(hi, m.offset + m.numel); ++i) {
      const auto src = std::size_t(i - lo), dst = std::size_t(base + i - m.offset);
      f.params[dst] = s.params[src];
      f.exp_avg[dst] = s.exp_avg[src];
      f.exp_avg_sq[dst] = s.exp_avg_sq[src];
      ++f.covered[dst];
    }
  }
}

FullModel gather_model(const TrainerState& saved, const UnitModules& lists, const ModelIndex& model,
                       const std::string& origin) {
  const auto n = std::size_t(model.total);
  FullModel f{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n), std::vector<int>(n)};
  for (const RankState& r : saved.ranks)
    for (std::size_t u = 0; u < r.units.size(); ++u)
      gather_shard(r.units[u], lists[u], model, f, fmt::format("{}: rank {} unit {}", origin, r.rank, u));
  const auto bad = std::find_if(f.covered.begin(), f.covered.end(), [](int c) { return c != 1; });
  if (bad == f.covered.end()) return f;
  const std::int64_t at = bad - f.covered.begin();
  const auto m = std::find_if(model.modules.begin(), model.modules.end(),
                              [&](const UnitModule& x) { return at >= x.offset && at < x.offset + x.numel; });
  throw ConfigError(fmt::format("{}: element {} of module \"{}\" is held by {} saved shards (expected exactly 1)",
                                origin, at - m->offset, m->name, *bad));
}

void cut_shard(const FullModel& f, const ModelIndex& model, UnitShardState& s) {
  const std::int64_t len = std::int64_t(s.params.size()), lo = s.shard_offset;
  s.params.assign(std::size_t(len), 0.0f);  // padding stays 0
  s.exp_avg.assign(std::size_t(len), 0.0f);
  s.exp_avg_sq.assign(std::size_t(len), 0.0f);
  for (const UnitModule& m : s.modules) {
    const std::int64_t base = model.at(m.name).offset;
    for (std::int64_t i = std::max(lo, m.offset); i < std::min(lo + len, m.offset + m.numel); ++i) {
      const auto dst = std::size_t(i - lo), src = std::size_t(base + i - m.offset);
      s.params[dst] = f.params[src];
      s.exp_avg[dst] = f.exp_avg[src];
      s.exp_avg_sq[dst] = f.exp_avg_sq[src];
    }
  }
}

}  // namespace

TrainerState even_shard_layout(const std::vector<std::int64_t>& unit_numel, int dp_shard) {
  FSDP_CHECK(dp_shard >= 1, "even_shard_layout: dp_shard must be >= 1");
  TrainerState s;
  s.dp_shard = dp_shard;
  for (int r = 0; r < dp_shard; ++r) {
    RankState rank{r, {}};
    for (std::int64_t numel : unit_numel) {
      const std::int64_t shard = (numel + dp_shard - 1) / dp_shard;
      UnitShardState u;
      u.unit_numel = numel;
      u.shard_offset = r * shard;
      u.params.assign(std::size_t(shard), 0.0f);
      u.exp_avg = u.params;
      u.exp_avg_sq = u.params;
      rank.units.push_back(std::move(u));
    }
    s.ranks.push_back(std::move(rank));
  }
  return s;
}

TrainerState even_shard_layout(const std::vector<std::vector<UnitModule>>& units, int dp_shard) {
  std::vector<std::int64_t> numel;
  for (const std::vector<UnitModule>& mods : units) {
    numel.push_back(0);
    for (const UnitModule& m : mods) {
      FSDP_CHECK(m.offset == numel.back() && m.numel >= 0, "even_shard_layout: modules must be packed back to back");
      numel.back() += m.numel;
    }
  }
  TrainerState s = even_shard_layout(numel, dp_shard);
  for (RankState& r : s.ranks)
    for (std::size_t u = 0; u < units.size(); ++u) r.units[u].modules = units[u];
  return s;
}

void check_unit_modules(const std::vector<UnitModule>& modules, std::int64_t unit_numel, const std::string& where) {
  if (modules.empty()) throw ConfigError(where + ": no module list");
  std::int64_t at = 0;
  for (const UnitModule& m : modules) {
    if (m.name.empty() || m.offset != at || m.numel < 0)
      throw ConfigError(fmt::format("{}: module \"{}\" at offset {} with {} elements; expected the modules back to "
                                    "back from 0 (next offset {})",
                                    where, m.name, m.offset, m.numel, at));
    at += m.numel;
  }
  if (at != unit_numel)
    throw ConfigError(fmt::format("{}: modules hold {} elements, the unit {}", where, at, unit_numel));
}

TrainerState reshard_state(const TrainerState& saved, const TrainerState& layout, const std::string& origin) {
  if (saved.ranks.empty() || layout.ranks.empty())
    throw ConfigError(fmt::format("{}: no shards to reshard", origin));
  const ModelIndex model = model_index(layout.ranks.front());
  const UnitModules lists = saved_unit_modules(saved, model, origin);
  const FullModel f = gather_model(saved, lists, model, origin);
  TrainerState out = layout;
  out.step = saved.step;
  out.data = saved.data;
  out.seed = saved.seed;
  out.loss_scaler = saved.loss_scaler;
  out.adapters = saved.adapters;  // LoRA: whole on every rank, nothing to re-cut
  for (RankState& r : out.ranks) {
    FSDP_CHECK(r.units.size() == layout.ranks.front().units.size(), "reshard_state: layout ranks differ in unit count");
    for (UnitShardState& u : r.units) cut_shard(f, model, u);
  }
  return out;
}

}  // namespace fsdpx
