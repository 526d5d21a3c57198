// executor/checkpoint/checkpoint.cpp — manifest, atomic save, verified load with fallback.
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
#include "executor/checkpoint/checkpoint_verify.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/reshard.h"
#include "executor/checkpoint/shard_file.h"

namespace fsdpx {

namespace {

namespace fs = std::filesystem;

// Elements of a unit, and offsets in it: above any model within input_range::kMaxModelParams.
constexpr IntRange kElements{0, std::int64_t{1} << 50};

std::string rank_file_name(int rank) { return fmt::format("rank-{:05d}.bin", rank); }

// Per unit: its size and the modules it holds (name, offset in the unit, elements), as rank 0 has them.
nlohmann::json units_json(const TrainerState& s) {
  nlohmann::json units = nlohmann::json::array();
  for (std::size_t u = 0; !s.ranks.empty() && u < s.ranks.front().units.size(); ++u) {
    const UnitShardState& unit = s.ranks.front().units[u];
    FSDP_CHECK(!unit.modules.empty(), "save_checkpoint: every unit needs its module list");
    for (const RankState& r : s.ranks)
      FSDP_CHECK(r.units.size() > u && r.units[u].modules == unit.modules, "save_checkpoint: ranks differ in units");
    nlohmann::json modules = nlohmann::json::array();
    for (const UnitModule& m : unit.modules)
      modules.push_back({{"name", m.name}, {"offset", m.offset}, {"numel", m.numel}});
    units.push_back({{"numel", unit.unit_numel}, {"modules", modules}});
  }
  return units;
}

nlohmann::json manifest_json(const TrainerState& s, const std::string& fingerprint,
                             const std::vector<std::string>& files, const std::vector<std::string>& bytes) {
  nlohmann::json entries = nlohmann::json::array();
  for (std::size_t i = 0; i < files.size(); ++i)
    entries.push_back({{"name", files[i]},
                       {"rank", s.ranks[i].rank},
                       {"bytes", bytes[i].size()},
                       {"crc32", fmt::format("{:08x}", crc32(bytes[i]))}});
  nlohmann::json manifest{{"format", kCheckpointFormat}, {"fingerprint", fingerprint}, {"step", s.step},
                          {"next_sample", s.data.next_sample}, {"seed", s.seed}, {"dp_shard", s.dp_shard},
                          {"dp_replicate", s.dp_replicate}, {"units", units_json(s)}, {"files", entries}};
  manifest["checksum"] = manifest_checksum(manifest);
  return manifest;
}

std::uint64_t unsigned_field(JsonObject& o, std::string_view key) {
  const nlohmann::json& v = o.raw(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    o.fail(key, "expected a non-negative integer");
  return v.get<std::uint64_t>();
}

// Reads and verifies one shard file named in the manifest.
RankState read_shard(const std::string& dir, JsonObject f, const std::string& where) {
  const std::string name = f.string("name");
  const std::int64_t rank = f.integer("rank");
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
  const std::string at = fmt::format("{}: {}", where, name);
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(dir) / name, ec)) throw ConfigError(at + ": missing");
  const std::string data = read_file_bytes((fs::path(dir) / name).string());
  if (data.size() != bytes)
    throw ConfigError(fmt::format("{}: truncated or oversized (expected {} bytes, found {})", at, bytes, data.size()));
  if (const std::string got = fmt::format("{:08x}", crc32(data)); got != crc)
    throw ConfigError(fmt::format("{}: checksum mismatch (manifest crc32 {}, file {})", at, crc, got));
  RankState r = decode_rank_state(data, at);
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
    o.fail("fingerprint", fmt::format("saved for another model ({}; this plan's model is {})",
                                      json_excerpt(nlohmann::json(fp)), fingerprint));
  TrainerState s;
  s.step = o.integer_in("step", input_range::kSteps);
  s.data.next_sample = unsigned_field(o, "next_sample");
  s.seed = unsigned_field(o, "seed");
  s.dp_shard = int(o.integer_in("dp_shard", input_range::kDegree));
  s.dp_replicate = int(o.integer_in("dp_replicate", input_range::kDegree));
  const std::vector<UnitShardState> units = parse_units(o, format == kCheckpointFormat1);
  for (const auto& [f, p] : o.array("files")) s.ranks.push_back(read_shard(dir, JsonObject(*f, o.file(), p), where));
  o.finish();
  for (RankState& r : s.ranks) {
    bool same = r.units.size() == units.size();
    for (std::size_t u = 0; same && u < units.size(); ++u) same = r.units[u].unit_numel == units[u].unit_numel;
    if (!same)
      throw ConfigError(fmt::format("{}: {}: units differ from the manifest's units", where, rank_file_name(r.rank)));
    for (std::size_t u = 0; u < units.size(); ++u) r.units[u].modules = units[u].modules;
  }
  return s;
}

}  // namespace

std::string plan_fingerprint(const Plan& plan) {
  return fmt::format("{:016x}", fnv1a64(model_spec_to_json(plan.model).dump()));
}

std::string checkpoint_dir_name(std::int64_t step) { return fmt::format("step-{:06d}", step); }

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
  std::string h(buf);
  std::replace(h.begin(), h.end(), '-', '_');  // '-' separates the name's fields
  return h;
}

bool process_alive(long pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }

}  // namespace

void remove_stale_temporaries(const std::string& root) {
  // "step-N.tmp-<host>-<pid>" (and the older "step-N.tmp-<pid>"): a save that died before its rename.
  // Only this host's names whose process is gone: a live pid may be a concurrent save.
  static const std::regex kTmp(R"(step-[0-9]+\.tmp-(?:(.+)-)?([0-9]+))");
  const std::string host = host_name();
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (!std::regex_match(name, m, kTmp) || (m[1].matched && m[1] != host)) continue;
    const std::string digits = m[2];
    long pid = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), pid).ec != std::errc()) continue;  // no pid
    if (!process_alive(pid)) stale.push_back(it->path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

void prepare_checkpoint_dir(const std::string& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw WriteError(fmt::format("{}: cannot create the checkpoint directory: {}", root, ec.message()));
  if (!fs::is_directory(root, ec)) throw WriteError(fmt::format("{}: not a directory (--checkpoint-dir)", root));
  // A save creates a directory in root and files in it: try both (permissions, read-only mounts, quotas).
  const fs::path probe = fs::path(root) / fmt::format(".fsdpx-probe-{}-{}", host_name(), ::getpid());
  fs::create_directory(probe, ec);
  if (ec) throw WriteError(fmt::format("{}: cannot create directories in it: {}", root, ec.message()));
  try {
    write_file_durable((probe / "probe").string(), "probe");
  } catch (const WriteError&) {
    fs::remove_all(probe, ec);
    throw;
  }
  fs::remove_all(probe, ec);
}

namespace {

// Writes the shard files and the manifest into `tmp` and makes them durable.
void write_checkpoint_files(const fs::path& tmp, const TrainerState& s, const std::string& fingerprint) {
  std::vector<std::string> files, bytes;
  for (const RankState& r : s.ranks) {
    files.push_back(rank_file_name(r.rank));
    bytes.push_back(encode_rank_state(r));
    write_file_durable((tmp / files.back()).string(), bytes.back());
  }
  write_file_durable((tmp / "manifest.json").string(), manifest_json(s, fingerprint, files, bytes).dump(2) + "\n");
  fsync_directory(tmp.string());
}

}  // namespace

std::string save_checkpoint(const std::string& root, const TrainerState& s, const std::string& fingerprint) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw WriteError(fmt::format("{}: cannot create checkpoint directory: {}", root, ec.message()));
  const fs::path final_dir = fs::path(root) / checkpoint_dir_name(s.step);
  const fs::path tmp =
      fs::path(root) / fmt::format("{}.tmp-{}-{}", checkpoint_dir_name(s.step), host_name(), ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) throw WriteError(fmt::format("{}: cannot create: {}", tmp.string(), ec.message()));
  try {
    write_checkpoint_files(tmp, s, fingerprint);
    fs::remove_all(final_dir, ec);  // a re-run of the same step replaces it; older steps stay valid meanwhile
    fs::rename(tmp, final_dir, ec);
    if (ec) throw WriteError(fmt::format("{}: cannot rename to {}: {}", tmp.string(), final_dir.string(), ec.message()));
  } catch (...) {
    fs::remove_all(tmp, ec);  // a failed save leaves nothing behind
    throw;
  }
  fsync_directory(root);
  remove_stale_temporaries(root);
  return final_dir.string();
}

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

std::optional<LoadedCheckpoint> load_latest_checkpoint(const std::string& root, const std::string& fingerprint,
                                                       std::vector<std::string>* rejected_out) {
  std::vector<std::string> rejected;
  for (const auto& [step, dir] : list_checkpoints(root, &rejected)) {
    try {
      return LoadedCheckpoint{read_checkpoint(dir, fingerprint), dir, rejected};
    } catch (const ConfigError& e) {
      rejected.emplace_back(e.what());
    }
  }
  if (rejected_out) *rejected_out = rejected;
  return std::nullopt;
}

}  // namespace fsdpx
