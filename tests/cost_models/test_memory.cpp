// tests/cost_models/test_memory.cpp — model state against the ZeRO paper and Megatron's distributed
// optimizer table, activations against all six rows of Korthikanti et al. 2022 Table 2 (evaluated
// here from the paper's formulas) and their generalisations (flash, no dropout, SwiGLU, GQA, CP),
// logits and fixed overheads. Also covers cost_models/activations.cpp.
#include <cmath>
#include <string>

#include <doctest/doctest.h>

#include "cost_models/memory.h"
#include "tests/support/specs.h"

namespace fsdpx {
namespace {

// GPT-3 175B-like block (Korthikanti Table 3): h = 12288, a = 96, s = 2048, ffn = 4h, GELU.
ModelSpec gpt3() {
  ModelSpec m;
  m.name = "gpt3-175b-test";
  m.arch = Arch::gpt;
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.head_dim = 128;
  m.ffn_hidden = 4 * 12288;
  m.ffn_kind = FfnKind::gelu;
  m.vocab = 51200;
  m.max_seq = 2048;
  return m;
}

// Korthikanti's setting: 16-bit activations, dropout on, no FlashAttention.
ActivationShape korthikanti(int tp, bool sp, std::int64_t b = 1) {
  ActivationShape s;
  s.micro_batch = b;
  s.seq = 2048;
  s.tp = tp;
  s.sequence_parallel = sp;
  s.act_bytes = 2;
  s.flash_attention = false;
  s.dropout = true;
  return s;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST_CASE("ZeRO per-GPU model state with bf16 params, bf16 grads, fp32 master (Rajbhandari SC20)") {
  const PrecisionPolicy p;  // defaults
  const double params = 7e9;
  for (int n : {1, 8, 64}) {
    INFO("N=", n);
    CHECK(model_state_bytes(params, ShardingMode::ddp, n, p).total() == doctest::Approx(16 * params));
    CHECK(model_state_bytes(params, ShardingMode::zero1, n, p).total() ==
          doctest::Approx(4 * params + 12 * params / n));
    CHECK(model_state_bytes(params, ShardingMode::zero2, n, p).total() ==
          doctest::Approx(2 * params + 14 * params / n));
    CHECK(model_state_bytes(params, ShardingMode::zero3, n, p).total() == doctest::Approx(16 * params / n));
    CHECK(model_state_bytes(params, ShardingMode::hsdp, n, p).total() == doctest::Approx(16 * params / n));
  }
  const StateBytes z2 = model_state_bytes(params, ShardingMode::zero2, 8, p);
  CHECK(z2.params == doctest::Approx(2 * params));
  CHECK(z2.grads == doctest::Approx(2 * params / 8));
  CHECK(z2.optimizer == doctest::Approx(12 * params / 8));
}

TEST_CASE("sharding mode of each data-parallel mode's placements") {
  auto mode = [](DataParallel d, int dp_replicate) {
    Parallelism par;
    par.data_parallel = d, par.dp_replicate = dp_replicate, par.dp_shard = 4;
    return sharding_mode(data_placement(par));
  };
  CHECK(mode(DataParallel::fsdp_full_shard, 1) == ShardingMode::zero3);
  CHECK(mode(DataParallel::fsdp_shard_grad_op, 1) == ShardingMode::zero2);
  CHECK(mode(DataParallel::hsdp, 2) == ShardingMode::hsdp);
  CHECK(mode(DataParallel::ddp, 2) == ShardingMode::ddp);
  CHECK(mode(DataParallel::zero1, 1) == ShardingMode::zero1);
  CHECK(mode(DataParallel::distributed_optimizer, 2) == ShardingMode::zero1);
}

TEST_CASE("Megatron distributed optimizer bytes per parameter (dist_optimizer.md)") {
  const double params = 1e9;
  const PrecisionPolicy bf16_fp32{DType::bf16, DType::fp32, true};
  const PrecisionPolicy fp32_fp32{DType::fp32, DType::fp32, true};
  for (int d : {1, 4, 32}) {
    INFO("d=", d);
    CHECK(model_state_bytes(params, ShardingMode::ddp, d, bf16_fp32).total() == doctest::Approx(18 * params));
    CHECK(model_state_bytes(params, ShardingMode::zero1, d, bf16_fp32).total() ==
          doctest::Approx((6 + 12.0 / d) * params));
    CHECK(model_state_bytes(params, ShardingMode::ddp, d, fp32_fp32).total() == doctest::Approx(16 * params));
    CHECK(model_state_bytes(params, ShardingMode::zero1, d, fp32_fp32).total() ==
          doctest::Approx((8 + 8.0 / d) * params));
  }
  // Without an fp32 master the optimizer holds only m and v.
  CHECK(state_bytes_per_param(PrecisionPolicy{DType::bf16, DType::bf16, false}).optimizer == 8.0);
}

TEST_CASE("activations reproduce the six rows of Korthikanti et al. 2022 Table 2") {
  const ModelSpec m = gpt3();
  const double s = 2048, h = 12288, a = 96;
  for (std::int64_t b : {1, 4}) {
    for (int t : {2, 8}) {
      const double sbh = s * static_cast<double>(b) * h;
      // Beyond the table: the two LayerNorms' fp32 mean and rstd, 16 bytes per token in the norm region.
      const double stats = 16 * s * static_cast<double>(b);
      const double no_par = sbh * (34 + 5 * a * s / h) + stats;
      const double tp = sbh * (10 + 24.0 / t + 5 * a * s / (h * t)) + stats;
      const double tp_sp = (sbh * (34 + 5 * a * s / h) + stats) / t;
      const double tp_sel = sbh * (10 + 24.0 / t) + stats;
      const double tp_sp_sel = (34 * sbh + stats) / t;
      const double full = 2 * sbh;
      INFO("b=", b, " t=", t);
      CHECK(block_activation_bytes(m, korthikanti(1, false, b), Recompute::none) == doctest::Approx(no_par));
      CHECK(block_activation_bytes(m, korthikanti(t, false, b), Recompute::none) == doctest::Approx(tp));
      CHECK(block_activation_bytes(m, korthikanti(t, true, b), Recompute::none) == doctest::Approx(tp_sp));
      CHECK(block_activation_bytes(m, korthikanti(t, false, b), Recompute::selective) ==
            doctest::Approx(tp_sel));
      CHECK(block_activation_bytes(m, korthikanti(t, true, b), Recompute::selective) ==
            doctest::Approx(tp_sp_sel));
      CHECK(block_activation_bytes(m, korthikanti(1, false, b), Recompute::full) == doctest::Approx(full));
      CHECK(block_activation_bytes(m, korthikanti(t, false, b), Recompute::full) == doctest::Approx(full));
      CHECK(block_activation_bytes(m, korthikanti(t, true, b), Recompute::full) == doctest::Approx(full / t));
    }
  }
}

TEST_CASE("FlashAttention replaces the s² tensors by the fp32 log-sum-exp") {
  const ModelSpec m = gpt3();
  const double s = 2048, h = 12288, a = 96, t = 8;
  ActivationShape flash = korthikanti(8, true);
  flash.flash_attention = true;
  // 34·sbh/t (Korthikanti et al. 2022, arXiv 2205.05198, Table 2) plus 4·a·s·b/t bytes of LSE and 16·s·b/t of LayerNorm statistics.
  CHECK(block_activation_bytes(m, flash, Recompute::none) ==
        doctest::Approx(34 * s * h / t + 4 * a * s / t + 16 * s / t));
  // Selective recompute keeps the same tensors when there is nothing s² to drop.
  CHECK(block_activation_bytes(m, flash, Recompute::selective) ==
        doctest::Approx(block_activation_bytes(m, flash, Recompute::none)));
}

TEST_CASE("no dropout drops the two sbh masks and the s² mask and dropout output") {
  const ModelSpec m = gpt3();
  const double s = 2048, h = 12288, a = 96;
  ActivationShape nd = korthikanti(1, false);
  nd.dropout = false;
  const double stats = 16 * s;  // two LayerNorms' fp32 mean and rstd
  CHECK(block_activation_bytes(m, nd, Recompute::none) == doctest::Approx(s * h * (32 + 2 * a * s / h) + stats));
  nd.flash_attention = true;  // Llama-style: ≈ 32·sbh (Korthikanti et al. Table 2 without the two dropout masks) + LSE
  CHECK(block_activation_bytes(m, nd, Recompute::none) == doctest::Approx(32 * s * h + 4 * a * s + stats));
}

TEST_CASE("SwiGLU and GQA: MLP keeps gate, up and product; K and V are kv_dim wide") {
  const ModelSpec m = test::llama31_8b();
  ActivationShape sh;
  sh.micro_batch = 2;
  sh.seq = 4096;
  sh.act_bytes = 2;
  sh.flash_attention = true;
  sh.dropout = false;
  const double tokens = 2.0 * 4096, h = 4096, kv = 8 * 128, ffn = 14336, a = 32;
  // norm region: 2 norm inputs + QKV input + MLP input and two fp32 RMSNorm rstd; attention: Q, K, V,
  // O; MLP: 3·ffn; LSE.
  const double per_token = 2 * (4 * h) + 2 * 4 + 2 * (h + 2 * kv + h) + 2 * (3 * ffn) + 4 * a;
  CHECK(block_activation_bytes(m, sh, Recompute::none) == doctest::Approx(tokens * per_token));
  // TP 4 with SP divides everything by 4.
  ActivationShape tp = sh;
  tp.tp = 4;
  tp.sequence_parallel = true;
  CHECK(block_activation_bytes(m, tp, Recompute::none) == doctest::Approx(tokens * per_token / 4));
  // CP 2 halves the local sequence.
  ActivationShape cp = sh;
  cp.cp = 2;
  CHECK(block_activation_bytes(m, cp, Recompute::none) == doctest::Approx(tokens * per_token / 2));
  CHECK(block_activation_bytes(m, cp, Recompute::full) == doctest::Approx(tokens / 2 * 2 * h));
}

// DeepSeek-V3's latent attention as torchtitan runs it (model.py Attention.forward): beside Q and K
// (H x (nope + rope)) SDPA's V keeps wkv_b's whole output (H x (nope + v)), the output is H x v, and the
// latent tensors (wq_a's output and q_norm's, 2 x q_lora_rank; wkv_a's output, kv_lora_rank + rope;
// kv_norm's, kv_lora_rank) with the two norms' fp32 statistics stay unsplit by tp. v 24 != nope + 2 rope -
// v, so V and the output differ from the dense head_dim accounting.
TEST_CASE("latent attention keeps its latent tensors and V's storage; tp splits the heads only") {
  ModelSpec m = test::llama31_8b();
  m.heads = m.kv_heads = 4;
  m.head_dim = 24;  // qk_nope 16 + qk_rope 8
  m.mla = MlaSpec{32, 16, 8, 16, 24};
  ModelSpec dense = m;
  dense.mla = MlaSpec{};
  ActivationShape sh = korthikanti(1, false, 2);  // then flash, no dropout, 64 tokens per sequence
  sh.seq = 64, sh.flash_attention = true, sh.dropout = false;
  const double tokens = 2.0 * 64, heads = 4;
  // Per token over the dense accounting: V's storage (nope + v) and the output (v) in place of head_dim
  // each; the latent tensors; two fp32 rstd.
  const double heads_part = 2 * heads * ((16 + 24) - 24) + 2 * heads * (24 - 24);
  const double latent = 2 * (2 * 32 + (16 + 8) + 16) + 2 * 4;
  const double extra = block_activation_bytes(m, sh, Recompute::none) - block_activation_bytes(dense, sh, Recompute::none);
  CHECK(extra == doctest::Approx(tokens * (heads_part + latent)));
  ActivationShape tp = sh;
  tp.tp = 2;
  const double extra_tp = block_activation_bytes(m, tp, Recompute::none) - block_activation_bytes(dense, tp, Recompute::none);
  CHECK(extra_tp == doctest::Approx(tokens * (heads_part / 2 + latent)));
  CHECK(block_activation_bytes(m, sh, Recompute::full) == doctest::Approx(block_activation_bytes(dense, sh, Recompute::full)));
}

TEST_CASE("backward working set covers one re-materialised block plus gradients") {
  const ModelSpec m = test::llama31_8b();
  ActivationShape sh;
  sh.seq = 4096;
  const double saved = block_activation_bytes(m, sh, Recompute::none);
  const double work = block_backward_working_bytes(m, sh);
  // Gradients: residual in/out (2·h) + the larger of MLP (3·ffn) and attention (q + 2kv), at 2 bytes.
  const double grads = 4096.0 * 2 * (2 * 4096 + 3 * 14336);
  CHECK(work == doctest::Approx(saved + grads));
  ActivationShape eager = sh;
  eager.flash_attention = false;
  CHECK(block_backward_working_bytes(m, eager) > work);
}

TEST_CASE("embedding/head activations and logits") {
  const ModelSpec m = test::llama31_8b();
  ActivationShape sh;
  sh.micro_batch = 2;
  sh.seq = 4096;
  sh.tp = 4;
  sh.sequence_parallel = true;
  const double tokens = 2.0 * 4096, h = 4096, v = 128256;
  // int64 ids (and the 1-byte embedding dropout mask, /t with SP); final-norm input + head input
  // (2 bytes each) + the final RMSNorm's fp32 rstd, /t with SP.
  CHECK(embedding_activation_bytes(m, sh) == doctest::Approx(tokens * 8));
  CHECK(final_norm_activation_bytes(m, sh) == doctest::Approx(tokens * (2 * 2 * h + 4) / 4));
  sh.dropout = true;
  CHECK(embedding_activation_bytes(m, sh) == doctest::Approx(tokens * (8 + h / 4)));
  CHECK(final_norm_activation_bytes(m, sh) == doctest::Approx(tokens * (2 * 2 * h + 4) / 4));
  // Eager cross-entropy: fp32 log-probs over V/t kept, plus 3 fp32 per-token values; its backward adds
  // the fp32 nll gradient and the fp32 dlogits.
  CHECK(logits_bytes(m, sh) == doctest::Approx(tokens * (v / 4 * 4 + 12)));
  CHECK(logits_backward_working_bytes(m, sh) == doctest::Approx(tokens * v / 4 * (4 + 4)));
  sh.cp = 2;
  CHECK(logits_bytes(m, sh) == doctest::Approx(tokens / 2 * (v / 4 * 4 + 12)));
}

TEST_CASE("overheads stay inside the measured ranges (NCCL issues #864 and #964, GMLake arXiv 2401.08156)") {
  const double allocated = 60 * kGiB;
  const OverheadBytes o = overhead_bytes(3, allocated);
  CHECK(o.cuda_context > 0.25 * kGiB);
  CHECK(o.cuda_context < 1.0 * kGiB);
  CHECK(o.nccl_buffers >= 3 * 0.5e9);
  CHECK(o.nccl_buffers <= 3 * 1.5e9);
  CHECK(o.allocator_headroom >= 0.05 * allocated);
  CHECK(o.allocator_headroom <= 0.15 * allocated);
  CHECK(o.total() == doctest::Approx(o.cuda_context + o.nccl_buffers + o.allocator_headroom));
  // Linear in communicators and in allocated bytes.
  const OverheadBytes none = overhead_bytes(0, 0);
  CHECK(none.nccl_buffers == 0.0);
  CHECK(none.allocator_headroom == 0.0);
  CHECK(overhead_bytes(6, allocated).nccl_buffers == doctest::Approx(2 * o.nccl_buffers));
}

TEST_CASE("mode names") {
  CHECK(std::string(sharding_mode_name(ShardingMode::zero3)) == "zero3");
  CHECK(std::string(sharding_mode_name(ShardingMode::hsdp)) == "hsdp");
  CHECK(std::string(recompute_name(Recompute::selective)) == "selective");
}

}  // namespace fsdpx
