// executor/checkpoint/checkpoint.cpp — reading a checkpoint: the manifest and shard files verified, and the
// choice of the newest good checkpoint, agreed by every process of a job. Saving is checkpoint_save.cpp.
#include "executor/checkpoint/checkpoint.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>

#include "core/errors.h"
#include "core/input_ranges.h"
#include "core/json_reader.h"
#include "core/output_file.h"
#include "executor/checkpoint/adapter_file.h"
#include "executor/checkpoint/checkpoint_verify.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/loss_scaler_json.h"
#include "executor/checkpoint/reshard.h"
#include "executor/checkpoint/shard_file.h"

namespace fsdpx {

namespace {

namespace fs = std::filesystem;

// Elements of a unit, and offsets in it: above any model within input_range::kMaxModelParams.
constexpr IntRange kElements{0, std::int64_t{1} << 50};

std::uint64_t unsigned_field(JsonObject& o, std::string_view key) {
  const nlohmann::json& v = o.raw(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    o.fail(key, "expected a non-negative integer");
  return v.get<std::uint64_t>();
}

// Reads one file that the manifest lists (`f`: name, bytes, crc32 and the caller's other keys, which it
// reads before), verifying its name, size and CRC-32; `at` gets "<where>: <name>" for later messages.
std::string read_listed_file(const std::string& dir, JsonObject& f, const std::string& where, std::string& at) {
  const std::string name = f.string("name");
  const std::uint64_t bytes = unsigned_field(f, "bytes");
  const std::string crc = f.string("crc32");
  f.finish();
  static const std::regex kFileName("[A-Za-z0-9_.-]{1,255}");
  if (!std::regex_match(name, kFileName) || name == "." || name == "..")
    f.fail("name", fmt::format("expected a file name of letters, digits, '.', '-' and '_', got {}",
                               json_excerpt(nlohmann::json(name))));
  static const std::regex kCrc("[0-9a-f]{8}");
  if (!std::regex_match(crc, kCrc))
    f.fail("crc32", fmt::format("expected 8 hex digits, got {}", json_excerpt(nlohmann::json(crc))));
  at = fmt::format("{}: {}", where, name);
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(dir) / name, ec)) throw ConfigError(at + ": missing");
  const std::string data = read_file_bytes((fs::path(dir) / name).string());
  if (data.size() != bytes)
    throw ConfigError(fmt::format("{}: truncated or oversized (expected {} bytes, found {})", at, bytes, data.size()));
  if (const std::string got = fmt::format("{:08x}", crc32(data)); got != crc)
    throw ConfigError(fmt::format("{}: checksum mismatch (manifest crc32 {}, file {})", at, crc, got));
  return data;
}

// Reads and verifies one shard file named in the manifest.
RankState read_shard(const std::string& dir, JsonObject f, const std::string& where) {
  const std::int64_t rank = f.integer("rank");
  std::string at;
  RankState r = decode_rank_state(read_listed_file(dir, f, where, at), at);
  if (r.rank != rank) throw ConfigError(fmt::format("{}: holds rank {}, manifest says {}", at, r.rank, rank));
  return r;
}

// The manifest's units: sizes only in format 1 ("unit_numel"), sizes and module lists from format 2
// on ("units"), each list tiling its unit and no module in two units.
std::vector<UnitShardState> parse_units(JsonObject& o, bool format1) {
  std::vector<UnitShardState> units;
  if (format1) {
    for (const auto& [v, p] : o.array("unit_numel")) {
      if (!v->is_number_unsigned() || v->get<std::uint64_t>() > std::uint64_t(kElements.max))
        throw_config_error(o.file(), p, fmt::format("expected an element count, got {}", json_type_name(*v)));
      units.emplace_back().unit_numel = v->get<std::int64_t>();
    }
    return units;
  }
  std::map<std::string, std::size_t> unit_of;
  for (const auto& [v, p] : o.array("units")) {
    JsonObject uo(*v, o.file(), p);
    UnitShardState& u = units.emplace_back();
    u.unit_numel = uo.integer_in("numel", kElements);
    for (const auto& [m, mp] : uo.array("modules")) {
      JsonObject mo(*m, o.file(), mp);
      u.modules.push_back(UnitModule{mo.string("name"), mo.integer_in("offset", kElements),
                                     mo.integer_in("numel", kElements)});
      mo.finish();
      if (const auto [prev, fresh] = unit_of.emplace(u.modules.back().name, units.size() - 1); !fresh)
        mo.fail("name", fmt::format("module \"{}\" is also in unit {}", prev->first, prev->second));
    }
    uo.finish();
    check_unit_modules(u.modules, u.unit_numel, fmt::format("{}: {}", o.file(), p));
  }
  return units;
}

TrainerState parse_manifest(const std::string& dir, const std::string& fingerprint, const std::string& where) {
  const std::string path = (fs::path(dir) / "manifest.json").string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw ConfigError(where + ": manifest.json: missing");
  const nlohmann::json j = parse_json_text(read_file_bytes(path), where + ": manifest.json");
  check_manifest_checksum(j, where + ": manifest.json");
  JsonObject o(j, where + ": manifest.json");
  o.optional_string("checksum");
  const std::string format = o.string("format");
  if (format != kCheckpointFormat && format != kCheckpointFormat1)
    o.fail("format", fmt::format("expected \"{}\" or \"{}\"", kCheckpointFormat, kCheckpointFormat1));
  if (const std::string fp = o.string("fingerprint"); fp != fingerprint)
    o.fail("fingerprint", fmt::format("saved for another model or LoRA setting ({}; this plan's is {})",
                                      json_excerpt(nlohmann::json(fp)), fingerprint));
  TrainerState s;
  s.step = o.integer_in("step", input_range::kSteps);
  s.data.next_sample = unsigned_field(o, "next_sample");
  s.seed = unsigned_field(o, "seed");
  s.dp_shard = int(o.integer_in("dp_shard", input_range::kDegree));
  s.dp_replicate = int(o.integer_in("dp_replicate", input_range::kDegree));
  if (auto ls = o.optional_object("loss_scaler")) s.loss_scaler = parse_loss_scaler(*ls, s.step);
  if (auto a = o.optional_object("adapters")) {  // LoRA (adapter_file.h)
    const std::int64_t numel = a->integer_in("numel", kElements);
    std::string at;
    s.adapters = decode_adapter_state(read_listed_file(dir, *a, where, at), numel, at);
  }
  const std::vector<UnitShardState> units = parse_units(o, format == kCheckpointFormat1);
  for (const auto& [f, p] : o.array("files")) s.ranks.push_back(read_shard(dir, JsonObject(*f, o.file(), p), where));
  o.finish();
  for (RankState& r : s.ranks) {
    bool same = r.units.size() == units.size();
    for (std::size_t u = 0; same && u < units.size(); ++u) same = r.units[u].unit_numel == units[u].unit_numel;
    if (!same)
      throw ConfigError(fmt::format("{}: {}: units differ from the manifest's units", where, shard_file_name(r.rank)));
    for (std::size_t u = 0; u < units.size(); ++u) r.units[u].modules = units[u].modules;
  }
  return s;
}

}  // namespace

std::string checkpoint_dir_name(std::int64_t step) { return fmt::format("step-{:06d}", step); }

TrainerState read_checkpoint(const std::string& dir, const std::string& fingerprint) {
  const std::string where = "checkpoint " + dir;
  TrainerState s = parse_manifest(dir, fingerprint, where);
  if (s.ranks.empty()) throw ConfigError(where + ": manifest.json: no shard files");
  const auto named = step_of_dir_name(fs::path(dir).filename().string());
  if (named && *named != s.step)
    throw ConfigError(fmt::format("{}: manifest.json: /step: {}, but the directory is named for step {}", where,
                                  s.step, *named));
  check_shard_set(s, where + ": manifest.json: /files");
  return s;
}

std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(const std::string& root,
                                                                   std::vector<std::string>* ignored) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    static const std::regex kName("step-[0-9]+");  // temporary "step-N.tmp-PID" names do not match
    if (!it->is_directory(ec) || !std::regex_match(name, kName)) continue;
    if (const auto step = step_of_dir_name(name)) out.emplace_back(*step, it->path().string());
    else if (ignored) ignored->push_back(fmt::format("{}: a step number beyond 2^63; ignored", it->path().string()));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

namespace {

// Reads `step`'s directory as this process lists it; its error message, or "" with `out` filled.
std::string try_read(const std::vector<std::pair<std::int64_t, std::string>>& listed, std::int64_t step,
                     const std::string& fingerprint, std::optional<LoadedCheckpoint>& out) {
  const auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& c) { return c.first == step; });
  if (it == listed.end()) return fmt::format("checkpoint of step {}: not found by this process", step);
  try {
    out = LoadedCheckpoint{read_checkpoint(it->second, fingerprint), it->second, {}};
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

std::optional<LoadedCheckpoint> load_latest_checkpoint(const std::string& root, const std::string& fingerprint,
                                                       std::vector<std::string>* rejected_out,
                                                       const CheckpointGroup& group) {
  // Round by round the leader proposes its newest candidate not yet tried (step + 1, 0: none left); every
  // process reads it; all take it when none failed, else all try the next one.
  std::vector<std::string> rejected;
  const auto listed = list_checkpoints(root, &rejected);
  std::size_t next = 0;
  for (;;) {
    const std::uint64_t proposal = group.leader && next < listed.size() ? std::uint64_t(listed[next].first) + 1 : 0;
    const std::uint64_t agreed = group.sum({proposal})[0];
    if (agreed == 0) break;
    const std::int64_t step = std::int64_t(agreed - 1);
    std::optional<LoadedCheckpoint> loaded;
    const std::string error = try_read(listed, step, fingerprint, loaded);
    const std::uint64_t failures = group.sum({error.empty() ? 0u : 1u})[0];
    if (failures == 0) {
      loaded->rejected = rejected;
      return loaded;
    }
    rejected.push_back(error.empty() ? fmt::format("checkpoint of step {}: {} other process(es) could not read it",
                                                   step, failures)
                                     : error);
    ++next;
  }
  if (rejected_out) *rejected_out = rejected;
  return std::nullopt;
}

}  // namespace fsdpx
