// tests/program/test_parallel_comms.cpp — the tensor-parallel collectives of a block under fp8: torchtitan
// applies torchao's float8 TP plan (fp8 sequence-parallel all-gathers) for the tensorwise recipe only, so a
// tensorwise block's two forward and two backward all-gathers carry one byte per element while its
// reduce-scatters keep the bf16 bytes, and rowwise, Transformer Engine recipes and bf16 keep bf16 throughout.
// And the context-parallel K/V exchange: PyTorch's ring as torchtitan runs it (K and V repeated to every
// query head, dK and dV sent to the next rank in fp32 at every step) against fsdpx's own.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/cluster_spec.h"
#include "core/config_paths.h"
#include "core/plan.h"
#include "program/parallel_comms.h"

namespace fsdpx {
namespace {

const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

Plan tp_plan(std::optional<Fp8Scaling> scaling) {
  const ModelSpec m = load_model(kConfigs + "/models/llama3.1-8b.json");
  ClusterSpec c = load_cluster(kConfigs + "/clusters/dgx-h100.json");
  Parallelism par;
  par.tp = 8, par.dp_shard = 1, par.sequence_parallel = true;
  c.nodes = 1;
  Plan p = default_plan(m, c, TrainingSettings{8192, 1, 1, 0}, par, 1, RecomputeMode::none);
  if (scaling) p.fp8 = Fp8Settings{*scaling, false};
  return p;
}

// The all-gather and reduce-scatter bytes of block 1's forward and backward over the tp group (index 0).
struct BlockBytes {
  std::vector<double> gathers, scatters;
};

BlockBytes block_bytes(const Plan& p) {
  const StepGroups g{-1, -1, -1, 0, -1};
  std::vector<SerialCollective> out;
  add_forward_comms(out, p, g, 1);
  add_backward_comms(out, p, g, 1);
  BlockBytes b;
  for (const SerialCollective& sc : out)
    for (int k = 0; k < sc.count; ++k) {
      if (sc.kind == Collective::all_gather) b.gathers.push_back(sc.bytes);
      if (sc.kind == Collective::reduce_scatter) b.scatters.push_back(sc.bytes);
    }
  return b;
}

TEST_CASE("parallel comms: tensorwise fp8 all-gathers the blocks' sequence-parallel inputs in fp8, rowwise in bf16") {
  const BlockBytes bf16 = block_bytes(tp_plan(std::nullopt));
  const double exchange = 8192.0 * 4096 * 2;  // [tokens, hidden] of the micro-batch in bf16
  REQUIRE(bf16.gathers.size() == 4);
  REQUIRE(bf16.scatters.size() == 4);
  for (double b : bf16.gathers) CHECK(b == doctest::Approx(exchange));
  const BlockBytes tensorwise = block_bytes(tp_plan(Fp8Scaling::tensorwise));
  REQUIRE(tensorwise.gathers.size() == 4);
  for (double b : tensorwise.gathers) CHECK(b == doctest::Approx(exchange / 2));
  CHECK(tensorwise.scatters == bf16.scatters);  // the rowwise layers' outputs and the inputs' gradients stay bf16
  for (Fp8Scaling s : {Fp8Scaling::rowwise, Fp8Scaling::delayed, Fp8Scaling::current}) {
    const BlockBytes other = block_bytes(tp_plan(s));
    CHECK(other.gathers == bf16.gathers);
    CHECK(other.scatters == bf16.scatters);
  }
}

Plan cp_plan(Framework f) {
  Plan p = tp_plan(std::nullopt);
  p.parallelism.tp = 1, p.parallelism.cp = 8, p.parallelism.sequence_parallel = false;
  p.training.seq = 8 * 8192;
  p.framework = f;
  return p;
}

// Block 1's cp collectives in one pass, against the expected (kind, bytes, count) in order.
struct Expected {
  Collective kind;
  double bytes;
  int count;
};
void check_cp_comms(const Plan& p, bool backward, const std::vector<Expected>& want) {
  const StepGroups g{-1, -1, -1, -1, 0};
  std::vector<SerialCollective> got;
  if (backward)
    add_backward_comms(got, p, g, 1);
  else
    add_forward_comms(got, p, g, 1);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].kind == want[i].kind);
    CHECK(got[i].bytes == doctest::Approx(want[i].bytes));
    CHECK(got[i].count == want[i].count);
  }
}

TEST_CASE("parallel comms: torchtitan's ring exchanges K and V with every query head and sends dK, dV in fp32") {
  const double local_tokens = 8192, head_dim = 128, cp = 8;
  const double kv_heads_bytes = 2 * local_tokens * cp * 8 * head_dim * 2;  // cp x local K, V of 8 KV heads, bf16
  const double q_heads_bytes = 2 * local_tokens * cp * 32 * head_dim * 2;  // the same with 32 heads (repeat_kv)
  const Plan own = cp_plan(Framework::fsdpx), titan = cp_plan(Framework::torchtitan);
  check_cp_comms(own, false, {{Collective::all_gather, kv_heads_bytes, 1}});
  check_cp_comms(own, true,
                 {{Collective::all_gather, kv_heads_bytes, 1}, {Collective::reduce_scatter, kv_heads_bytes, 1}});
  check_cp_comms(titan, false, {{Collective::all_gather, q_heads_bytes, 1}});
  // K and V gathered again, then the rank's own dK, dV in fp32 sent on at each of the cp ring steps.
  check_cp_comms(titan, true,
                 {{Collective::all_gather, q_heads_bytes, 1}, {Collective::send_recv, q_heads_bytes / cp * 2, 8}});
}

}  // namespace
}  // namespace fsdpx
