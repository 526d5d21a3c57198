// tests/planner/test_export_schema.cpp — every job config fsdpx exports, for every torchtitan release it
// names, checked against that release's schema (tests/data/torchtitan/job_config_<v>.json, derived from
// the release's torchtitan/config/job_config.py by tools/torchtitan_schema.py): each section and key
// exists (torchtitan's ConfigManager rejects unknown fields), each value has the key's type, and Literal
// keys hold one of their choices. The checker itself is shown to reject 0.2.0's [training] seed in 0.2.2.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "planner/export_torchtitan.h"
#include "planner/target.h"

namespace fsdpx {
namespace {

nlohmann::json schema(const std::string& version) {
  std::ifstream in(std::string(FSDPX_TEST_DATA_DIR) + "/torchtitan/job_config_" + version + ".json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The type of a TOML value as fsdpx writes them: "..." strings, true/false, integers, floats.
std::string toml_type(const std::string& v) {
  if (!v.empty() && v.front() == '"') return "str";
  if (!v.empty() && v.front() == '[') return "list";
  if (v == "true" || v == "false") return "bool";
  if (v.find_first_of(".eEn") != std::string::npos) return "float";
  return "int";
}

// Problems of `toml` against `sections` (empty when it loads).
std::vector<std::string> problems(const std::string& toml, const nlohmann::json& sections) {
  std::vector<std::string> out;
  std::istringstream in(toml);
  std::string line;
  const nlohmann::json* section = nullptr;
  std::string name;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      name = line.substr(1, line.find(']') - 1);
      section = &sections;
      for (std::size_t start = 0;;) {
        const std::size_t dot = name.find('.', start);
        const std::string part = name.substr(start, dot - start);
        if (!section->contains(part) || !(*section)[part].contains("section")) {
          out.push_back("unknown section [" + name + "]");
          section = nullptr;
          break;
        }
        section = &(*section)[part]["section"];
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      continue;
    }
    const auto eq = line.find(" = ");
    if (eq == std::string::npos || !section) {
      out.push_back("not a key of a known section: " + line);
      continue;
    }
    const std::string key = line.substr(0, eq), value = line.substr(eq + 3);
    if (!section->contains(key)) {
      out.push_back(name + "." + key + ": no such key");
      continue;
    }
    const nlohmann::json& k = (*section)[key];
    const auto& types = k["types"];
    if (std::find(types.begin(), types.end(), toml_type(value)) == types.end())
      out.push_back(name + "." + key + ": " + toml_type(value) + " not in " + types.dump());
    if (k.contains("choices") && toml_type(value) == "str") {
      const std::string text = value.substr(1, value.size() - 2);
      if (std::find(k["choices"].begin(), k["choices"].end(), text) == k["choices"].end())
        out.push_back(name + "." + key + ": \"" + text + "\" not in " + k["choices"].dump());
    }
  }
  return out;
}

Plan plan_of(int nodes, Parallelism par, int blocks_per_unit, RecomputeMode rc) {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = nodes;
  TrainingSettings t;
  t.seq = 8192, t.micro_batch = 1, t.global_batch = 64, t.seed = 3;
  return default_plan(load_model(nodes > 1 ? "llama3.1-70b" : "llama3.1-8b"), c, t, par, blocks_per_unit, rc);
}

std::vector<Plan> plans() {
  Parallelism fsdp8;
  fsdp8.dp_shard = 8;
  Parallelism hsdp;
  hsdp.dp_replicate = 2, hsdp.dp_shard = 4, hsdp.tp = 2, hsdp.cp = 2, hsdp.sequence_parallel = true;
  hsdp.data_parallel = DataParallel::hsdp;
  std::vector<Plan> out{plan_of(1, fsdp8, 1, RecomputeMode::selective_op), plan_of(4, hsdp, 2, RecomputeMode::full)};
  Parallelism pipelined;
  pipelined.pp = 2, pipelined.vpp = 2, pipelined.pp_schedule = PipelineSchedule::interleaved_1f1b;
  pipelined.dp_shard = 8, pipelined.tp = 2, pipelined.sequence_parallel = true;
  out.push_back(plan_of(4, pipelined, 1, RecomputeMode::none));
  Plan ddp = out[0];
  ddp.parallelism.data_parallel = DataParallel::ddp;
  for (auto& u : ddp.units) u.reshard_after_forward = 0;
  out.push_back(ddp);
  Plan nth = out[0];
  for (std::size_t i = 0; i < nth.recompute.size(); ++i) nth.recompute[i] = i % 3 == 2 ? RecomputeMode::full : RecomputeMode::none;
  nth.optimizer.grad_clip_norm = 0;
  nth.precision.reduce = DType::bf16;
  out.push_back(nth);
  return out;
}

}  // namespace

TEST_CASE("exports of every release load against that release's job-config schema") {
  for (const std::string& v : torchtitan_versions()) {
    const nlohmann::json s = schema(v);
    CHECK(s["torchtitan"] == v);
    for (const Plan& p : plans()) {
      const std::string toml = torchtitan_toml(p, "schema test", v);
      const std::vector<std::string> bad = problems(toml, s["sections"]);
      CAPTURE(v);
      CAPTURE(toml);
      CHECK(bad.empty());
      for (const auto& b : bad) MESSAGE(b);
    }
  }
}

TEST_CASE("the seed moved from [training] (0.2.0) to [debug] (0.2.1, 0.2.2), and the checker notices") {
  const Plan p = plans().front();
  const std::string old_toml = torchtitan_toml(p, "x", "0.2.0");
  const std::string new_toml = torchtitan_toml(p, "x", "0.2.2");
  CHECK(old_toml.find("[debug]") == std::string::npos);
  CHECK(new_toml.find("[debug]\nseed = 3\n") != std::string::npos);
  CHECK(problems(old_toml, schema("0.2.0")["sections"]).empty());
  const std::vector<std::string> bad = problems(old_toml, schema("0.2.2")["sections"]);
  REQUIRE(bad.size() == 1);
  CHECK(bad[0] == "training.seed: no such key");
  CHECK_FALSE(problems(new_toml, schema("0.2.0")["sections"]).empty());  // 0.2.0 has no [debug]
}

TEST_CASE("targets: named releases parse, 0.3 and unknown names are one-line errors") {
  CHECK(target_name(parse_target("torchtitan@0.2.1", "t")) == "torchtitan@0.2.1");
  CHECK(target_name(parse_target("fsdpx", "t")) == "fsdpx");
  CHECK(target_name(default_torchtitan_target()) == "torchtitan@0.2.2");
  CHECK_THROWS_WITH_AS(parse_target("torchtitan@0.3.0", "t"), doctest::Contains("Python"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_target("torchtitan@9", "t"), doctest::Contains("accepted"), ConfigError);
  CHECK_THROWS_AS(parse_target("megatron", "t"), ConfigError);
  CHECK_THROWS_AS(torchtitan_settings(plans().front(), "0.1.0"), ConfigError);
}

}  // namespace fsdpx
