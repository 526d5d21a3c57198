// tests/executor/test_thread_budget.cpp — the kernel thread budget: the default share of the cores, the
// precedence of --threads over OMP_NUM_THREADS over OPENBLAS_NUM_THREADS, malformed values, and that a
// rank thread's setting reaches OpenMP.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "core/errors.h"
#include "executor/cpu/thread_budget.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fsdpx {
namespace {

using cpu::decide_thread_budget;

cpu::ThreadEnvLookup env_of(const std::map<std::string, std::string>& vars) {
  return [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST_CASE("by default the ranks and the processes on the host share the cores, one thread at least") {
  const std::map<std::string, std::string> none;
  struct Case { int cores, ranks, processes, expected; };
  for (const Case c : {Case{8, 4, 1, 2}, Case{2, 4, 1, 1}, Case{2, 1, 1, 2}, Case{16, 1, 4, 4}, Case{3, 2, 1, 1},
                       Case{1, 1, 1, 1}, Case{16, 2, 2, 4}}) {
    CAPTURE(c.cores);
    CAPTURE(c.ranks);
    CAPTURE(c.processes);
    const cpu::ThreadBudget b = decide_thread_budget({0, c.ranks, c.processes}, c.cores, env_of(none));
    CHECK(b.threads_per_rank == c.expected);
    CHECK(b.source == "cores");
    CHECK_FALSE(b.oversubscribed());
  }
}

TEST_CASE("--threads beats OMP_NUM_THREADS, which beats OPENBLAS_NUM_THREADS") {
  const std::map<std::string, std::string> both{{"OMP_NUM_THREADS", "3,2"}, {"OPENBLAS_NUM_THREADS", "5"}};
  const std::map<std::string, std::string> blas{{"OPENBLAS_NUM_THREADS", "5"}, {"OMP_NUM_THREADS", ""}};
  CHECK(decide_thread_budget({6, 1, 1}, 8, env_of(both)).threads_per_rank == 6);
  CHECK(decide_thread_budget({6, 1, 1}, 8, env_of(both)).source == "--threads");
  CHECK(decide_thread_budget({0, 1, 1}, 8, env_of(both)).threads_per_rank == 3);
  CHECK(decide_thread_budget({0, 1, 1}, 8, env_of(both)).source == "OMP_NUM_THREADS");
  CHECK(decide_thread_budget({0, 1, 1}, 8, env_of(blas)).threads_per_rank == 5);
  CHECK(decide_thread_budget({0, 1, 1}, 8, env_of(blas)).source == "OPENBLAS_NUM_THREADS");
}

TEST_CASE("an explicit request may oversubscribe, and says so") {
  const std::map<std::string, std::string> none;
  const cpu::ThreadBudget b = decide_thread_budget({2, 4, 1}, 2, env_of(none));
  CHECK(b.threads_per_rank == 2);
  CHECK(b.oversubscribed());
  CHECK(b.describe() == "2 kernel threads per rank (--threads: 4 ranks, 2 cores, 1 process on this host), "
                        "oversubscribed");
  // One thread per rank is never oversubscription by the budget: more ranks than cores is the plan's.
  CHECK_FALSE(decide_thread_budget({1, 4, 1}, 2, env_of(none)).oversubscribed());
}

TEST_CASE("malformed thread counts are errors naming the variable") {
  for (const std::string bad : {"abc", "0", "-2", "4x", "5000", ",3"}) {
    CAPTURE(bad);
    const std::map<std::string, std::string> env{{"OMP_NUM_THREADS", bad}};
    const std::string expected = "OMP_NUM_THREADS=" + bad + ": expected a thread count";
    CHECK_THROWS_WITH_AS(decide_thread_budget({0, 1, 1}, 4, env_of(env)), doctest::Contains(expected.c_str()),
                         ConfigError);
  }
  const std::map<std::string, std::string> none;
  CHECK_THROWS_AS(decide_thread_budget({-1, 1, 1}, 4, env_of(none)), ConfigError);
}

TEST_CASE("this process's cores and the per-thread OpenMP setting") {
  CHECK(cpu::affinity_cores() >= 1);
  CHECK(decide_thread_budget({0, 1, 1}).cores == cpu::affinity_cores());
#ifdef _OPENMP
  cpu::use_kernel_threads(3);
  CHECK(omp_get_max_threads() == 3);
  cpu::use_kernel_threads(1);
  CHECK(omp_get_max_threads() == 1);
#endif
}

}  // namespace
}  // namespace fsdpx
