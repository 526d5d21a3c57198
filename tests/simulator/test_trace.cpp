// tests/simulator/test_trace.cpp — the Chrome trace: valid JSON with one process per rank, one named
// thread per stream, one "X" event per op at the engine's times, memory counters in GiB; identical
// bytes for identical input; and a golden file for a small program.
// Regenerate the golden trace (only after checking the diff by hand) with
//   FSDPX_UPDATE_GOLDEN=1 ./tests/test_simulator -tc="golden*"
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "simulator/trace.h"
#include "tests/simulator/program_builder.h"
#include "tests/simulator/synthetic_program.h"

namespace fsdpx {
namespace {

using test::ProgramBuilder;

// A small program with every op kind and memory effects on two fabrics.
StepProgram small_program() {
  ProgramBuilder b;
  b.role().resident = {{MemCategory::params, 512.0 * (1 << 20)}, {MemCategory::optimizer, 1 << 30}};
  const int ag = b.collective("ag.u0.mb0", OpKind::all_gather, 12.5e-6, 2e-6, false);
  b.op(ag).unit = 0;
  b.op(ag).micro_batch = 0;
  b.op(ag).alloc_at_start = {{MemCategory::params, 1 << 30}};
  const int fwd = b.compute("fwd.s0.mb0", OpKind::forward, 20e-6, {ag});
  b.op(fwd).unit = 0;
  b.op(fwd).micro_batch = 0;
  b.op(fwd).alloc_at_start = {{MemCategory::activations, 256.0 * (1 << 20)}};
  const int bwd = b.compute("bwd.s0.mb0", OpKind::backward, 40e-6, {fwd});
  b.op(bwd).unit = 0;
  b.op(bwd).micro_batch = 0;
  b.op(bwd).alloc_at_start = {{MemCategory::grads, 1 << 30}};
  b.op(bwd).free_at_end = {{MemCategory::activations, 256.0 * (1 << 20)}};
  const int rs = b.collective("rs.u0", OpKind::reduce_scatter, 15e-6, 3e-6, true, {bwd});
  b.op(rs).unit = 0;
  const int rel = b.free_op("reshard.u0", StreamKind::compute, {bwd});
  b.op(rel).free_at_end = {{MemCategory::params, 1 << 30}};
  // A name that needs escaping; its kernel holds 8 of 132 SMs (one NCCL channel per NIC of a DGX H100).
  b.collective("ar \"dp\"", OpKind::all_reduce, 7e-6, 1e-6, true, {rs}, 0, 8.0 / 132);
  b.compute("opt", OpKind::optimizer, 5e-6, {rs});
  return b.program();
}

std::string trace_of(const StepProgram& p, const EngineResult& r) {
  std::ostringstream out;
  write_chrome_trace(p, r, out);
  return out.str();
}

TEST_CASE("trace: processes, threads, op events and memory counters") {
  const StepProgram p = small_program();
  const EngineResult r = run_engine(p, EngineOptions{});
  const nlohmann::json j = nlohmann::json::parse(trace_of(p, r));
  int threads = 0, ops = 0, counters = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name") ++threads;
    if (ph == "C") {
      ++counters;
      CHECK(e.at("args").size() == static_cast<std::size_t>(kMemCategoryCount));
    }
    if (ph != "X") continue;
    ++ops;
    CHECK(e.at("pid") == 0);
    if (e.at("name") == "bwd.s0.mb0") {
      // Starts after the all-gather (12.5 us) and the forward (20 us, slowed by nothing), lasts 40 us.
      CHECK(e.at("ts").get<double>() == doctest::Approx(32.5));
      CHECK(e.at("dur").get<double>() == doctest::Approx(40.0));
      CHECK(e.at("tid") == static_cast<int>(StreamKind::compute));
      CHECK(e.at("args").at("kind") == "backward");
      CHECK(e.at("args").at("flops").get<double>() == 1e12);
    }
    if (e.at("name") == "rs.u0") {
      CHECK(e.at("args").at("bytes").get<double>() == 1 << 20);
      CHECK(e.at("tid") == static_cast<int>(StreamKind::reduce_scatter));
    }
  }
  int used_streams = 0;  // a thread per stream the role uses
  for (const auto& stream : p.roles[0].streams) used_streams += !stream.empty();
  CHECK(threads == used_streams);
  CHECK(ops == static_cast<int>(p.roles[0].ops.size()));
  CHECK(counters == static_cast<int>(r.memory_samples.size()));
  // The first counter is the resident state: 0.5 GiB params, 1 GiB optimizer state.
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "C") {
      CHECK(e.at("args").at("params").get<double>() == 0.5);
      CHECK(e.at("args").at("optimizer").get<double>() == 1.0);
      break;
    }
}

TEST_CASE("trace: one process per simulated rank in expanded mode") {
  StepProgram p = test::synthetic_program({2, 1, false, false}, 4);
  p.groups[0].shape = p.groups[1].shape = p.groups[2].shape = GroupShape{4, 4};
  EngineOptions opt;
  opt.expand_ranks = true;
  const nlohmann::json j = nlohmann::json::parse(trace_of(p, run_engine(p, opt)));
  int processes = 0;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_name") ++processes;
  CHECK(processes == 4);
}

TEST_CASE("trace: identical input gives identical bytes") {
  const StepProgram p = test::synthetic_program({4, 2, true, false});
  const std::string a = trace_of(p, run_engine(p, EngineOptions{}));
  const std::string b = trace_of(p, run_engine(p, EngineOptions{}));
  CHECK(a.size() > 1000);
  CHECK(a == b);
}

TEST_CASE("golden trace of a small program") {
  const StepProgram p = small_program();
  const std::string trace = trace_of(p, run_engine(p, EngineOptions{}));
  const std::string path = std::string(FSDPX_TEST_DATA_DIR) + "/../golden/engine_small.trace.json";
  const char* update = std::getenv("FSDPX_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << trace;
    MESSAGE("rewrote " << path);
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << " (FSDPX_UPDATE_GOLDEN=1 writes it)");
  std::stringstream golden;
  golden << in.rdbuf();
  CHECK_MESSAGE(golden.str() == trace, "trace differs from " << path << "; got:\n" << trace);
}

}  // namespace
}  // namespace fsdpx
