// tests/fuzz/fuzz_targets.cpp — loaders and downstream work per input kind for the fuzz test. Downstream of
// a model, GPU or cluster: parameter counts, FLOPs, `fsdpx estimate`'s estimate, and the default plan
// validated, round-tripped and simulated; of a plan: simulation, round trip, estimate, the CPU runtime's
// program and the torchtitan export; of a case file: every case simulated; of a checkpoint: verification
// and resharding. Simulator errors name the input file as the commands do (with_errors_naming).
#include "tests/fuzz/fuzz_targets.h"

#include <algorithm>
#include <exception>
#include <fstream>
#include <iterator>

#include "core/config_paths.h"
#include "core/json_reader.h"
#include "core/model_spec_moe.h"
#include "core/plan.h"
#include "cost_models/estimate.h"
#include "cost_models/moe_params.h"
#include "cost_models/params.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/reshard.h"
#include "executor/checkpoint/safetensors.h"
#include "executor/checkpoint/shard_file.h"
#include "executor/runtime/runtime_program.h"
#include "planner/export_torchtitan.h"
#include "planner/target.h"
#include "simulator/simulate.h"
#include "simulator/validate.h"

namespace fsdpx::fuzz {

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<Seed> seeds_in(const std::vector<fs::path>& files, bool json = true) {
  std::vector<Seed> out;
  for (const fs::path& f : files) {
    Seed s{f.string(), slurp(f), {}};
    if (json) s.json = nlohmann::json::parse(s.text);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// "" when `msg` is one short line starting with `prefix` (the file, and ": /" where a JSON path is due).
std::string message_problem(const std::string& msg, const std::string& prefix) {
  if (!msg.starts_with(prefix)) return "message does not start with '" + prefix + "': " + one_line(msg, 300);
  if (msg.find('\n') != std::string::npos || msg.find('\r') != std::string::npos) return "message on several lines";
  if (msg.size() > 1500) return "message of " + std::to_string(msg.size()) + " characters";
  return "";
}

// Runs body(); classifies what escapes it.
template <class F>
std::string guarded(const std::string& prefix, F&& body) {
  try {
    body();
    return kLoaded;
  } catch (const ConfigError& e) {
    const std::string problem = message_problem(e.what(), prefix);
    return problem.empty() ? kRejected : problem;
  } catch (const std::exception& e) {
    return "escaped a non-input exception: " + one_line(e.what(), 300);
  }
}

// A plan must read back as itself (the writer and the strict reader agree on every value it holds).
void check_round_trip(const Plan& p, const std::string& file) {
  const nlohmann::json once = plan_to_json(p);
  const nlohmann::json twice = plan_to_json(parse_plan(once, file));
  if (once != twice) throw std::runtime_error("a loaded plan does not round-trip through plan_to_json");
}

Simulation simulate_named(const Plan& p, const std::string& file) {
  EngineOptions eo;
  eo.record_ops = false;
  return with_errors_naming(file, "plan", [&] { return simulate(p, eo); });
}

// What `fsdpx estimate` and `fsdpx plan` do with a model on a cluster: the estimate over every rank as
// dp_shard, and the default plan validated, round-tripped and simulated.
void model_on_cluster(const ModelSpec& m, const ClusterSpec& c, const std::string& file) {
  const int world = c.world_size();
  const std::int64_t seq = std::min<std::int64_t>(m.max_seq, 2048);
  TrainingShape s;
  s.dp_shard = world;
  s.seq = seq;
  if (has_moe_parts(m)) {  // MoE / MLA (issue 30): counted and estimated, refused where not simulated
    count_moe_params(m).total();
    moe_model_flops_per_token(m, seq);
    estimate(m, c, s);
    refuse_unplanned_model(m, file, "/");
    return;
  }
  count_params(m).total();
  model_flops_per_token(m, seq);
  estimate(m, c, s);
  Parallelism par;
  par.dp_shard = world;
  const TrainingSettings t{seq, 1, world, 0, 0.0};
  const Plan p = default_plan(m, c, t, par, 1, RecomputeMode::none);
  validate_plan(p, file);
  check_round_trip(p, file);
  simulate_named(p, file);
}

Target model_target(const std::string& name, std::vector<Seed> seeds, const ClusterSpec& cluster) {
  return {name, std::move(seeds), false,
          [cluster](const std::string& input, const Seed& seed) {
            return guarded(seed.name + ": /", [&] {
              model_on_cluster(parse_model_spec(parse_json_text(input, seed.name), seed.name), cluster, seed.name);
            });
          },
          {{"estimate", "--model", "{}", "--cluster", "dgx-h100", "--nodes", "1"},
           {"plan", "--model", "{}", "--cluster", "dgx-h100", "--nodes", "1", "--seq", "1024", "--global-batch", "64"}}};
}

Target gpu_target(const fs::path& configs, const ClusterSpec& node, const ModelSpec& model) {
  return {"gpu", seeds_in(json_files(configs / "gpus")), false, [node, model](const std::string& input, const Seed& s) {
            return guarded(s.name + ": /", [&] {
              ClusterSpec c = node;
              c.gpu = parse_gpu_spec(parse_json_text(input, s.name), s.name);
              model_on_cluster(model, c, s.name);
            });
          }};
}

Target cluster_target(const fs::path& configs, const ModelSpec& model) {
  return {"cluster", seeds_in(json_files(configs / "clusters")), false,
          [model](const std::string& input, const Seed& s) {
            return guarded(s.name + ": /", [&] {
              model_on_cluster(model, parse_cluster_spec(parse_json_text(input, s.name), s.name, &load_gpu), s.name);
            });
          },
          {{"plan", "--model", "llama3.2-1b", "--cluster", "{}", "--world-size", "8", "--seq", "1024", "--global-batch",
            "64"}}};
}

Target plan_target(const fs::path& configs, const fs::path& data) {
  std::vector<fs::path> files = json_files(configs / "plans");
  files.push_back(data / "plans" / "llama-tiny-cpu.json");
  return {"plan", seeds_in(files), false, [](const std::string& input, const Seed& s) {
            return guarded(s.name + ": /", [&] {
              const Plan p = parse_plan(parse_json_text(input, s.name), s.name);
              check_round_trip(p, s.name);
              simulate_named(p, s.name);
              estimate(p.model, p.cluster, training_shape_of(p));
              const std::string version = default_torchtitan_target().version;
              const Plan closest = torchtitan_closest_plan(p, torchtitan_settings(p, version));
              torchtitan_toml(p, "fuzz", version, &closest);
              with_errors_naming(s.name, "plan", [&] { return make_runtime_program(p); });
            });
          },
          {{"simulate", "--plan", "{}"}, {"export", "--plan", "{}", "--format", "torchtitan"}}};
}

Target cases_target(const fs::path& data) {
  return {"cases", seeds_in({data / "validation" / "tiny_cases.json"}), false,
          [](const std::string& input, const Seed& s) {
            return guarded(s.name + ": /", [&] {
              validation_text(run_validation(parse_validation_cases(parse_json_text(input, s.name), s.name)));
            });
          },
          {{"validate", "{}"}}};
}

Target safetensors_target(const fs::path& data) {
  return {"safetensors", seeds_in({data / "safetensors" / "tiny.safetensors"}, false), true,
          [](const std::string& input, const Seed& s) {
            return guarded(s.name + ": /", [&] { decode_safetensors(input, s.name); });
          }};
}

// A checkpoint of a 3-unit, 4-rank state at step 6 in `dir`'s parent; returns its directory.
fs::path make_checkpoint(const fs::path& root) {
  const std::vector<std::vector<UnitModule>> units{{{"embedding", 0, 10}, {"block.0", 10, 7}},
                                                   {{"block.1", 0, 33}},
                                                   {{"final_norm", 0, 1}, {"head", 1, 12}}};
  TrainerState s = even_shard_layout(units, 4);
  s.step = 6, s.data.next_sample = 48, s.seed = 7;
  for (RankState& r : s.ranks)
    for (UnitShardState& u : r.units)
      for (std::size_t i = 0; i < u.params.size(); ++i) u.params[i] = float(r.rank * 100 + int(i));
  return save_checkpoint(root.string(), s, "fuzz");
}

// Writes `input` over `file` of the checkpoint in `dir`, then verifies and reshards the checkpoint.
std::string checkpoint_case(const fs::path& dir, const std::string& file, const std::string& input) {
  std::ofstream(dir / file, std::ios::binary | std::ios::trunc) << input;
  return guarded("checkpoint " + dir.string() + ": ", [&] {
    const TrainerState s = read_checkpoint(dir.string(), "fuzz");
    reshard_state(s, s, "checkpoint " + dir.string());
  });
}

std::vector<Target> checkpoint_targets(const fs::path& scratch) {
  const fs::path dir = make_checkpoint(scratch / "manifest");
  const fs::path shard_dir = make_checkpoint(scratch / "shard");
  Target manifest{"manifest", seeds_in({dir / "manifest.json"}), false,
                  [dir](const std::string& input, const Seed&) { return checkpoint_case(dir, "manifest.json", input); }};
  Target shard{"shard", seeds_in({shard_dir / "rank-00001.bin"}, false), true,
               [shard_dir](const std::string& input, const Seed&) {
                 const std::string where = "rank-00001.bin";
                 const std::string decoded = guarded(where + ": ", [&] { decode_rank_state(input, where); });
                 if (decoded != kLoaded && decoded != kRejected) return decoded;
                 return checkpoint_case(shard_dir, "rank-00001.bin", input);
               }};
  return {std::move(manifest), std::move(shard)};
}

}  // namespace

std::vector<std::pair<Target, int>> all_targets(const fs::path& config_dir, const fs::path& data_dir,
                                                const fs::path& scratch) {
  ::setenv("FSDPX_CONFIG_DIR", config_dir.c_str(), 1);
  const ClusterSpec node = load_cluster("dgx-h100");
  const ModelSpec small = load_model("llama3.2-1b");
  std::vector<fs::path> hf;
  for (const auto& e : fs::directory_iterator(data_dir / "hf"))
    if (e.is_directory()) hf.push_back(e.path() / "config.json");  // one directory per published config
  std::sort(hf.begin(), hf.end());
  std::vector<std::pair<Target, int>> out;
  out.emplace_back(model_target("model", seeds_in(json_files(config_dir / "models")), node), 7500);
  out.emplace_back(model_target("hf-config", seeds_in(hf), node), 4000);
  out.emplace_back(gpu_target(config_dir, node, small), 4000);
  out.emplace_back(cluster_target(config_dir, small), 4000);
  out.emplace_back(plan_target(config_dir, data_dir), 7500);
  out.emplace_back(cases_target(data_dir), 2000);
  out.emplace_back(safetensors_target(data_dir), 3000);
  for (Target& t : checkpoint_targets(scratch)) out.emplace_back(std::move(t), 4000);
  return out;
}

}  // namespace fsdpx::fuzz
