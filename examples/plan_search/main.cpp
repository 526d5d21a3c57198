// examples/plan_search/main.cpp — plans FSDP training through the fsdpx library: loads a model and a
// cluster from the installed configs, sizes the cluster, searches plans and prints the best one's
// shape, predicted step time and peak memory, then the plan as JSON.
// Usage: plan_search [model] [cluster] [world_size] [seq] [global_batch]
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/plan.h"
#include "planner/planner.h"

int main(int argc, char** argv) {
  const std::string configs = FSDPX_CONFIGS;
  const std::string model = argc > 1 ? argv[1] : "llama-tiny";
  const std::string cluster = argc > 2 ? argv[2] : "cpu";
  try {
    fsdpx::PlanRequest request;
    request.model = fsdpx::load_model(configs + "/models/" + model + ".json");
    request.cluster = fsdpx::load_cluster(configs + "/clusters/" + cluster + ".json");
    request.cluster.nodes = 1;
    request.cluster.gpus_per_node = argc > 3 ? std::atoi(argv[3]) : 4;
    request.seq = argc > 4 ? std::atoll(argv[4]) : 64;
    request.global_batch = argc > 5 ? std::atoll(argv[5]) : 8;
    const fsdpx::PlanResult result = fsdpx::search_plans(request);
    if (!result.best) {
      std::fprintf(stderr, "plan_search: no plan fits\n");
      return 1;
    }
    const fsdpx::Candidate& best = *result.best;
    std::printf("best plan: %s\n", best.label.c_str());
    std::printf("step time %.6f s, %.1f tokens/s per GPU, peak memory %.0f bytes, %lld plans simulated\n",
                best.metrics.step_time_s, best.metrics.tokens_per_s_per_gpu, best.metrics.peak_memory_bytes,
                static_cast<long long>(result.counts.simulated));
    std::printf("%s\n", fsdpx::plan_to_json(best.plan).dump(2).c_str());
  } catch (const fsdpx::ConfigError& e) {
    std::fprintf(stderr, "plan_search: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
