// tests/cost_models/test_compute_elementwise.cpp — the elementwise kernels a stack runs around the
// block's GEMMs (cost_models/compute_elementwise.cpp, stack_costs.cpp): fms-fsdp's RoPE (fp32 pairs
// times 2x2 rotation matrices, then a sum) moves 36 bytes per bf16 Q/K element each way where
// torchtitan's complex product moves 20, and everything else of fms's eager stack is torchtitan's.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/framework.h"
#include "cost_models/compute.h"
#include "cost_models/stack_costs.h"
#include "tests/support/specs.h"

namespace fsdpx {
namespace {

// HBM bytes and FLOPs of one pass's RoPE kernels ("rope." forward, "rope_bwd." backward).
struct RopeWork {
  double bytes = 0, flops = 0;
  int kernels = 0;
};

RopeWork rope_work(Framework f, bool compiled, Pass p) {
  LayerShape s;
  s.micro_batch = 2;
  s.seq = 4096;
  s.stack = stack_costs(f, compiled);
  RopeWork w;
  for (const KernelWork& k : block_kernels(test::llama31_8b(), s, p))
    if (k.name.rfind("rope", 0) == 0) {
      w.bytes += k.bytes;
      w.flops += k.flops;
      ++w.kernels;
    }
  return w;
}

// Q and K elements of Llama-3.1-8B (32 query heads, 8 KV heads of 128) over 2 x 4096 tokens.
constexpr double kQkElements = 2.0 * 4096 * (4096 + 1024);

TEST_CASE("fms-fsdp's eager RoPE moves 36 bytes per Q/K element each way, torchtitan's 20") {
  for (Pass p : {Pass::forward, Pass::input_grad}) {
    const RopeWork fms = rope_work(Framework::fms_fsdp, false, p);
    const RopeWork titan = rope_work(Framework::torchtitan, false, p);
    // cast in (2 + 4), rotation product (4 + 8), pair sum (8 + 4), cast out (4 + 2), for Q and for K.
    CHECK(fms.bytes == doctest::Approx(36 * kQkElements));
    CHECK(fms.kernels == 8);
    // cast in (2 + 4), complex product (4 + 4), cast out (4 + 2).
    CHECK(titan.bytes == doctest::Approx(20 * kQkElements));
    CHECK(titan.kernels == 6);
  }
  // No RoPE work in the weight-gradient pass for either stack.
  CHECK(rope_work(Framework::fms_fsdp, false, Pass::weight_grad).kernels == 0);
}

TEST_CASE("compiled, fms-fsdp's RoPE is the fused kernel, as torchtitan's is") {
  for (Pass p : {Pass::forward, Pass::input_grad}) {
    const RopeWork fms = rope_work(Framework::fms_fsdp, true, p);
    const RopeWork titan = rope_work(Framework::torchtitan, true, p);
    CHECK(fms.kernels == 1);
    CHECK(fms.bytes == doctest::Approx(titan.bytes));
    CHECK(fms.bytes == doctest::Approx(4 * kQkElements));  // bf16 read and write
  }
}

TEST_CASE("fms-fsdp's stack is torchtitan's eager stack but for RoPE") {
  for (bool compiled : {false, true}) {
    const StackCosts fms = stack_costs(Framework::fms_fsdp, compiled);
    const StackCosts titan = stack_costs(Framework::torchtitan, compiled);
    CHECK(fms.norm == titan.norm);
    CHECK(fms.unfused_swiglu == titan.unfused_swiglu);
    CHECK(fms.separate_projections == titan.separate_projections);
    CHECK(fms.attention_copies == titan.attention_copies);
    CHECK(fms.repeat_kv);  // fms expands K and V with unsqueeze/expand/flatten before SDPA
    CHECK(fms.loss == titan.loss);
    CHECK(fms.fsdp == titan.fsdp);
    CHECK(fms.optimizer == titan.optimizer);
    CHECK(fms.rope == (compiled ? RopeImpl::fused : RopeImpl::eager_rotation_matrix));
  }
  CHECK(stack_costs(Framework::torchtitan, false).rope == RopeImpl::eager_complex);
}

TEST_CASE("fms-fsdp is a named PyTorch stack that can compile") {
  CHECK(framework_name(Framework::fms_fsdp) == "fms-fsdp");
  CHECK(framework_from_name("fms-fsdp") == Framework::fms_fsdp);
  CHECK(framework_can_compile(Framework::fms_fsdp));
  CHECK(framework_versions(Framework::fms_fsdp).empty());
}

}  // namespace
}  // namespace fsdpx
