// tests/executor/test_launch_env.cpp — launcher detection from injected environments: one table row
// per launcher (torchrun, fsdpx's own, Open MPI, Hydra, Slurm with each tasks-per-node form), the
// precedence between them, and one row per malformed or inconsistent value with the exact words of
// its one-line ConfigError.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "core/errors.h"
#include "executor/launch/launch_env.h"

namespace fsdpx {
namespace {

using Env = std::map<std::string, std::string>;

LaunchEnv detect(const Env& env) { return detect_launch_env(env_lookup(env)); }

std::string error_of(const Env& env) {
  try {
    detect(env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

const Env kTorchrun{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "4"},
                    {"MASTER_ADDR", "node1"}, {"MASTER_PORT", "1234"}};

Env with(Env env, const Env& changes) {
  for (const auto& [k, v] : changes) env[k] = v;
  return env;
}

Env without(Env env, const std::string& name) {
  env.erase(name);
  return env;
}

struct Detected {
  const char* name;
  Env env;
  LaunchEnv expected;
};

}  // namespace

TEST_CASE("launch env: no launcher variables means a single process") {
  const LaunchEnv e = detect({{"HOME", "/root"}, {"LOCAL_RANK", "2"}});  // LOCAL_RANK alone: not torchrun
  CHECK_FALSE(e.launched());
  CHECK(e.rank == 0);
  CHECK(e.world_size == 1);
  CHECK(e.local_world_size == 1);
  CHECK(describe(e) == "a single process (no launcher variables)");
  CHECK_FALSE(detect_launch_env(env_lookup({})).launched());
}

TEST_CASE("launch env: every launcher is read, in the documented precedence") {
  const Env slurm{{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"},
                  {"SLURM_NTASKS_PER_NODE", "8"}, {"MASTER_ADDR", "gpu001"}};
  const Env ompi{{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "16"},
                 {"OMPI_COMM_WORLD_LOCAL_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"},
                 {"MASTER_ADDR", "10.0.0.1"}};
  const Env mpich{{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"},
                  {"MASTER_ADDR", "n0"}, {"MASTER_PORT", "4000"}};
  const std::vector<Detected> rows{
      {"torchrun", kTorchrun, {3, 8, 3, 4, "node1", 1234, "torchrun"}},
      {"torchrun, one node: MASTER_ADDR and MASTER_PORT default",
       {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}},
       {1, 2, 1, 2, "127.0.0.1", 29500, "torchrun"}},
      {"fsdpx's local launcher", with(kTorchrun, {{"FSDPX_LAUNCHED", "1"}}),
       {3, 8, 3, 4, "node1", 1234, "fsdpx"}},
      {"FSDPX_LAUNCHED=0 is not fsdpx", with(kTorchrun, {{"FSDPX_LAUNCHED", "0"}}),
       {3, 8, 3, 4, "node1", 1234, "torchrun"}},
      {"torchrun's agent store holds MASTER_PORT: the rendezvous takes the next port",
       with(kTorchrun, {{"TORCHELASTIC_USE_AGENT_STORE", "True"}}), {3, 8, 3, 4, "node1", 1235, "torchrun"}},
      {"TORCHELASTIC_USE_AGENT_STORE=False", with(kTorchrun, {{"TORCHELASTIC_USE_AGENT_STORE", "False"}}),
       {3, 8, 3, 4, "node1", 1234, "torchrun"}},
      {"FSDPX_RDZV_PORT wins",
       with(kTorchrun, {{"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"FSDPX_RDZV_PORT", "4000"}}),
       {3, 8, 3, 4, "node1", 4000, "torchrun"}},
      {"open mpi", ompi, {5, 16, 5, 8, "10.0.0.1", 29500, "open-mpi"}},
      {"hydra (mpich, intel mpi)", mpich, {2, 4, 0, 2, "n0", 4000, "mpich"}},
      {"slurm, SLURM_NTASKS_PER_NODE", slurm, {9, 16, 1, 8, "gpu001", 29500, "slurm"}},
      {"slurm, SLURM_TASKS_PER_NODE=8(x2)",
       with(without(slurm, "SLURM_NTASKS_PER_NODE"), {{"SLURM_TASKS_PER_NODE", "8(x2)"}}),
       {9, 16, 1, 8, "gpu001", 29500, "slurm"}},
      {"slurm, unequal nodes indexed by SLURM_NODEID",
       with(without(slurm, "SLURM_NTASKS_PER_NODE"),
            {{"SLURM_NTASKS", "10"}, {"SLURM_TASKS_PER_NODE", "4(x2),2"}, {"SLURM_NODEID", "2"}}),
       {9, 10, 1, 2, "gpu001", 29500, "slurm"}},
      {"slurm, one node needs no MASTER_ADDR",
       {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "3"}, {"SLURM_TASKS_PER_NODE", "4"}},
       {3, 4, 3, 4, "127.0.0.1", 29500, "slurm"}},
      {"torchrun variables beat Open MPI and Slurm", with(with(kTorchrun, ompi), slurm),
       {3, 8, 3, 4, "gpu001", 1234, "torchrun"}},
      {"Open MPI beats Slurm (mpirun inside an allocation)", with(ompi, without(slurm, "MASTER_ADDR")),
       {5, 16, 5, 8, "10.0.0.1", 29500, "open-mpi"}},
      {"Hydra beats Slurm", with(slurm, mpich), {2, 4, 0, 2, "n0", 4000, "mpich"}},
      {"PMI_RANK alone (Slurm's PMI2 plugin) defers to Slurm",
       with(slurm, {{"PMI_RANK", "9"}, {"PMI_SIZE", "16"}}), {9, 16, 1, 8, "gpu001", 29500, "slurm"}},
  };
  for (const Detected& row : rows) {
    CAPTURE(row.name);
    const LaunchEnv e = detect(row.env);
    CHECK(e.launched());
    CHECK(e.rank == row.expected.rank);
    CHECK(e.world_size == row.expected.world_size);
    CHECK(e.local_rank == row.expected.local_rank);
    CHECK(e.local_world_size == row.expected.local_world_size);
    CHECK(e.master_addr == row.expected.master_addr);
    CHECK(e.master_port == row.expected.master_port);
    CHECK(e.source == row.expected.source);
  }
  CHECK(describe(detect(kTorchrun)) == "rank 3 of 8 (local 3 of 4) via torchrun, rendezvous at node1:1234");
  CHECK(detect(kTorchrun).multi_node());
}

TEST_CASE("launch env: malformed or inconsistent values name the variables") {
  const Env slurm{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "10"}, {"SLURM_LOCALID", "1"},
                  {"MASTER_ADDR", "gpu001"}};
  const Env ompi{{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                 {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}};
  const std::vector<std::pair<Env, std::string>> rows{
      {with(kTorchrun, {{"RANK", "5"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "4"}}),
       "torchrun launch environment: RANK=5 but WORLD_SIZE=4 (ranks are 0..3)"},
      {with(kTorchrun, {{"RANK", "abc"}}),
       "torchrun launch environment: RANK='abc' is not a non-negative integer"},
      {with(kTorchrun, {{"RANK", "-1"}}), "RANK='-1' is not a non-negative integer"},
      {with(kTorchrun, {{"RANK", "3 "}}), "RANK='3 ' is not a non-negative integer"},
      {with(kTorchrun, {{"RANK", ""}}), "RANK='' is not a non-negative integer"},
      {with(kTorchrun, {{"WORLD_SIZE", "99999999999"}}), "WORLD_SIZE='99999999999' is not a non-negative"},
      {without(kTorchrun, "WORLD_SIZE"), "WORLD_SIZE is not set (RANK is)"},
      {without(kTorchrun, "RANK"), "RANK is not set (WORLD_SIZE is)"},
      {without(kTorchrun, "LOCAL_RANK"), "LOCAL_RANK is not set (RANK is)"},
      {without(kTorchrun, "LOCAL_WORLD_SIZE"), "LOCAL_WORLD_SIZE is not set (RANK is)"},
      {with(kTorchrun, {{"WORLD_SIZE", "0"}}), "WORLD_SIZE=0: the world size must be at least 1"},
      {with(kTorchrun, {{"LOCAL_WORLD_SIZE", "0"}}), "LOCAL_WORLD_SIZE=0: a node runs at least 1 rank"},
      {with(kTorchrun, {{"LOCAL_WORLD_SIZE", "16"}}),
       "LOCAL_WORLD_SIZE=16 but WORLD_SIZE=8 (a node cannot run more ranks than the job)"},
      {with(kTorchrun, {{"LOCAL_RANK", "4"}}), "LOCAL_RANK=4 but LOCAL_WORLD_SIZE=4 (local ranks are 0..3)"},
      {without(kTorchrun, "MASTER_ADDR"),
       "torchrun launch environment: MASTER_ADDR is not set, but the 8 ranks span nodes (4 on this one)"},
      {with(kTorchrun, {{"MASTER_ADDR", ""}}), "MASTER_ADDR is not set"},
      {with(kTorchrun, {{"MASTER_PORT", "0"}}), "MASTER_PORT=0 is not a TCP port (1-65535)"},
      {with(kTorchrun, {{"MASTER_PORT", "70000"}}), "MASTER_PORT=70000 is not a TCP port"},
      {with(kTorchrun, {{"MASTER_PORT", "http"}}), "MASTER_PORT='http' is not a non-negative integer"},
      {with(kTorchrun, {{"FSDPX_RDZV_PORT", "x1"}}), "FSDPX_RDZV_PORT='x1' is not a non-negative integer"},
      {with(kTorchrun, {{"FSDPX_RDZV_PORT", "65536"}}), "FSDPX_RDZV_PORT=65536 is not a TCP port"},
      {with(kTorchrun, {{"MASTER_PORT", "65535"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}}),
       "MASTER_PORT=65535 is torchrun's agent store and 65536 is no port; set FSDPX_RDZV_PORT"},
      {with(kTorchrun, {{"FSDPX_LAUNCHED", "1"}, {"RANK", "9"}}), "fsdpx launch environment: RANK=9 but"},
      {ompi, "open-mpi launch environment: OMPI_COMM_WORLD_RANK=2 but OMPI_COMM_WORLD_SIZE=2"},
      {with(ompi, {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}}),
       "MASTER_ADDR is not set, but the 4 ranks span nodes (1 on this one); pass it to every rank: "
       "mpirun -x"},
      {{{"PMI_RANK", "0"}, {"MPI_LOCALRANKID", "0"}, {"PMI_SIZE", "2"}},
       "mpich launch environment: MPI_LOCALNRANKS is not set (PMI_RANK is)"},
      {slurm, "slurm launch environment: SLURM_PROCID is set but neither SLURM_NTASKS_PER_NODE nor "
              "SLURM_TASKS_PER_NODE is"},
      {with(slurm, {{"SLURM_TASKS_PER_NODE", "8(x2"}}), "SLURM_TASKS_PER_NODE='8(x2' is malformed"},
      {with(slurm, {{"SLURM_TASKS_PER_NODE", "8(x0)"}}), "SLURM_TASKS_PER_NODE='8(x0)' is malformed"},
      {with(slurm, {{"SLURM_TASKS_PER_NODE", "8,,2"}}),
       "SLURM_TASKS_PER_NODE='8,,2' is malformed (expected task counts like '8(x2),4')"},
      {with(slurm, {{"SLURM_TASKS_PER_NODE", "4(xa),2"}}), "SLURM_TASKS_PER_NODE='4(xa),2' is malformed"},
      {with(slurm, {{"SLURM_TASKS_PER_NODE", ""}}), "SLURM_TASKS_PER_NODE='' is malformed"},
      {with(slurm, {{"SLURM_TASKS_PER_NODE", "4(x2),2"}}),
       "SLURM_TASKS_PER_NODE='4(x2),2' differs between nodes but SLURM_NODEID is not set"},
      {with(slurm, {{"SLURM_TASKS_PER_NODE", "4(x2),2"}, {"SLURM_NODEID", "3"}}),
       "SLURM_NODEID=3 but SLURM_TASKS_PER_NODE='4(x2),2' lists 3 nodes"},
      {with(slurm, {{"SLURM_NTASKS_PER_NODE", "1"}}),
       "SLURM_LOCALID=1 but SLURM_NTASKS_PER_NODE=1 (local ranks are 0..0)"},
      {without(with(slurm, {{"SLURM_NTASKS_PER_NODE", "5"}}), "MASTER_ADDR"),
       "the 10 ranks span nodes (5 on this one); export MASTER_ADDR=$(scontrol show hostnames "
       "$SLURM_JOB_NODELIST | head -n1) before srun"},
      {without(slurm, "SLURM_NTASKS"), "SLURM_NTASKS is not set (SLURM_PROCID is)"},
  };
  for (const auto& [env, expected] : rows) {
    const std::string message = error_of(env);
    CAPTURE(message);
    CHECK(message.find(expected) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

}  // namespace fsdpx
