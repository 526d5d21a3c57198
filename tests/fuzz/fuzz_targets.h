// tests/fuzz/fuzz_targets.h — the input kinds the fuzz test feeds (fuzz_targets.cpp): for each, its seed
// files and what runs on a mutated input (the loader, then what a command would do with what loaded).
// A target returns kLoaded, kRejected (a well-formed input error) or a description of what went wrong.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsdpx::fuzz {

inline const std::string kLoaded = "loaded";
inline const std::string kRejected = "rejected";

struct Seed {
  std::string name;  // the file name messages must start with
  std::string text;
  nlohmann::json json;  // parsed text (JSON seeds only)
};

struct Target {
  std::string name;
  std::vector<Seed> seeds;
  bool binary = false;  // mutate bytes, not JSON
  std::function<std::string(const std::string& input, const Seed& seed)> run;
  // fsdpx command lines run on some cases' inputs written to a file ("{}" stands for its path).
  std::vector<std::vector<std::string>> cli = {};
};

// Every target with its number of cases at scale 1 (about 30 s of CPU in a Release build). `scratch` is a directory for the checkpoint the manifest and shard targets write into.
std::vector<std::pair<Target, int>> all_targets(const std::filesystem::path& config_dir,
                                                const std::filesystem::path& data_dir,
                                                const std::filesystem::path& scratch);

}  // namespace fsdpx::fuzz
