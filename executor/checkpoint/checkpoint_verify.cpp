// executor/checkpoint/checkpoint_verify.cpp — manifest checksum, step names and shard coverage.
#include "executor/checkpoint/checkpoint_verify.h"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_reader.h"
#include "executor/checkpoint/checksum.h"

namespace fsdpx {

std::string manifest_checksum(const nlohmann::json& manifest) {
  nlohmann::json rest = manifest;
  if (rest.is_object()) rest.erase("checksum");
  return fmt::format("{:08x}", crc32(rest.dump()));
}

void check_manifest_checksum(const nlohmann::json& manifest, const std::string& where) {
  if (!manifest.is_object() || !manifest.contains("checksum")) return;
  const nlohmann::json& saved = manifest["checksum"];
  const std::string computed = manifest_checksum(manifest);
  if (!saved.is_string() || saved.get<std::string>() != computed)
    throw ConfigError(fmt::format("{}: /checksum: the manifest does not match its checksum (saved {}, computed {}): "
                                  "it was changed or damaged after it was written",
                                  where, json_excerpt(saved), computed));
}

std::optional<std::int64_t> step_of_dir_name(std::string_view name) {
  constexpr std::string_view kPrefix = "step-";
  if (!name.starts_with(kPrefix) || name.size() == kPrefix.size()) return std::nullopt;
  const std::string_view digits = name.substr(kPrefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  std::int64_t step = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return step;
}

namespace {

void check_unit_coverage(const TrainerState& s, std::size_t u, const std::string& where) {
  std::vector<std::pair<std::int64_t, std::int64_t>> shards;  // (offset, elements), one per rank
  for (const RankState& r : s.ranks) shards.emplace_back(r.units[u].shard_offset, std::int64_t(r.units[u].params.size()));
  std::sort(shards.begin(), shards.end());
  const std::int64_t unit_numel = s.ranks.front().units[u].unit_numel;
  std::int64_t next = 0;
  for (const auto& [offset, elements] : shards) {
    if (offset != next)
      throw ConfigError(fmt::format("{}: unit {}: {} at element {} (the shards must be back to back from 0: one is "
                                    "missing or listed twice)",
                                    where, u, offset < next ? "two shards overlap" : "a gap", std::min(offset, next)));
    next = offset + elements;
  }
  if (next < unit_numel)
    throw ConfigError(fmt::format("{}: unit {}: the shards end at element {} of {}: a shard is missing", where, u, next,
                                  unit_numel));
}

}  // namespace

void check_shard_set(const TrainerState& s, const std::string& where) {
  std::vector<int> ranks;
  for (const RankState& r : s.ranks) ranks.push_back(r.rank);
  std::sort(ranks.begin(), ranks.end());
  for (int i = 0; i < int(ranks.size()); ++i)
    if (ranks[std::size_t(i)] != i || i >= s.dp_shard)
      throw ConfigError(fmt::format("{}: the shard files hold ranks {}; expected each of 0..{} once (dp_shard {})",
                                    where, fmt::join(ranks, ", "), s.dp_shard - 1, s.dp_shard));
  if (int(ranks.size()) != s.dp_shard)
    throw ConfigError(fmt::format("{}: {} shard files for dp_shard {}: a shard is missing", where, ranks.size(),
                                  s.dp_shard));
  for (const RankState& r : s.ranks)
    if (r.units.size() != s.ranks.front().units.size())
      throw ConfigError(fmt::format("{}: rank {} holds {} units, rank {} {}", where, r.rank, r.units.size(),
                                    s.ranks.front().rank, s.ranks.front().units.size()));
  for (std::size_t u = 0; u < s.ranks.front().units.size(); ++u) check_unit_coverage(s, u, where);
}

}  // namespace fsdpx
