// tools/run_cpu_processes.cpp — rank placement for `fsdpx run --backend cpu` (see run_cpu_processes.h).
#include "tools/run_cpu_processes.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/checkpoint/checksum.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/launch/launch_env.h"
#include "executor/launch/local_launcher.h"
#include "executor/launch/rendezvous.h"
#include "executor/runtime/cpu_backend.h"

namespace fsdpx {

namespace {

CpuRunSetup launched_rank(const Plan& plan, const std::string& fingerprint, const LaunchEnv& env) {
  if (env.world_size != plan.parallelism.world_size())
    throw ConfigError(fmt::format("--backend cpu: the launcher ({}) started {} ranks but the plan has {}", env.source,
                                  env.world_size, plan.parallelism.world_size()));
  const RendezvousOptions r = rendezvous_options(env, fingerprint);
  Rendezvous rdzv = Rendezvous::join(r);
  // RankBackendFactory is copyable: the communicator waits in a shared holder until the Trainer asks.
  auto comm = std::make_shared<std::unique_ptr<Communicator>>(make_tcp_communicator(rdzv));
  const int rank = env.rank;
  CpuRunSetup s;
  s.backends = [comm, rank](const RuntimeProgram& rp, OpProfiler* rank0_profiler) {
    std::vector<std::unique_ptr<RankBackend>> out;
    out.push_back(std::make_unique<CpuRankBackend>(rp, std::move(*comm), rank == 0 ? rank0_profiler : nullptr));
    return out;
  };
  s.prints = rank == 0;
  s.whole_state = false;
  s.job_token = checkpoint_job_token(env, fingerprint);
  s.description = describe(env) + "; TCP communicator";
  return s;
}

}  // namespace

std::string checkpoint_job_token(const LaunchEnv& env, const std::string& plan_fingerprint) {
  return fmt::format("{:016x}", fnv1a64(fmt::format("{}:{}:{}:{}", env.master_addr, env.master_port, env.world_size,
                                                    plan_fingerprint)));
}

std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string cur;
  for (char c : all) {
    if (c == '\0') argv.push_back(std::move(cur)), cur.clear();
    else cur += c;
  }
  return argv;
}

CpuRunSetup setup_cpu_run(const Plan& plan, const std::string& fingerprint, bool processes) {
  const LaunchEnv env = detect_launch_env();
  if (env.launched() && env.world_size > 1) return launched_rank(plan, fingerprint, env);
  CpuRunSetup s;
  if (!processes || plan.parallelism.world_size() == 1) return s;
  LocalLaunchOptions o;
  o.argv = own_argv();
  o.nprocs = plan.parallelism.world_size();
  const LaunchResult res = launch_local(o);
  if (!res.ok()) std::fprintf(stderr, "fsdpx: %s\n", res.message.c_str());
  s.launcher_exit = res.exit_code();
  return s;
}

}  // namespace fsdpx
