// executor/cuda_backend/cuda_placement.cpp — where the CUDA backend's ranks run (see cuda_placement.h).
#include "executor/cuda_backend/cuda_placement.h"

#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/device.h"
#include "executor/cuda_backend/cuda_backends.h"
#include "executor/launch/launch_env.h"
#include "executor/launch/local_launcher.h"
#include "executor/launch/rendezvous.h"

namespace fsdpx::cuda {

namespace {

std::string gpu_name(int device) { return device_info(device).name; }

#if defined(FSDPX_HAVE_NCCL)
// Device of a launched rank: its local rank, or local_rank mod GPUs when NCCL lets ranks share a GPU.
int launched_device(const LaunchEnv& env, int gpus) {
  if (env.local_rank < gpus) return env.local_rank;
  if (!nccl_multi_rank_gpu_allowed())
    throw ConfigError(fmt::format("--backend cuda: local rank {} needs GPU {} but this node has {} ({})",
                                  env.local_rank, env.local_rank, gpus, nccl_describe()));
  return env.local_rank % gpus;
}

RankPlacement launched_rank(int world_size, const std::string& fingerprint, const LaunchEnv& env, int gpus) {
  if (env.world_size != world_size)
    throw ConfigError(fmt::format("--backend cuda: the launcher ({}) started {} ranks but the plan has {}", env.source,
                                  env.world_size, world_size));
  NcclOptions nccl;
  nccl.device = launched_device(env, gpus);
  const RendezvousOptions r = rendezvous_options(env, fingerprint);
  std::vector<std::uint8_t> id_bytes;
  if (env.rank == 0) {
    const NcclId id = nccl_unique_id();
    id_bytes.assign(id.begin(), id.end());
  }
  id_bytes = rendezvous_broadcast(r, id_bytes);
  NcclId id{};
  FSDP_CHECK(id_bytes.size() == id.size(), "rendezvous: the NCCL id has the wrong size");
  std::copy(id_bytes.begin(), id_bytes.end(), id.begin());
  RankPlacement s;
  s.device = ExecutorDevice::cuda;
  s.backends = nccl_cuda_backend(id, env.rank, nccl);
  s.prints = env.rank == 0;
  s.whole_state = false;
  s.job_id = launch_job_id(env);
  s.description = fmt::format("{}; GPU {} ({}); {}", describe(env), nccl.device, gpu_name(nccl.device),
                              nccl_describe());
  return s;
}

RankPlacement launch_ranks(int world_size, int gpus) {
  const int world = world_size;
  if (world > gpus && !nccl_multi_rank_gpu_allowed())
    throw ConfigError(fmt::format("--backend cuda: the plan has {} ranks but this node has {} GPU(s) ({}); run them "
                                  "as threads on one GPU with --single-process, or launch across nodes",
                                  world, gpus, nccl_describe()));
  LocalLaunchOptions o;
  o.argv = own_argv();
  o.nprocs = world;
  const LaunchResult res = launch_local(o);
  RankPlacement s;
  s.device = ExecutorDevice::cuda;
  if (!res.ok()) s.launcher_message = res.message;
  s.launcher_exit = res.exit_code();
  return s;
}
#endif

}  // namespace

RankPlacement place_cuda_ranks(int world_size, const std::string& fingerprint, bool single_process) {
  const int gpus = device_count();
  if (gpus == 0) throw ConfigError("--backend cuda: " + cuda_unavailable_reason());
  const LaunchEnv env = detect_launch_env();
  const int world = world_size;
  if (world == 1 || single_process) {
    if (env.launched() && env.world_size > 1)
      throw ConfigError(fmt::format("--backend cuda --single-process: started as rank {} of {} by {}; launch one "
                                    "process instead", env.rank, env.world_size, env.source));
    RankPlacement s;
    s.device = ExecutorDevice::cuda;
    s.backends = in_process_cuda_backends(0);
    s.description = fmt::format("{} rank(s) as threads of one process on GPU 0 ({})", world, gpu_name(0));
    return s;
  }
#if defined(FSDPX_HAVE_NCCL)
  return env.launched() ? launched_rank(world_size, fingerprint, env, gpus) : launch_ranks(world_size, gpus);
#else
  (void)fingerprint;
  throw ConfigError(fmt::format("--backend cuda: the plan has {} ranks but this fsdpx was built without NCCL; "
                                "use --single-process to run them as threads on one GPU", world));
#endif
}

}  // namespace fsdpx::cuda
