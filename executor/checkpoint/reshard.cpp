// executor/checkpoint/reshard.cpp — gather each unit's logical elements from the saved shards, then
// cut them along the target layout.
#include "executor/checkpoint/reshard.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {

namespace {

struct FullUnit {
  std::vector<float> params, exp_avg, exp_avg_sq;
  std::vector<int> covered;  // times each logical element was found in a shard
};

FullUnit gather_unit(const TrainerState& saved, std::size_t u, std::int64_t numel, const std::string& origin) {
  FullUnit f{std::vector<float>(std::size_t(numel)), std::vector<float>(std::size_t(numel)),
             std::vector<float>(std::size_t(numel)), std::vector<int>(std::size_t(numel))};
  for (const RankState& r : saved.ranks) {
    const UnitShardState& s = r.units[u];
    if (s.exp_avg.size() != s.params.size() || s.exp_avg_sq.size() != s.params.size() || s.shard_offset < 0)
      throw ConfigError(fmt::format("{}: rank {} unit {}: inconsistent shard arrays", origin, r.rank, u));
    const std::int64_t end = std::min<std::int64_t>(numel, s.shard_offset + std::int64_t(s.params.size()));
    for (std::int64_t i = s.shard_offset; i < end; ++i) {
      const auto src = std::size_t(i - s.shard_offset), dst = std::size_t(i);
      f.params[dst] = s.params[src];
      f.exp_avg[dst] = s.exp_avg[src];
      f.exp_avg_sq[dst] = s.exp_avg_sq[src];
      ++f.covered[dst];
    }
  }
  const auto bad = std::find_if(f.covered.begin(), f.covered.end(), [](int c) { return c != 1; });
  if (bad != f.covered.end())
    throw ConfigError(fmt::format("{}: unit {}: element {} is held by {} saved shards (expected exactly 1)", origin,
                                  u, bad - f.covered.begin(), *bad));
  return f;
}

void cut_unit(const FullUnit& f, std::int64_t numel, UnitShardState& s) {
  const std::size_t len = s.params.size();
  s.exp_avg.assign(len, 0.0f);
  s.exp_avg_sq.assign(len, 0.0f);
  std::fill(s.params.begin(), s.params.end(), 0.0f);
  for (std::size_t k = 0; k < len; ++k) {
    const std::int64_t i = s.shard_offset + std::int64_t(k);
    if (i >= numel) break;  // padding stays 0
    s.params[k] = f.params[std::size_t(i)];
    s.exp_avg[k] = f.exp_avg[std::size_t(i)];
    s.exp_avg_sq[k] = f.exp_avg_sq[std::size_t(i)];
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
  const std::size_t units = layout.ranks.front().units.size();
  for (const RankState& r : saved.ranks)
    if (r.units.size() != units)
      throw ConfigError(fmt::format("{}: rank {} holds {} units; this plan has {}", origin, r.rank, r.units.size(),
                                    units));
  for (std::size_t u = 0; u < units; ++u) {
    const std::int64_t numel = layout.ranks.front().units[u].unit_numel;
    for (const RankState& r : saved.ranks)
      if (r.units[u].unit_numel != numel)
        throw ConfigError(fmt::format("{}: unit {} has {} elements in the checkpoint and {} in this plan", origin,
                                      u, r.units[u].unit_numel, numel));
    const FullUnit f = gather_unit(saved, u, numel, origin);
    for (RankState& r : out.ranks) cut_unit(f, numel, r.units[u]);
  }
  return out;
}

}  // namespace fsdpx
