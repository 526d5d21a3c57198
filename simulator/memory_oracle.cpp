// simulator/memory_oracle.cpp — reads the FSDP2 memory-tracker fixtures, builds torchtitan's plan for
// each configuration and compares simulated allocated bytes with the tracker's peak.
#include "simulator/memory_oracle.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/input_ranges.h"
#include "core/json_reader.h"
#include "simulator/simulate.h"
#include "simulator/validation_case.h"

namespace fsdpx {
namespace {

constexpr int kGpusPerNode = 8;

// The tracker's "total" of the snapshot at `key`; its per-kind entries are documentation here.
double snapshot_total(JsonObject& parent, std::string_view key) {
  const nlohmann::json& j = parent.raw(key);
  JsonObject snap(j, parent.file(), parent.path_of(key));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "total") snap.ignore(it.key());
  const double total = snap.non_negative_number("total");
  snap.finish();
  return total;
}

OracleMeasurement read_measurement(JsonObject t) {
  OracleMeasurement m;
  m.step_start_bytes = snapshot_total(t, "step_start");
  m.forward_backward_peak_bytes = snapshot_total(t, "forward_backward_peak");
  m.optimizer_peak_bytes = snapshot_total(t, "optimizer_peak");
  t.ignore("step_end");
  JsonObject at = t.object("forward_backward_peak_at");
  m.peak_module = at.string("module");
  m.peak_phase = at.choice("phase", {"forward", "backward", "loss"});
  at.finish();
  t.finish();
  return m;
}

// The world of the configuration on DGX H100 nodes of 8 GPUs (the fake process group has no fabric;
// the cluster only sizes time, not memory).
ClusterSpec oracle_cluster(int world) {
  ClusterSpec cl = load_cluster("dgx-h100");
  cl.gpus_per_node = std::min(kGpusPerNode, world);
  cl.nodes = (world + cl.gpus_per_node - 1) / cl.gpus_per_node;
  cl.gpus = world % cl.gpus_per_node == 0 ? 0 : world;
  return cl;
}

ModelSpec oracle_model(JsonObject& c) {
  ModelSpec m;
  m.name = c.string("model");
  m.arch = Arch::llama;
  m.layers = c.integer_in("layers", input_range::kLayers);
  m.hidden = c.positive_integer("hidden");
  m.heads = c.positive_integer("heads");
  m.kv_heads = c.positive_integer("kv_heads");
  m.head_dim = m.hidden / m.heads;
  m.ffn_hidden = c.positive_integer("ffn");
  m.ffn_kind = FfnKind::swiglu;
  m.vocab = c.positive_integer("vocab");
  return m;
}

// torchtitan's run of the configuration: apply_fsdp's units (default_plan), bf16 parameters with fp32
// reduction, SP with TP, the recompute named, every unit kept unsharded after forward when
// reshard_after_forward is off.
OracleCase read_case(JsonObject c) {
  OracleCase oc;
  oc.id = c.string("id");
  ModelSpec m = oracle_model(c);
  Parallelism par;
  par.dp_shard = int(c.positive_integer("dp_shard"));
  par.dp_replicate = int(c.positive_integer("dp_replicate"));
  par.tp = int(c.positive_integer("tp"));
  par.sequence_parallel = par.tp > 1;
  par.data_parallel = par.dp_replicate > 1 ? DataParallel::hsdp : DataParallel::fsdp_full_shard;
  TrainingSettings t;
  t.micro_batch = c.positive_integer("micro_batch");
  t.seq = c.positive_integer("seq");
  t.global_batch = t.micro_batch * par.data_parallel_ranks();
  m.max_seq = t.seq;
  const std::string ac = c.choice("ac", {"none", "selective_op", "full"});
  const RecomputeMode r = ac == "full" ? RecomputeMode::full : ac == "none" ? RecomputeMode::none : RecomputeMode::selective_op;
  oc.plan = default_plan(m, oracle_cluster(par.world_size()), t, par, 1, r);
  if (!c.boolean("reshard_after_forward"))
    for (PlanUnit& u : oc.plan.units) u.reshard_after_forward = 0;
  oc.plan.framework = Framework::torchtitan;
  oc.plan.attention_kernel = framework_attention_kernel("torchtitan");
  validate_plan(oc.plan, c.file() + ": " + c.path());
  oc.measured = read_measurement(c.object("tracker"));
  c.finish();
  return oc;
}

}  // namespace

std::vector<OracleCase> load_oracle_cases(const std::string& path) {
  const nlohmann::json j = load_json_file(path);
  JsonObject top(j, path);
  if (top.string("format") != "fsdpx-fsdp2-memory-oracle/1")
    top.fail("format", "expected \"fsdpx-fsdp2-memory-oracle/1\"");
  top.ignore("torch");
  top.ignore("device");
  top.ignore("generator");
  std::vector<OracleCase> cases;
  for (const auto& [item, where] : top.array("configurations")) cases.push_back(read_case(JsonObject(*item, path, where)));
  top.finish();
  return cases;
}

std::vector<OracleComparison> compare_with_oracle(const std::vector<OracleCase>& cases) {
  std::vector<OracleComparison> out;
  for (const OracleCase& c : cases) {
    const Simulation sim = simulate(c.plan);
    OracleComparison row;
    row.id = c.id;
    row.measured_bytes = c.measured.peak_bytes();
    row.predicted_bytes = sim.peak_memory_total_bytes - sim.peak_memory_bytes[std::size_t(MemCategory::other)];
    row.predicted_peak_op = sim.peak_memory_op;
    row.predicted_by_category = sim.peak_memory_bytes;
    row.measured_peak_at = c.measured.peak_phase + (c.measured.peak_module.empty() ? "" : " " + c.measured.peak_module);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace fsdpx
