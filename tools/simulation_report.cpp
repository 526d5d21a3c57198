// tools/simulation_report.cpp — text and JSON views of a simulated step.
#include "tools/simulation_report.h"

#include <fmt/format.h>

#include "program/lower.h"
#include "tools/format.h"
#include "tools/prediction_range.h"

namespace fsdpx {

namespace {
constexpr const char* kPhaseNames[3] = {"forward", "backward", "optimizer"};

// How the step's figures were obtained: every micro-batch simulated, a repeating probe extended, or a line
// through two whole steps (simulator/linear_extrapolation.h).
const char* extrapolation_name(const Simulation& sim) {
  if (sim.linear_extrapolation) return "linear";
  return sim.simulated_micro_batches > 0 ? "periodic" : "none";
}

// The line saying which micro-batches were simulated, empty when all were.
std::string simulated_text(const Simulation& sim, std::int64_t micro_batches) {
  if (sim.linear_extrapolation)
    return fmt::format("  whole steps of {} and {} micro-batches simulated, the step extrapolated linearly from "
                       "them (no probe repeats exactly: an approximation; {})\n",
                       sim.simulated_micro_batches / 2, sim.simulated_micro_batches,
                       micro_batches > kMaxLoweredMicroBatches
                           ? fmt::format("lowering takes at most {}", kMaxLoweredMicroBatches)
                           : std::string("--full: all"));
  if (sim.simulated_micro_batches > 0)
    return fmt::format("  {} micro-batches simulated, the steady state extrapolated to the rest (--full: all)\n",
                       sim.simulated_micro_batches);
  return "";
}
}

nlohmann::json simulation_json(const Plan& plan, const Simulation& sim) {
  nlohmann::json j;
  j["model"] = plan.model.name;
  j["cluster"] = plan.cluster.name;
  j["world_size"] = plan.parallelism.world_size();
  j["step_time_s"] = sim.step_time_s;
  j["tokens_per_s_per_gpu"] = sim.tokens_per_s_per_gpu;
  j["mfu"] = sim.mfu;
  j["hfu"] = sim.hfu;
  j["exposed_comm_s"] = sim.exposed_comm_s;
  j["peak_memory_bytes"] = sim.peak_memory_total_bytes;
  nlohmann::json breakdown;
  for (int c = 0; c < kMemCategoryCount; ++c)
    breakdown[mem_category_name(MemCategory(c))] = sim.peak_memory_bytes[std::size_t(c)];
  j["peak_memory_breakdown_bytes"] = breakdown;
  j["peak_memory_op"] = sim.peak_memory_op;
  j["range_80"] = prediction_range_json(plan, sim.tokens_per_s_per_gpu, sim.step_time_s, sim.peak_memory_total_bytes);
  nlohmann::json phases;
  for (int p = 0; p < 3; ++p)
    phases[kPhaseNames[p]] = {{"compute_s", sim.phases[std::size_t(p)].compute_s},
                              {"exposed_comm_s", sim.phases[std::size_t(p)].exposed_comm_s}};
  j["phases"] = phases;
  j["ops_per_rank"] = sim.ops_per_rank;
  // A step extrapolated from a probe (simulator/simulate_extrapolated.h) says how many it simulated.
  j["simulated_micro_batches"] = sim.simulated_micro_batches > 0 ? sim.simulated_micro_batches : plan.grad_accum();
  j["extrapolation"] = extrapolation_name(sim);
  if (plan.parallelism.pp > 1) {
    j["pp"] = plan.parallelism.pp;
    j["vpp"] = plan.parallelism.vpp;
    j["pp_schedule"] = pipeline_schedule_name(plan.parallelism.pp_schedule);
    j["micro_batches"] = plan.grad_accum();
    j["bubble_fraction"] = sim.bubble_fraction;
    j["peak_memory_stage"] = sim.peak_memory_stage;
    nlohmann::json stages = nlohmann::json::array();
    for (const StageSummary& st : sim.stages)
      stages.push_back({{"compute_s", st.compute_s}, {"idle_fraction", st.idle_fraction},
                        {"peak_memory_bytes", st.peak_memory_bytes}});
    j["stages"] = stages;
  }
  return j;
}

namespace {

// compute and exposed communication per phase of the step.
std::string phases_table(const Simulation& sim) {
  std::vector<std::vector<std::string>> rows{{"phase", "compute", "exposed comm"}};
  for (int p = 0; p < 3; ++p)
    rows.push_back({kPhaseNames[p], seconds(sim.phases[std::size_t(p)].compute_s),
                    seconds(sim.phases[std::size_t(p)].exposed_comm_s)});
  return table(rows);
}

// Per pipeline rank: its compute time, the share of the step its compute stream idles (the bubble and
// exposed communication) and its peak memory.
std::string stages_text(const Plan& plan, const Simulation& sim) {
  const auto& par = plan.parallelism;
  std::string out = fmt::format("Pipeline ({}, pp {} x vpp {}, {} micro-batches; bubble {:.1f} % of the step)\n",
                                pipeline_schedule_name(par.pp_schedule), par.pp, par.vpp, plan.grad_accum(),
                                100 * sim.bubble_fraction);
  std::vector<std::vector<std::string>> rows{{"stage", "compute", "idle", "peak memory"}};
  for (std::size_t r = 0; r < sim.stages.size(); ++r)
    rows.push_back({fmt::format("{}", r), seconds(sim.stages[r].compute_s),
                    fmt::format("{:.1f} %", 100 * sim.stages[r].idle_fraction), gib(sim.stages[r].peak_memory_bytes)});
  return out + table(rows) + "\n";
}

}  // namespace

std::string simulation_text(const Plan& plan, const Simulation& sim) {
  const auto& par = plan.parallelism;
  std::string out = fmt::format(
      "fsdpx simulate: {} on {} ({} GPUs: {}dp_replicate {} x dp_shard {} x cp {} x tp {}, {})\n"
      "  {} units, micro-batch {} x seq {}, {} micro-batches per step, {} ops per rank\n{}\n",
      plan.model.name, plan.cluster.name, par.world_size(), par.pp > 1 ? fmt::format("pp {} x ", par.pp) : "",
      par.dp_replicate, par.dp_shard, par.cp, par.tp, data_parallel_name(par.data_parallel), plan.units.size(), plan.training.micro_batch, plan.training.seq,
      plan.grad_accum(), sim.ops_per_rank, simulated_text(sim, plan.grad_accum()));
  out += "Step\n" + phases_table(sim) + "\n";
  if (par.pp > 1) out += stages_text(plan, sim);
  std::vector<std::vector<std::string>> mem;
  for (int c = 0; c < kMemCategoryCount; ++c)
    mem.push_back({mem_category_name(MemCategory(c)), gib(sim.peak_memory_bytes[std::size_t(c)])});
  mem.push_back({"total", gib(sim.peak_memory_total_bytes)});
  mem.push_back({"GPU memory", gib(plan.cluster.gpu.hbm_bytes)});
  const std::string where = par.pp > 1 ? fmt::format("stage {}, {}", sim.peak_memory_stage, sim.peak_memory_op)
                                       : sim.peak_memory_op;
  out += fmt::format("Memory at the peak (during {})\n", where) + table(mem) + "\n";
  out += "Summary\n" + table({{"step time", seconds(sim.step_time_s)},
                              {"tokens/s/GPU", fmt::format("{:.0f}", sim.tokens_per_s_per_gpu)},
                              {"MFU", fmt::format("{:.1f} %", 100 * sim.mfu)},
                              {"HFU", fmt::format("{:.1f} %", 100 * sim.hfu)},
                              {"exposed communication", seconds(sim.exposed_comm_s)}});
  out += prediction_range_text(plan, sim.tokens_per_s_per_gpu, sim.step_time_s, sim.peak_memory_total_bytes);
  return wrap_text(out);
}

std::string simulation_brief_text(const Plan& plan, const Simulation& sim) {
  std::string out = fmt::format("  {} ops per rank, {} micro-batches per step{}\n", sim.ops_per_rank, plan.grad_accum(),
                                sim.linear_extrapolation ? fmt::format(" (extrapolated linearly from {} and {})",
                                                                       sim.simulated_micro_batches / 2,
                                                                       sim.simulated_micro_batches)
                                : sim.simulated_micro_batches > 0
                                    ? fmt::format(" ({} simulated, the rest extrapolated)", sim.simulated_micro_batches)
                                    : "");
  out += phases_table(sim);
  if (plan.parallelism.pp > 1) out += fmt::format("  pipeline bubble {:.1f}% of the step\n", 100 * sim.bubble_fraction);
  out += fmt::format("  step time {}, {:.0f} tokens/s/GPU, MFU {:.1f}%, HFU {:.1f}%, exposed communication {}\n",
                     seconds(sim.step_time_s), sim.tokens_per_s_per_gpu, 100 * sim.mfu, 100 * sim.hfu,
                     seconds(sim.exposed_comm_s));
  out += prediction_range_text(plan, sim.tokens_per_s_per_gpu, sim.step_time_s, sim.peak_memory_total_bytes);
  out += fmt::format("  peak memory {} of {} (during {})\n", gib(sim.peak_memory_total_bytes),
                     gib(plan.cluster.gpu.hbm_bytes), sim.peak_memory_op);
  return wrap_text(out);
}

}  // namespace fsdpx
