// executor/checkpoint/reshard.cpp — gather each unit's logical elements from the saved shards, then
// cut them along the target layout.
#include "executor/checkpoint/reshard.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {

namespace {

// The whole model's logical elements (units concatenated in order).
struct FullModel {
  std::vector<float> params, exp_avg, exp_avg_sq;
  std::vector<int> covered;  // times each logical element was found in a shard
};

// Start of each unit in the model's logical element order, plus the total at the end.
std::vector<std::int64_t> unit_bases(const RankState& r) {
  std::vector<std::int64_t> base{0};
  for (const UnitShardState& u : r.units) base.push_back(base.back() + u.unit_numel);
  return base;
}

void gather_shard(const UnitShardState& s, std::int64_t base, FullModel& f, const std::string& where) {
  if (s.exp_avg.size() != s.params.size() || s.exp_avg_sq.size() != s.params.size() || s.shard_offset < 0 ||
      s.unit_numel < 0)
    throw ConfigError(where + ": inconsistent shard arrays");
  const std::int64_t end = std::min<std::int64_t>(s.unit_numel, s.shard_offset + std::int64_t(s.params.size()));
  for (std::int64_t i = s.shard_offset; i < end; ++i) {
    const auto src = std::size_t(i - s.shard_offset), dst = std::size_t(base + i);
    f.params[dst] = s.params[src];
    f.exp_avg[dst] = s.exp_avg[src];
    f.exp_avg_sq[dst] = s.exp_avg_sq[src];
    ++f.covered[dst];
  }
}

FullModel gather_model(const TrainerState& saved, std::int64_t total, const std::string& origin) {
  const auto n = std::size_t(total);
  FullModel f{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n), std::vector<int>(n)};
  for (const RankState& r : saved.ranks) {
    const std::vector<std::int64_t> base = unit_bases(r);
    if (base.back() != total)
      throw ConfigError(fmt::format("{}: rank {} holds units of {} elements in all; this plan's model has {}", origin,
                                    r.rank, base.back(), total));
    for (std::size_t u = 0; u < r.units.size(); ++u)
      gather_shard(r.units[u], base[u], f, fmt::format("{}: rank {} unit {}", origin, r.rank, u));
  }
  const auto bad = std::find_if(f.covered.begin(), f.covered.end(), [](int c) { return c != 1; });
  if (bad != f.covered.end())
    throw ConfigError(fmt::format("{}: model element {} is held by {} saved shards (expected exactly 1)", origin,
                                  bad - f.covered.begin(), *bad));
  return f;
}

void cut_shard(const FullModel& f, std::int64_t base, UnitShardState& s) {
  const std::size_t len = s.params.size();
  s.params.assign(len, 0.0f);
  s.exp_avg.assign(len, 0.0f);
  s.exp_avg_sq.assign(len, 0.0f);
  for (std::size_t k = 0; k < len; ++k) {
    const std::int64_t i = s.shard_offset + std::int64_t(k);
    if (i >= s.unit_numel) break;  // padding stays 0
    const auto src = std::size_t(base + i);
    s.params[k] = f.params[src];
    s.exp_avg[k] = f.exp_avg[src];
    s.exp_avg_sq[k] = f.exp_avg_sq[src];
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

TrainerState reshard_state(const TrainerState& saved, const TrainerState& layout, const std::string& origin) {
  if (saved.ranks.empty() || layout.ranks.empty())
    throw ConfigError(fmt::format("{}: no shards to reshard", origin));
  TrainerState out = layout;
  out.step = saved.step;
  out.data = saved.data;
  out.seed = saved.seed;
  const std::vector<std::int64_t> base = unit_bases(layout.ranks.front());
  const FullModel f = gather_model(saved, base.back(), origin);
  for (RankState& r : out.ranks) {
    FSDP_CHECK(r.units.size() + 1 == base.size(), "reshard_state: layout ranks differ in unit count");
    for (std::size_t u = 0; u < r.units.size(); ++u) cut_shard(f, base[u], r.units[u]);
  }
  return out;
}

}  // namespace fsdpx
