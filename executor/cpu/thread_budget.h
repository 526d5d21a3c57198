// executor/cpu/thread_budget.h — how many threads each rank's CPU kernels may use: --threads, else
// OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, else the cores of this process's affinity mask shared by the
// host's processes and this process's ranks (so by default no more kernel threads than cores; at least
// one). The runtime gives each rank a KernelPool that size (kernel_pool.h); OpenBLAS stays single-threaded
// (gemm.cpp tiles the GEMMs). Leaves out pinning and SMT/NUMA topology: the OS places the threads.
#pragma once

#include <functional>
#include <string>

namespace fsdpx::cpu {

struct ThreadBudgetRequest {
  int threads = 0;            // --threads: kernel threads per rank; 0 = decide
  int ranks_in_process = 1;   // rank threads of this process
  int processes_on_host = 1;  // processes sharing this host's cores (the launcher's LOCAL_WORLD_SIZE)
};

struct ThreadBudget {
  int threads_per_rank = 1;
  int cores = 1;             // CPUs in this process's affinity mask
  int ranks_in_process = 1;
  int processes_on_host = 1;
  std::string source;        // "--threads", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS" or "cores"
  // Ranks use more than their own threads and ranks × threads exceed this process's share of the cores
  // (only when asked for explicitly: more ranks than cores alone is the plan's choice).
  bool oversubscribed() const;
  // One line for logs: "1 kernel thread per rank (4 ranks, 2 cores, 1 process on this host)".
  std::string describe() const;
};

// Reads one environment variable: nullptr when it is unset (std::getenv's contract).
using ThreadEnvLookup = std::function<const char*(const char*)>;

// Precedence: request.threads > OMP_NUM_THREADS > OPENBLAS_NUM_THREADS (the first entry of a list such
// as "4,2"; empty counts as unset) > cores / processes_on_host / ranks_in_process, at least 1.
// Throws ConfigError naming the variable for a value that is not a positive integer.
ThreadBudget decide_thread_budget(const ThreadBudgetRequest& request, int cores, const ThreadEnvLookup& env);

// The same for this process: its affinity mask and environment.
ThreadBudget decide_thread_budget(const ThreadBudgetRequest& request);

// CPUs this process may run on (sched_getaffinity), at least 1.
int affinity_cores();

// Makes the OpenMP parallel regions that the calling thread starts use `threads` threads (a per-thread
// setting, for OpenMP code the kernels call; fsdpx's own loops use the rank's KernelPool).
void use_kernel_threads(int threads);

}  // namespace fsdpx::cpu
