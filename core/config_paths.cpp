// core/config_paths.cpp — maps a config name ("llama3.1-8b") to <dir>/<kind>/<name>.json, searching
// $FSDPX_CONFIG_DIR, <binary>/../share/fsdpx/configs (installed), <binary>/configs and the source
// tree (FSDPX_SOURCE_CONFIG_DIR, compiled in). A path is used as given. Leaves out remote registries
// (no downloads of Hugging Face configs: pass a local config.json path).
#include "core/config_paths.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/errors.h"
#include "core/json_reader.h"

#ifndef FSDPX_SOURCE_CONFIG_DIR
#define FSDPX_SOURCE_CONFIG_DIR ""
#endif

namespace fsdpx {

namespace {

namespace fs = std::filesystem;

// Config roots in search order; only those that exist as directories.
std::vector<fs::path> config_roots() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("FSDPX_CONFIG_DIR"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / ".." / "share" / "fsdpx" / "configs");
    candidates.push_back(exe.parent_path() / "configs");
  }
  if (*FSDPX_SOURCE_CONFIG_DIR != '\0') candidates.emplace_back(FSDPX_SOURCE_CONFIG_DIR);
  std::vector<fs::path> roots;
  for (auto& c : candidates)
    if (fs::is_directory(c, ec)) roots.push_back(c.lexically_normal());
  return roots;
}

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && s.ends_with(".json"));
}

std::string singular(const std::string& kind) {
  return kind.ends_with('s') ? kind.substr(0, kind.size() - 1) : kind;
}

}  // namespace

std::string resolve_config(const std::string& kind, const std::string& name_or_path) {
  if (file_exists(name_or_path)) return name_or_path;
  // A Hugging Face model folder: its config.json.
  if (kind == "models" && file_exists(fs::path(name_or_path) / "config.json"))
    return (fs::path(name_or_path) / "config.json").string();
  if (looks_like_path(name_or_path)) throw ConfigError(fmt::format("{}: cannot open file", name_or_path));
  const auto roots = config_roots();
  for (const auto& root : roots) {
    const fs::path p = root / kind / (name_or_path + ".json");
    if (file_exists(p)) return p.string();
  }
  std::vector<std::string> searched;
  for (const auto& root : roots) searched.push_back((root / kind).string());
  throw ConfigError(fmt::format(
      "unknown {} \"{}\": known names are {} (searched {}; a path to a .json file also works)",
      singular(kind), name_or_path, fmt::join(list_configs(kind), ", "),
      searched.empty() ? std::string("no config directory") : fmt::format("{}", fmt::join(searched, ", "))));
}

std::vector<std::string> list_configs(const std::string& kind) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& root : config_roots()) {
    for (fs::directory_iterator it(root / kind, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".json" && file_exists(it->path()))
        names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

ModelSpec load_model(const std::string& name_or_path) {
  const std::string path = resolve_config("models", name_or_path);
  return parse_model_spec(load_json_file(path), path);
}

GpuSpec load_gpu(const std::string& name_or_path) {
  const std::string path = resolve_config("gpus", name_or_path);
  return parse_gpu_spec(load_json_file(path), path);
}

ClusterSpec load_cluster(const std::string& name_or_path) {
  const std::string path = resolve_config("clusters", name_or_path);
  return parse_cluster_spec(load_json_file(path), path, &load_gpu);
}

}  // namespace fsdpx
