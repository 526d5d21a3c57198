// executor/launch/launch_env.h — which rank this process is, read from the variables a launcher sets:
// torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; also what
// fsdpx's own local launcher sets), Open MPI's mpirun, MPICH/Intel MPI's Hydra and Slurm's srun.
// Models only the environment: no process is started and no network is touched (rendezvous.h does
// that). Leaves out PMIx/PMI queries, SLURM_JOB_NODELIST parsing and torchrun's elastic restarts.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace fsdpx {

// torchrun's default MASTER_PORT.
inline constexpr int kDefaultMasterPort = 29500;

// Reads one environment variable: nullptr when it is unset (std::getenv's contract).
using EnvLookup = std::function<const char*(const char*)>;

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // index of this process among the ranks of its node (its GPU)
  int local_world_size = 1;
  std::string master_addr;  // rank 0's host; "127.0.0.1" when every rank is on one node
  // The port of fsdpx's rendezvous at master_addr: FSDPX_RDZV_PORT when set, else MASTER_PORT, plus 1
  // under torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True: torchrun listens on MASTER_PORT).
  int master_port = kDefaultMasterPort;
  // Which launcher set the values: "torchrun", "fsdpx" (fsdpx's local launcher: FSDPX_LAUNCHED=1),
  // "open-mpi", "mpich" or "slurm"; empty when no launcher did (a single process, not launched).
  std::string source;

  bool launched() const { return !source.empty(); }
  // True when the ranks span more than one node (then MASTER_ADDR must name rank 0's node).
  bool multi_node() const { return world_size > local_world_size; }
};

// Precedence, first match wins (explicit torchrun-style variables beat what a launcher set):
//   1. RANK or WORLD_SIZE set      -> torchrun-style; needs RANK, WORLD_SIZE, LOCAL_RANK,
//                                     LOCAL_WORLD_SIZE ("fsdpx" when FSDPX_LAUNCHED=1)
//   2. OMPI_COMM_WORLD_RANK set    -> Open MPI: OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}
//   3. PMI_RANK and MPI_LOCALRANKID set -> Hydra (MPICH, Intel MPI): PMI_RANK, PMI_SIZE,
//                                     MPI_LOCALRANKID, MPI_LOCALNRANKS (PMI_RANK alone, as Slurm's
//                                     PMI2 plugin sets it, falls through to Slurm)
//   4. SLURM_PROCID set            -> srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, and the tasks
//                                     of this node from SLURM_NTASKS_PER_NODE, else
//                                     SLURM_TASKS_PER_NODE ("8(x2),4") indexed by SLURM_NODEID
//   none                           -> a single process: rank 0 of 1, source "".
// MASTER_ADDR / MASTER_PORT (and FSDPX_RDZV_PORT) are read for every source. MASTER_ADDR is required
// when the ranks span nodes and defaults to 127.0.0.1 on one node; MASTER_PORT defaults to 29500.
// Malformed or inconsistent values throw ConfigError naming the variables ("RANK=5 but WORLD_SIZE=4").
LaunchEnv detect_launch_env(const EnvLookup& env);

// The same, from this process's environment.
LaunchEnv detect_launch_env();

// A lookup over a map (tests); the map must outlive the lookup.
EnvLookup env_lookup(const std::map<std::string, std::string>& vars);

// One line for logs: "rank 3 of 16 (local 3 of 8) via slurm, rendezvous at node1:29500".
std::string describe(const LaunchEnv& e);

// The same on every process of one launched job and, in practice, different between jobs that run at
// once: "<master_addr>:<master_port>:<world_size>" (names a job's checkpoint staging directory).
std::string launch_job_id(const LaunchEnv& e);

}  // namespace fsdpx
