// executor/cpu/thread_budget.cpp — the kernel thread budget (see thread_budget.h).
#include "executor/cpu/thread_budget.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "core/errors.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fsdpx::cpu {
namespace {

constexpr int kMaxThreads = 4096;

// The first entry of an OpenMP-style list ("8" or "8,4"); nullopt when unset or empty.
std::optional<int> env_threads(const ThreadEnvLookup& env, const char* name) {
  const char* raw = env(name);
  if (!raw || !*raw) return std::nullopt;
  const std::string value(raw);
  const std::string first = value.substr(0, value.find(','));
  char* end = nullptr;
  const long n = std::strtol(first.c_str(), &end, 10);
  if (first.empty() || *end != '\0' || n < 1 || n > kMaxThreads)
    throw ConfigError(fmt::format("{}={}: expected a thread count from 1 to {}", name, value, kMaxThreads));
  return int(n);
}

}  // namespace

bool ThreadBudget::oversubscribed() const {
  return threads_per_rank > 1 && threads_per_rank * ranks_in_process > std::max(1, cores / processes_on_host);
}

std::string ThreadBudget::describe() const {
  return fmt::format("{} kernel thread{} per rank ({}: {} rank{}, {} core{}, {} process{} on this host){}",
                     threads_per_rank, threads_per_rank == 1 ? "" : "s", source, ranks_in_process,
                     ranks_in_process == 1 ? "" : "s", cores, cores == 1 ? "" : "s", processes_on_host,
                     processes_on_host == 1 ? "" : "es", oversubscribed() ? ", oversubscribed" : "");
}

ThreadBudget decide_thread_budget(const ThreadBudgetRequest& request, int cores, const ThreadEnvLookup& env) {
  FSDP_CHECK(request.ranks_in_process >= 1 && request.processes_on_host >= 1 && cores >= 1,
             "decide_thread_budget: ranks, processes and cores must be positive");
  if (request.threads < 0 || request.threads > kMaxThreads)
    throw ConfigError(fmt::format("--threads {}: expected a thread count from 1 to {}", request.threads, kMaxThreads));
  ThreadBudget b;
  b.cores = cores;
  b.ranks_in_process = request.ranks_in_process;
  b.processes_on_host = request.processes_on_host;
  const std::optional<int> omp = env_threads(env, "OMP_NUM_THREADS");
  const std::optional<int> blas = env_threads(env, "OPENBLAS_NUM_THREADS");
  if (request.threads > 0) {
    b.threads_per_rank = request.threads, b.source = "--threads";
  } else if (omp) {
    b.threads_per_rank = *omp, b.source = "OMP_NUM_THREADS";
  } else if (blas) {
    b.threads_per_rank = *blas, b.source = "OPENBLAS_NUM_THREADS";
  } else {
    const int share = std::max(1, cores / request.processes_on_host);
    b.threads_per_rank = std::max(1, share / request.ranks_in_process);
    b.source = "cores";
  }
  return b;
}

ThreadBudget decide_thread_budget(const ThreadBudgetRequest& request) {
  return decide_thread_budget(request, affinity_cores(), [](const char* name) { return std::getenv(name); });
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

void use_kernel_threads(int threads) {
#ifdef _OPENMP
  omp_set_num_threads(std::max(1, threads));
#else
  (void)threads;
#endif
}

}  // namespace fsdpx::cpu
