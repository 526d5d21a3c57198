// tests/simulator/test_simulate_fp16.cpp — fp16 in the step program and the simulator: on H100 and A100
// (dense fp16 = bf16 tensor-core rate) an fp16 plan costs what the bf16 plan costs; loss scaling adds one
// unscale op per pipeline rank after every gradient reduction and before the norm, sized by the rank's
// reduced gradient bytes, which lengthens the step by exactly its duration; without clipping the inf flag
// still gets its all-reduce; the op shows in the trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/config_paths.h"
#include "cost_models/compute.h"
#include "cost_models/params.h"
#include "program/lower.h"
#include "simulator/simulate.h"
#include "simulator/trace.h"

namespace fsdpx {
namespace {

Plan h100_plan(const std::string& cluster, DType param, std::optional<LossScaleSettings> ls, int pp = 1) {
  ClusterSpec c = load_cluster(cluster);
  TrainingSettings t;
  t.seq = 2048;
  t.micro_batch = 1;
  t.global_batch = 16;
  Parallelism par;
  par.dp_shard = 8 / pp;
  par.pp = pp;
  par.pp_schedule = pp > 1 ? PipelineSchedule::one_f_one_b : PipelineSchedule::none;
  Plan p = default_plan(load_model("llama3.2-1b"), c, t, par, 1, RecomputeMode::none);
  p.precision.param = param;
  p.loss_scale = ls;
  validate_plan(p, "fp16 test plan");
  return p;
}

std::vector<const Op*> ops_of(const RoleProgram& role, OpKind kind) {
  std::vector<const Op*> out;
  for (const Op& op : role.ops)
    if (op.kind == kind) out.push_back(&op);
  return out;
}

int id_of(const RoleProgram& role, const std::string& name) {
  for (std::size_t i = 0; i < role.ops.size(); ++i)
    if (role.ops[i].name == name) return int(i);
  return -1;
}

TEST_CASE("fp16 costs what bf16 costs on GPUs whose fp16 and bf16 peaks are equal") {
  for (const char* cluster : {"dgx-h100", "dgx-a100-80gb"}) {
    CAPTURE(cluster);
    const Plan bf16 = h100_plan(cluster, DType::bf16, std::nullopt), fp16 = h100_plan(cluster, DType::fp16, std::nullopt);
    REQUIRE(bf16.cluster.gpu.peak(DType::fp16) == bf16.cluster.gpu.peak(DType::bf16));
    const Simulation a = simulate(bf16), b = simulate(fp16);
    CHECK(a.step_time_s == b.step_time_s);
    CHECK(a.mfu == b.mfu);
    CHECK(a.peak_memory_total_bytes == b.peak_memory_total_bytes);
  }
}

TEST_CASE("loss scaling: one unscale op after every reduction, before the norm, sized by the gradient shard") {
  const Plan plan = h100_plan("dgx-h100", DType::fp16, LossScaleSettings{});
  const StepProgram prog = lower(plan);
  const RoleProgram& role = prog.roles[0];
  const auto unscale = ops_of(role, OpKind::unscale);
  REQUIRE(unscale.size() == 1);
  const int id = id_of(role, "unscale");
  for (const Op* rs : ops_of(role, OpKind::reduce_scatter)) {
    const int rs_id = int(rs - role.ops.data());
    CHECK(std::find(unscale[0]->deps.begin(), unscale[0]->deps.end(), rs_id) != unscale[0]->deps.end());
  }
  const Op& clip = role.ops[std::size_t(id_of(role, "clip.ar"))];
  CHECK(clip.deps == std::vector<int>{id});
  CHECK(unscale[0]->stream == StreamKind::compute);
  // fp32 reduced shards of 1/8 of the parameters: read and written once.
  const double params = double(count_params(plan.model).total());
  const WorkSet& w = prog.work_sets[std::size_t(unscale[0]->work_set)];
  REQUIRE(w.kernels.size() == 1);
  CHECK(w.kernels[0].bytes == doctest::Approx(2 * 4 * params / 8).epsilon(1e-12));
  CHECK_FALSE(w.kernels[0].matmul);
  CHECK(ops_of(lower(h100_plan("dgx-h100", DType::fp16, std::nullopt)).roles[0], OpKind::unscale).empty());
}

TEST_CASE("loss scaling lengthens the step by the unscale op's duration; the trace shows it") {
  const Simulation without = simulate(h100_plan("dgx-h100", DType::fp16, std::nullopt));
  const Simulation with = simulate(h100_plan("dgx-h100", DType::fp16, LossScaleSettings{}));
  const RoleProgram& role = with.program.roles[0];
  const Op& op = role.ops[std::size_t(id_of(role, "unscale"))];
  const KernelWork& k = with.program.work_sets[std::size_t(op.work_set)].kernels[0];
  CHECK(op.duration_s == doctest::Approx(kernel_time_s(k, load_cluster("dgx-h100").gpu, DType::fp16)));
  CHECK(op.duration_s > 0);
  CHECK(double(with.engine.step_time_ns - without.engine.step_time_ns) ==
        doctest::Approx(op.duration_s * 1e9).epsilon(1e-6));
  std::ostringstream trace;
  write_chrome_trace(with.program, with.engine, trace);
  CHECK(trace.str().find(R"("name":"unscale")") != std::string::npos);
  CHECK(trace.str().find(R"("kind":"unscale")") != std::string::npos);
}

TEST_CASE("loss scaling without clipping: the inf flag still has its all-reduce, per pipeline rank too") {
  for (int pp : {1, 2}) {
    CAPTURE(pp);
    Plan plan = h100_plan("dgx-h100", DType::fp16, LossScaleSettings{}, pp);
    plan.optimizer.grad_clip_norm = 0;
    const Simulation s = simulate(plan);
    for (const RoleProgram& role : s.program.roles) {
      CHECK(ops_of(role, OpKind::unscale).size() == 1);
      CHECK(id_of(role, "inf.ar") >= 0);
      CHECK((id_of(role, "inf.pp") >= 0) == (pp > 1));
      CHECK(id_of(role, "clip.ar") < 0);
    }
    plan.loss_scale.reset();
    CHECK(id_of(lower(plan).roles[0], "inf.ar") < 0);
  }
}

}  // namespace
}  // namespace fsdpx
