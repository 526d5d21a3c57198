// tests/cost_models/test_ring_attention.cpp — PyTorch's ring attention kernels (cost_models/
// ring_attention.cpp) as the block inventory lists them: absent at cp = 1 and for stacks without it, one
// set of casts and copies per ring step (the work grows by the same amount with every step), the merge's
// bytes per output element between the partial and the whole-tensor update, and the roofline share of
// the attention they add on Llama-3.1-8B at torchtitan's long-context shapes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cost_models/compute.h"
#include "cost_models/stack_costs.h"
#include "tests/support/specs.h"

namespace fsdpx {
namespace {

bool is_ring(const KernelWork& k) { return k.name.rfind("ring_", 0) == 0; }

double ring_bytes(const std::vector<KernelWork>& ks, const std::string& prefix = "ring_") {
  double b = 0;
  for (const KernelWork& k : ks)
    if (k.name.rfind(prefix, 0) == 0) b += k.bytes;
  return b;
}

// torchtitan's compiled stack, 32768 tokens per rank at every cp (its long-context table's shapes).
LayerShape shape(int cp, bool ring = true) {
  LayerShape s;
  s.micro_batch = 1;
  s.cp = cp;
  s.seq = 32768LL * cp;
  s.stack = stack_costs(Framework::torchtitan, true);
  s.stack.torch_ring_attention = ring;
  return s;
}

double pass_ring_bytes(int cp, Pass p) { return ring_bytes(block_kernels(test::llama31_8b(), shape(cp), p)); }

TEST_CASE("ring attention kernels appear only with cp > 1 on a stack that runs PyTorch's ring") {
  const ModelSpec m = test::llama31_8b();
  CHECK(stack_costs(Framework::torchtitan, true).torch_ring_attention);
  CHECK_FALSE(stack_costs(Framework::megatron, false).torch_ring_attention);
  for (Pass p : {Pass::forward, Pass::input_grad}) {
    CHECK(ring_bytes(block_kernels(m, shape(1), p)) == 0);
    CHECK(ring_bytes(block_kernels(m, shape(4, false), p)) == 0);
    CHECK(ring_bytes(block_kernels(m, shape(4), p)) > 0);
  }
  CHECK(ring_bytes(block_kernels(m, shape(4), Pass::weight_grad)) == 0);
}

TEST_CASE("every ring step adds the same work at a fixed number of tokens per rank") {
  for (Pass p : {Pass::forward, Pass::input_grad}) {
    const double step = pass_ring_bytes(3, p) - pass_ring_bytes(2, p);
    CHECK(step > 0);
    CHECK(pass_ring_bytes(8, p) - pass_ring_bytes(4, p) == doctest::Approx(4 * step).epsilon(1e-12));
  }
}

TEST_CASE("the forward merge moves between a partial and a whole-tensor update per output element") {
  // Whole: fp32 cast (2 + 4 bytes), difference (8 + 4), product (4 + 4), difference (8 + 4): 38 bytes per
  // output element. Partial: that over half of them, then torch.cat of the whole fp32 output (4 + 4): 27.
  const ModelSpec m = test::llama31_8b();
  const double out = 32768.0 * double(m.q_dim());
  const auto merge = [&](int cp) {
    const std::vector<KernelWork> ks = block_kernels(m, shape(cp), Pass::forward);
    return ring_bytes(ks, "ring_out_to_fp32") + ring_bytes(ks, "ring_merge_");
  };
  const double per_step = (merge(3) - merge(2)) / out;
  CHECK(per_step > 27.0);
  CHECK(per_step < 38.0);
}

TEST_CASE("on Llama-3.1-8B at cp 8 the ring's copies add a few percent to the attention") {
  const GpuSpec gpu = test::h100_sxm();
  const ModelSpec m = test::llama31_8b();
  for (Pass p : {Pass::forward, Pass::input_grad}) {
    double ring_s = 0, attention_s = 0;
    for (const KernelWork& k : block_kernels(m, shape(8), p)) {
      if (is_ring(k)) ring_s += kernel_time_s(k, gpu, DType::bf16);
      if (k.attention_seq > 0) attention_s += kernel_time_s(k, gpu, DType::bf16);
    }
    MESSAGE("ring / attention time: " << ring_s / attention_s);
    CHECK(ring_s > 0.02 * attention_s);
    CHECK(ring_s < 0.15 * attention_s);
  }
}

// torchtitan up to v0.2.1 expands K and V to every query head (repeat_kv) before SDPA; v0.2.2 passes
// enable_gqa (core/framework.h): the copies go, attention reads the KV heads as they are, and the
// ring's K/V concatenations shrink by n_heads / n_kv_heads (4 on Llama-3.1-8B); SDPA's output copy stays.
TEST_CASE("torchtitan 0.2.2's enable_gqa drops repeat_kv's copies and shrinks the ring's K/V traffic") {
  const ModelSpec m = test::llama31_8b();
  CHECK(stack_costs(Framework::torchtitan, true).repeat_kv);
  CHECK(stack_costs(Framework::torchtitan, true, "0.2.1").repeat_kv);
  CHECK(stack_costs(Framework::torchtitan, true, "pre-0.1.0").repeat_kv);
  CHECK_FALSE(stack_costs(Framework::torchtitan, true, "0.2.2").repeat_kv);
  CHECK(stack_costs(Framework::torchtitan, true, "0.2.2").attention_copies);
  LayerShape gqa = shape(4);
  gqa.stack = stack_costs(Framework::torchtitan, true, "0.2.2");
  const auto bytes_of = [&](const LayerShape& s, const std::string& prefix) {
    return ring_bytes(block_kernels(m, s, Pass::forward), prefix);
  };
  CHECK(bytes_of(shape(4), "repeat_") > 0);
  CHECK(bytes_of(gqa, "repeat_") == 0);
  CHECK(bytes_of(gqa, "attn_out_copy") == bytes_of(shape(4), "attn_out_copy"));
  const double ratio = double(m.heads) / double(m.kv_heads);
  CHECK(bytes_of(shape(4), "ring_kv_cat") == doctest::Approx(ratio * bytes_of(gqa, "ring_kv_cat")).epsilon(1e-12));
}

}  // namespace
}  // namespace fsdpx
