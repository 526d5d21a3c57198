// Tests for torchtitan's op-level selective AC (cost_models/op_sac.h): which matmuls are saved, the
// bytes a block keeps (against hand sums of the tensors the policy saves) and the recomputed work
// (against the closed-form FLOPs of the recomputed GEMMs plus the elementwise kernels).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cost_models/compute.h"
#include "cost_models/memory.h"
#include "cost_models/op_sac.h"

namespace fsdpx {
namespace {

// A small Llama: h = 256, 8 query heads and 2 KV heads of 32 (q = 256, kv = 64), SwiGLU ffn = 704.
ModelSpec small_llama() {
  ModelSpec m;
  m.name = "llama-small-test";
  m.arch = Arch::llama;
  m.layers = 2;
  m.hidden = 256;
  m.heads = 8;
  m.kv_heads = 2;
  m.head_dim = 32;
  m.ffn_hidden = 704;
  m.ffn_kind = FfnKind::swiglu;
  m.vocab = 1000;
  m.max_seq = 128;
  return m;
}

std::vector<std::string> saved_names(const ModelSpec& m, int tp) {
  std::vector<std::string> out;
  for (const BlockMatmul& mm : op_sac_matmuls(m, tp))
    if (mm.saved) out.push_back(mm.name);
  return out;
}

}  // namespace

TEST_CASE("op SAC saves every second mm in torchtitan's order: wq, wv, w1, w2 of Llama") {
  const ModelSpec llama = small_llama();
  CHECK(saved_names(llama, 1) == std::vector<std::string>{"wq", "wv", "w1", "w2"});
  ModelSpec gpt = llama;
  gpt.arch = Arch::gpt;
  gpt.ffn_kind = FfnKind::gelu;
  // Fused QKV: wqkv (1, saved), wo (2), up (3, saved), down (4).
  CHECK(saved_names(gpt, 1) == std::vector<std::string>{"wqkv", "w1"});
}

TEST_CASE("op SAC activation bytes: hand sum of the saved tensors of a small Llama") {
  const ModelSpec m = small_llama();
  ActivationShape s;
  s.micro_batch = 2;
  s.seq = 128;
  const double tokens = 256;
  // Per token, bf16: block input 2·256, wq 2·256, wv 2·64, w1 2·704, w2 2·256, SDPA output 2·256,
  // fp32 LSE 4·8 = 512 + 512 + 128 + 1408 + 512 + 512 + 32 = 3616 bytes.
  CHECK(block_activation_bytes(m, s, Recompute::selective_op) == doctest::Approx(tokens * 3616));
  // TP 2 with SP: input 256 (÷2 by SP), wq 256, wv 64, w1 704, w2 512 (row-parallel, full width),
  // SDPA output 256, LSE 16, two reduce-scatter outputs 2·256 = 2576 bytes.
  ActivationShape tp = s;
  tp.tp = 2;
  tp.sequence_parallel = true;
  CHECK(block_activation_bytes(m, tp, Recompute::selective_op) == doctest::Approx(tokens * 2576));
  // It sits between full recompute and none (FlashAttention: Korthikanti's selective equals none).
  CHECK(block_activation_bytes(m, s, Recompute::selective_op) > block_activation_bytes(m, s, Recompute::full));
  CHECK(block_activation_bytes(m, s, Recompute::selective_op) < block_activation_bytes(m, s, Recompute::selective));
}

TEST_CASE("op SAC recompute FLOPs = wk, wo, w3 GEMMs + norms, RoPE, residual, SwiGLU") {
  const ModelSpec m = small_llama();
  LayerShape s;
  s.micro_batch = 2;
  s.seq = 128;
  const double T = 256, h = 256, q = 256, kv = 64, ffn = 704;
  const std::vector<KernelWork> rk = op_sac_recompute_kernels(m, s);
  double gemm_flops = 0, vector_flops = 0;
  for (const KernelWork& k : rk) (k.matmul ? gemm_flops : vector_flops) += k.flops;
  // 2·m·n·k for wk [T×h]·[h×kv], wo [T×q]·[q×h], w3 [T×h]·[h×ffn].
  const double expected_gemm = 2 * T * h * kv + 2 * T * q * h + 2 * T * h * ffn;
  CHECK(gemm_flops == doctest::Approx(expected_gemm));
  double expected_vector = 0;
  for (const KernelWork& k : block_kernels(m, s, Pass::forward))
    if (k.name == "attn_norm" || k.name == "rope" || k.name == "attn_residual" || k.name == "mlp_norm" ||
        k.name == "mlp_act")
      expected_vector += k.flops;
  CHECK(expected_vector > 0);
  CHECK(vector_flops == doctest::Approx(expected_vector));
  // No attention core: SDPA's outputs are saved.
  for (const KernelWork& k : rk) CHECK(k.attention_seq == 0);
}

}  // namespace fsdpx
