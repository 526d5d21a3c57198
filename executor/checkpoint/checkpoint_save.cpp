// executor/checkpoint/checkpoint_save.cpp — the save protocol of checkpoint.h for one process or many.
// Phase 1: the leader creates the staging directory. Phase 2: every process writes and fsyncs the shard
// files of the owners it hosts there. Phase 3: once every process has reported its files durable (sizes and
// CRC-32s summed over the processes), the leader writes the manifest and renames the directory into place.
// After each phase the processes agree on success, so all of them return or all throw; a failed save
// removes its staging directory. The same steps with one process are the single-process save.
#include "executor/checkpoint/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <filesystem>
#include <regex>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/output_file.h"
#include "core/stale_temporaries.h"
#include "executor/checkpoint/adapter_file.h"
#include "executor/checkpoint/checkpoint_verify.h"
#include "executor/checkpoint/checksum.h"
#include "executor/checkpoint/loss_scaler_json.h"
#include "executor/checkpoint/shard_file.h"

namespace fsdpx {

namespace {

namespace fs = std::filesystem;

// "step-N.tmp-<host>-<pid>" for one process, "step-N.tmp-job-<token>" for the processes of a job.
std::string staging_name(std::int64_t step, const CheckpointGroup& group) {
  if (group.job_token.empty()) return fmt::format("{}.tmp-{}-{}", checkpoint_dir_name(step), host_name(), ::getpid());
  return fmt::format("{}.tmp-job-{}", checkpoint_dir_name(step), group.job_token);
}

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

// One shard file as the manifest lists it.
struct FileEntry {
  int rank = 0;
  std::uint64_t bytes = 0;
  std::uint32_t crc = 0;
};

// `local` holds rank 0 (the leader's units stand for every rank's: the shard set check verifies them
// against every file when the checkpoint is read); `adapters` is the LoRA adapters' file (rank -1: none).
nlohmann::json manifest_json(const TrainerState& local, const std::string& fingerprint,
                             const std::vector<FileEntry>& files, const FileEntry& adapters) {
  nlohmann::json entries = nlohmann::json::array();
  for (const FileEntry& f : files)
    entries.push_back({{"name", shard_file_name(f.rank)},
                       {"rank", f.rank},
                       {"bytes", f.bytes},
                       {"crc32", fmt::format("{:08x}", f.crc)}});
  nlohmann::json manifest{{"format", kCheckpointFormat}, {"fingerprint", fingerprint}, {"step", local.step},
                          {"next_sample", local.data.next_sample}, {"seed", local.seed},
                          {"dp_shard", local.dp_shard}, {"dp_replicate", local.dp_replicate},
                          {"units", units_json(local)}, {"files", entries}};
  if (local.loss_scaler) manifest["loss_scaler"] = loss_scaler_json(*local.loss_scaler);
  if (adapters.rank >= 0)
    manifest["adapters"] = {{"name", kAdapterFileName}, {"numel", local.adapters.params.size()},
                            {"bytes", adapters.bytes}, {"crc32", fmt::format("{:08x}", adapters.crc)}};
  manifest["checksum"] = manifest_checksum(manifest);
  return manifest;
}

// Runs fn(); its WriteError or ConfigError message, or "" when it succeeded.
template <class F>
std::string attempt(F&& fn) {
  try {
    fn();
  } catch (const WriteError& e) {
    return e.what();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Every process learns whether any failed; all throw (with their own message, or `others`) or none does.
void agree(const CheckpointGroup& group, const std::string& error, const std::string& others) {
  if (group.sum({error.empty() ? 0u : 1u})[0] == 0) return;
  throw WriteError(error.empty() ? others : error);
}

void create_staging(const fs::path& root, const fs::path& staging) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw WriteError(fmt::format("{}: cannot create checkpoint directory: {}", root.string(), ec.message()));
  fs::remove_all(staging, ec);
  fs::create_directory(staging, ec);
  if (ec) throw WriteError(fmt::format("{}: cannot create: {}", staging.string(), ec.message()));
}

// Writes `bytes` durably as staging/name; its manifest entry.
FileEntry write_listed_file(const fs::path& staging, const std::string& name, int rank, const std::string& bytes) {
  write_file_durable((staging / name).string(), bytes);
  return FileEntry{rank, bytes.size(), crc32(bytes)};
}

// Writes this process's shard files, and the leader the LoRA adapters' file into `adapters` (rank 0; left
// as it is without LoRA); returns, per owner slot 0..dp_shard-1, its bytes and CRC (0 where another process
// owns it) after a failure count.
std::vector<std::uint64_t> write_local_shards(const fs::path& staging, const TrainerState& local, bool leader,
                                              FileEntry& adapters, std::string& error) {
  std::vector<std::uint64_t> words(1 + 2 * std::size_t(local.dp_shard), 0);
  error = attempt([&] {
    if (leader && !local.adapters.params.empty())
      adapters = write_listed_file(staging, kAdapterFileName, 0, encode_adapter_state(local.adapters));
    for (const RankState& r : local.ranks) {
      FSDP_CHECK(r.rank >= 0 && r.rank < local.dp_shard, "save_checkpoint: a shard owner outside 0..dp_shard-1");
      const FileEntry f = write_listed_file(staging, shard_file_name(r.rank), r.rank, encode_rank_state(r));
      words[1 + 2 * std::size_t(r.rank)] = f.bytes;
      words[2 + 2 * std::size_t(r.rank)] = f.crc;
    }
  });
  words[0] = error.empty() ? 0 : 1;
  return words;
}

// The leader's commit: the manifest from every process's files, then the rename into place.
void commit(const fs::path& root, const fs::path& staging, const TrainerState& local, const std::string& fingerprint,
            const std::vector<std::uint64_t>& files, const FileEntry& adapters) {
  std::vector<FileEntry> entries;
  for (int r = 0; r < local.dp_shard; ++r) {
    const std::uint64_t bytes = files[1 + 2 * std::size_t(r)];
    if (bytes == 0) throw WriteError(fmt::format("{}: no process wrote the shard of rank {}", staging.string(), r));
    entries.push_back({r, bytes, std::uint32_t(files[2 + 2 * std::size_t(r)])});
  }
  write_file_durable((staging / "manifest.json").string(),
                     manifest_json(local, fingerprint, entries, adapters).dump(2) + "\n");
  fsync_directory(staging.string());
  const fs::path final_dir = root / checkpoint_dir_name(local.step);
  std::error_code ec;
  fs::remove_all(final_dir, ec);  // a re-run of the same step replaces it; older steps stay valid meanwhile
  fs::rename(staging, final_dir, ec);
  if (ec)
    throw WriteError(fmt::format("{}: cannot rename to {}: {}", staging.string(), final_dir.string(), ec.message()));
  fsync_directory(root.string());
  remove_stale_temporaries(root.string(), local.step);
}

}  // namespace

std::string shard_file_name(int rank) { return fmt::format("rank-{:05d}.bin", rank); }

void remove_stale_temporaries(const std::string& root, std::int64_t committed_step) {
  // "step-N.tmp-<host>-<pid>" (and the older "step-N.tmp-<pid>"): a save of one process that died before its
  // rename; only this host's names whose process is gone (a live pid may be a concurrent save).
  // "step-N.tmp-job-<token>": a job's save that died; stale once step N or a later one is committed.
  static const std::regex kTmp(R"(step-[0-9]+\.tmp-(?:(.+)-)?([0-9]+))");
  static const std::regex kJobTmp(R"(step-([0-9]+)\.tmp-job-[0-9a-f]+)");
  // ".fsdpx-probe-<host>-<pid>": prepare_checkpoint_dir's probe of a process killed during start-up.
  static const std::regex kProbe(R"(\.fsdpx-probe-(.+)-([0-9]+))");
  const std::string host = host_name();
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, m, kJobTmp)) {
      const std::string digits = m[1];
      std::int64_t step = 0;
      const bool parsed = std::from_chars(digits.data(), digits.data() + digits.size(), step).ec == std::errc();
      if (parsed && step <= committed_step) stale.push_back(it->path());
      continue;
    }
    if (!std::regex_match(name, m, kTmp) && !std::regex_match(name, m, kProbe)) continue;
    if (m[1].matched && m[1] != host) continue;
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
  remove_stale_temporaries(root, -1);  // dead processes' probes and saves; no job save is stale yet
  // A save creates a directory in root and files in it: try both (permissions, read-only mounts, quotas).
  const fs::path probe = fs::path(root) / fmt::format(".fsdpx-probe-{}-{}", host_name(), ::getpid());
  fs::create_directory(probe, ec);
  if (ec) throw WriteError(fmt::format("{}: cannot create directories in it: {}", root, ec.message()));
  const std::string error = attempt([&] { write_file_durable((probe / "probe").string(), "probe"); });
  fs::remove_all(probe, ec);
  if (!error.empty()) throw WriteError(error);
}

std::string save_checkpoint(const std::string& root, const TrainerState& local, const std::string& fingerprint,
                            const CheckpointGroup& group) {
  const fs::path staging = fs::path(root) / staging_name(local.step, group);
  const std::string where = fmt::format("{}: checkpoint of step {}", root, local.step);
  std::string error;
  if (group.leader) error = attempt([&] { create_staging(root, staging); });
  agree(group, error, where + ": the leading process could not create the staging directory");
  FileEntry adapters{-1, 0, 0};
  std::vector<std::uint64_t> files = group.sum(write_local_shards(staging, local, group.leader, adapters, error));
  if (files[0] > 0) {
    std::error_code ec;
    if (group.leader) fs::remove_all(staging, ec);  // every process is done writing: it reported
    throw WriteError(error.empty() ? fmt::format("{}: {} process(es) could not write their shards", where, files[0])
                                   : error);
  }
  if (group.leader) {
    error = attempt([&] { commit(root, staging, local, fingerprint, files, adapters); });
    std::error_code ec;
    if (!error.empty()) fs::remove_all(staging, ec);  // a failed save leaves nothing behind
  }
  agree(group, error, where + ": the leading process could not commit it");
  return (fs::path(root) / checkpoint_dir_name(local.step)).string();
}

}  // namespace fsdpx
