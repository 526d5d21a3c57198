// executor/session/cpu_placement.cpp — where the CPU backend's ranks run (see cpu_placement.h).
#include "executor/session/cpu_placement.h"

#include <memory>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cpu_backend/cpu_rank_backend.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/launch/launch_env.h"
#include "executor/launch/local_launcher.h"
#include "executor/launch/rendezvous.h"

namespace fsdpx {

namespace {

RankPlacement launched_rank(const Plan& plan, const std::string& fingerprint, const LaunchEnv& env,
                            double comm_timeout_s) {
  if (env.world_size != plan.parallelism.world_size())
    throw ConfigError(fmt::format("--backend cpu: the launcher ({}) started {} ranks but the plan has {}", env.source,
                                  env.world_size, plan.parallelism.world_size()));
  const RendezvousOptions r = rendezvous_options(env, fingerprint);
  Rendezvous rdzv = Rendezvous::join(r);
  // RankBackendFactory is copyable: the communicator waits in a shared holder until the Trainer asks.
  auto comm = std::make_shared<std::unique_ptr<Communicator>>(make_tcp_communicator(rdzv, comm_timeout_s));
  const int rank = env.rank;
  RankPlacement s;
  s.backends = [comm, rank](const RuntimeProgram& rp, OpProfiler* rank0_profiler) {
    std::vector<std::unique_ptr<RankBackend>> out;
    out.push_back(std::make_unique<CpuRankBackend>(rp, std::move(*comm), rank == 0 ? rank0_profiler : nullptr));
    return out;
  };
  s.prints = rank == 0;
  s.whole_state = false;
  s.processes_on_host = env.local_world_size;
  s.job_id = launch_job_id(env);
  s.description = describe(env) + "; TCP communicator";
  return s;
}

}  // namespace

RankPlacement place_cpu_ranks(const Plan& plan, const std::string& fingerprint, bool processes,
                              double comm_timeout_s) {
  const LaunchEnv env = detect_launch_env();
  if (env.launched() && env.world_size > 1) return launched_rank(plan, fingerprint, env, comm_timeout_s);
  RankPlacement s;
  if (!processes || plan.parallelism.world_size() == 1) return s;
  LocalLaunchOptions o;
  o.argv = own_argv();
  o.nprocs = plan.parallelism.world_size();
  const LaunchResult res = launch_local(o);
  if (!res.ok()) s.launcher_message = res.message;
  s.launcher_exit = res.exit_code();
  return s;
}

}  // namespace fsdpx
