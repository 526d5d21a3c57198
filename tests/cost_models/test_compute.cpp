// tests/cost_models/test_compute.cpp — the kernel inventory against independent closed forms
// (GEMM algebra, PaLM's 6N, Megatron's 72·B·s·l·h² formula, the zero-bubble per-pass split), tensor
// and context parallel scaling, and the roofline (which term binds, efficiency by size).
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "cost_models/compute.h"
#include "tests/support/specs.h"

namespace fsdpx {
namespace {

ModelSpec llama31_70b() {
  ModelSpec m = test::llama31_8b();
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.ffn_hidden = 28672;
  return m;
}

// A GPT of the shape Megatron's closed form assumes: MHA, ffn = 4h, GELU.
ModelSpec gpt_1_3b() {
  ModelSpec m;
  m.arch = Arch::gpt;
  m.layers = 24;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 16;
  m.head_dim = 128;
  m.ffn_hidden = 4 * 2048;
  m.ffn_kind = FfnKind::gelu;
  m.vocab = 50257;
  m.max_seq = 2048;
  m.tied_embeddings = true;
  m.bias = LinearBias::all;
  return m;
}

GpuSpec h100() { return test::h100_sxm(); }

double matmul_flops(const std::vector<KernelWork>& ks) {
  double f = 0;
  for (const KernelWork& k : ks)
    if (k.matmul) f += k.flops;
  return f;
}

// Matmul FLOPs of forward + input_grad + weight_grad for `kernels(m, s, pass)`.
template <class F>
double training_matmul_flops(F kernels, const ModelSpec& m, const LayerShape& s) {
  return matmul_flops(kernels(m, s, Pass::forward)) + matmul_flops(kernels(m, s, Pass::input_grad)) +
         matmul_flops(kernels(m, s, Pass::weight_grad));
}

const KernelWork& find(const std::vector<KernelWork>& ks, const std::string& name) {
  for (const KernelWork& k : ks)
    if (k.name == name) return k;
  FAIL("no kernel named ", name);
  return ks.front();
}

double rel_diff(double got, double want) { return std::abs(got - want) / std::abs(want); }

}  // namespace

TEST_CASE("forward block GEMM + attention FLOPs equal the closed form") {
  const ModelSpec m = test::llama31_8b();
  LayerShape s;
  s.micro_batch = 2;
  s.seq = 4096;
  const double T = 2.0 * 4096, h = 4096, q = 32 * 128, kv = 8 * 128, f = 14336;
  // 2·tokens·(h·(q+2kv) + q·h + 3·h·ffn) for the projections (SwiGLU has 3 ffn matrices), plus the
  // causal attention core: QKᵀ and PV are 2·T·s·q each, halved by the mask.
  const double want = 2 * T * (h * (q + 2 * kv) + q * h + 3 * h * f) + 0.5 * 2 * 2 * T * 4096 * q;
  const double got = matmul_flops(block_kernels(m, s, Pass::forward));
  INFO("got ", got, " want ", want, " rel diff ", rel_diff(got, want));
  CHECK(rel_diff(got, want) < 1e-12);
}

TEST_CASE("whole-model training matmul FLOPs per token are 6N' plus causal flash attention") {
  // N' = parameters in weight matrices only (no norms, biases or input embedding): per layer
  // h(q+2kv) + qh + 3h·ffn, plus the vocab×h LM head. PaLM's attention term 12·L·H·Q·T counts
  // forward 4·T·q per token per layer, backward 2×; causal halving gives 6·L·q·T. FlashAttention-2's
  // backward recomputes QKᵀ (2.5× forward instead of 2×), so the term here is 3.5/3 of that: 7·L·q·T.
  const ModelSpec m = test::llama31_8b();
  LayerShape s;
  s.micro_batch = 1;
  s.seq = 8192;
  const double h = 4096, q = 4096, kv = 1024, f = 14336, L = 32, V = 128256, T = 8192;
  const double n_prime = L * (h * (q + 2 * kv) + q * h + 3 * h * f) + V * h;
  const double want = 6 * n_prime + 7 * L * q * T;
  const double got =
      (L * training_matmul_flops(block_kernels, m, s) + training_matmul_flops(head_kernels, m, s)) / T;
  INFO("per token: got ", got, " want ", want, " rel diff ", rel_diff(got, want), " (tol 0.01)");
  CHECK(rel_diff(got, want) < 0.01);
  CHECK(training_matmul_flops(embedding_kernels, m, s) == 0);  // lookups only
}

TEST_CASE("GPT training FLOPs match Megatron's closed form with causal flash attention") {
  // Narayanan et al. 2021 without recompute: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)). Its attention
  // term 72·B·s·l·h²·s/(6h) = 12·B·s²·l·h is 3 passes × 4·B·s²·h (QKᵀ and PV, non-causal). Causal
  // halving makes it s/(12h). Our backward recomputes QKᵀ (FlashAttention-2): + 1·B·s²·h per layer.
  const ModelSpec m = gpt_1_3b();
  LayerShape s;
  s.micro_batch = 4;
  s.seq = 2048;
  const double B = 4, S = 2048, l = 24, h = 2048, V = 50257;
  const double megatron_causal = 72 * B * S * l * h * h * (1 + S / (12 * h) + V / (12 * l * h));
  const double want = megatron_causal + l * B * S * S * h;
  const double got = l * training_matmul_flops(block_kernels, m, s) +
                     training_matmul_flops(head_kernels, m, s);
  INFO("got ", got, " want ", want, " rel diff ", rel_diff(got, want));
  CHECK(rel_diff(got, want) < 1e-12);
}

TEST_CASE("per-pass block FLOPs follow the zero-bubble split W = 24·sbh², F = sbh(24h + 2s)") {
  // Qi et al. 2024 (Zero Bubble PP), Table 1 for an MHA, ffn = 4h layer: W = 24·sbh² exactly;
  // F = sbh(24h + 4s) non-causal, i.e. sbh(24h + 2s) causal; B = sbh(24h + 8s) without recompute,
  // which becomes sbh(24h + 5s) with causal flash backward (2.5× the causal forward 2s).
  const ModelSpec m = gpt_1_3b();
  LayerShape s;
  s.micro_batch = 2;
  s.seq = 1024;
  const double sbh = 1024.0 * 2 * 2048, h = 2048, S = 1024;
  CHECK(rel_diff(matmul_flops(block_kernels(m, s, Pass::weight_grad)), sbh * 24 * h) < 1e-12);
  CHECK(rel_diff(matmul_flops(block_kernels(m, s, Pass::forward)), sbh * (24 * h + 2 * S)) < 1e-12);
  CHECK(rel_diff(matmul_flops(block_kernels(m, s, Pass::input_grad)), sbh * (24 * h + 5 * S)) < 1e-12);
}

TEST_CASE("tensor parallelism divides every GEMM and attention by t exactly") {
  const ModelSpec m = llama31_70b();  // 64 heads, 8 KV heads, ffn 28672: all divisible by 8
  LayerShape s1;
  s1.seq = 4096;
  LayerShape s8 = s1;
  s8.tp = 8;
  for (Pass p : {Pass::forward, Pass::input_grad, Pass::weight_grad}) {
    const std::vector<KernelWork> k1 = block_kernels(m, s1, p), k8 = block_kernels(m, s8, p);
    REQUIRE(k1.size() == k8.size());
    for (std::size_t i = 0; i < k1.size(); ++i) {
      if (!k1[i].matmul) continue;
      INFO(k1[i].name, ": t=1 ", k1[i].flops, ", t=8 ", k8[i].flops);
      CHECK(k1[i].flops == doctest::Approx(8 * k8[i].flops).epsilon(1e-12));
    }
  }
  // The LM head is vocabulary-parallel: 2·tokens·h·V/t.
  CHECK(find(head_kernels(m, s8, Pass::forward), "lm_head").flops ==
        doctest::Approx(2.0 * 4096 * 8192 * 128256 / 8).epsilon(1e-12));
}

TEST_CASE("sequence parallelism puts norms on s/t tokens; without it they are repeated") {
  const ModelSpec m = test::llama31_8b();
  LayerShape s;
  s.seq = 4096;
  s.tp = 4;
  const double plain = find(block_kernels(m, s, Pass::forward), "attn_norm").bytes;
  s.sequence_parallel = true;
  const double sp = find(block_kernels(m, s, Pass::forward), "attn_norm").bytes;
  // Reads x and the weight, writes y and fp32 rstd: 2·tokens·h·2 + h·2 + tokens·4 bytes.
  const auto norm_bytes = [](double tokens) { return 4 * tokens * 4096 + 2 * 4096 + 4 * tokens; };
  CHECK(plain == doctest::Approx(norm_bytes(4096)));
  CHECK(sp == doctest::Approx(norm_bytes(1024)));
}

TEST_CASE("context parallelism splits causal attention evenly over ranks") {
  // Each of c ranks holds s/c queries over all s keys: per-rank FLOPs are 1/c of the c=1 total.
  const ModelSpec m = test::llama31_8b();
  LayerShape s;
  s.seq = 32768;
  const double whole = find(block_kernels(m, s, Pass::forward), "attn_core").flops;
  s.cp = 4;
  const double part = find(block_kernels(m, s, Pass::forward), "attn_core").flops;
  CHECK(part * 4 == doctest::Approx(whole).epsilon(1e-12));
  CHECK(find(block_kernels(m, s, Pass::forward), "qkv").flops ==
        doctest::Approx(2.0 * 8192 * 4096 * (4096 + 2 * 1024)).epsilon(1e-12));
}

TEST_CASE("kernel names are unique per pass; RoPE only for llama; embedding has no dX") {
  LayerShape s;
  s.seq = 1024;
  for (const ModelSpec& m : {test::llama31_8b(), gpt_1_3b()}) {
    for (Pass p : {Pass::forward, Pass::input_grad, Pass::weight_grad}) {
      std::set<std::string> names;
      for (const KernelWork& k : block_kernels(m, s, p)) {
        CHECK(!k.name.empty());
        CHECK(names.insert(k.name).second);
        CHECK(k.bytes > 0);
      }
      CHECK((names.count("rope") + names.count("rope_bwd") > 0) ==
            (m.arch == Arch::llama && p != Pass::weight_grad));
    }
    CHECK(embedding_kernels(m, s, Pass::input_grad).empty());
    CHECK(embedding_kernels(m, s, Pass::weight_grad).size() == 1);
  }
}

TEST_CASE("AdamW moves 16 bytes of fp32 state per parameter plus the gradient and the copy") {
  // Read param, m, v (fp32) + grad; write param, m, v; + a bf16 copy when params compute in bf16.
  const KernelWork bf16 = optimizer_kernel(1e6, DType::bf16, DType::fp32);
  CHECK(bf16.bytes == doctest::Approx((4 + 4 + 4 + 4 + 4 + 4 + 4 + 2) * 1e6));
  const KernelWork fp32 = optimizer_kernel(1e6, DType::fp32, DType::fp32);
  CHECK(fp32.bytes == doctest::Approx(28e6));
  CHECK_FALSE(fp32.matmul);
}

TEST_CASE("roofline: a norm is memory bound, a large GEMM compute bound") {
  const GpuSpec g = h100();
  LayerShape s;
  s.micro_batch = 1;
  s.seq = 8192;
  const std::vector<KernelWork> fwd = block_kernels(test::llama31_8b(), s, Pass::forward);

  const KernelWork& norm = find(fwd, "attn_norm");
  const double mem_s = norm.bytes / (g.hbm_bw_bytes_per_s * g.memory_efficiency.at(norm.bytes));
  INFO("norm: ", norm.bytes, " bytes, memory term ", mem_s, " s, vector term ",
       norm.flops / g.vector_flops_per_s, " s");
  CHECK(kernel_time_s(norm, g, DType::bf16) == doctest::Approx(mem_s).epsilon(1e-12));
  CHECK(mem_s > norm.flops / g.vector_flops_per_s);

  const KernelWork& up = find(fwd, "mlp_up");  // 2·8192·4096·28672 ≈ 1.9 TFLOP
  const double flop_s = up.flops / (989.4e12 * g.matmul_efficiency.at(up.flops));
  CHECK(kernel_time_s(up, g, DType::bf16) == doctest::Approx(flop_s).epsilon(1e-12));
  CHECK(flop_s > up.bytes / (g.hbm_bw_bytes_per_s * g.memory_efficiency.at(up.bytes)));

  CHECK(kernels_time_s(fwd, g, DType::bf16) > kernel_time_s(up, g, DType::bf16));
  CHECK(kernels_flops({norm, up}) == doctest::Approx(norm.flops + up.flops));
}

TEST_CASE("achieved GEMM throughput rises with size and stays below peak") {
  // Square bf16 GEMMs of growing n: time grows and achieved FLOP/s never falls (efficiency curve
  // interpolated linearly in log(size), clamped at both ends).
  const GpuSpec g = h100();
  double last_time_s = 0, last_flops_per_s = 0;
  for (double n = 256; n <= 32768; n *= 2) {
    KernelWork k;
    k.name = "gemm";
    k.flops = 2 * n * n * n;
    k.bytes = 3 * n * n * 2;
    k.matmul = true;
    const double time_s = kernel_time_s(k, g, DType::bf16);
    const double achieved = k.flops / time_s;
    INFO("n=", n, " time ", time_s, " s, achieved ", achieved / 1e12, " TFLOP/s");
    CHECK(time_s > last_time_s);
    CHECK(achieved >= last_flops_per_s * (1 - 1e-12));
    CHECK(achieved <= 0.95 * 989.4e12 * (1 + 1e-12));
    last_time_s = time_s;
    last_flops_per_s = achieved;
  }
}

TEST_CASE("unfused attention: full QK^T and PV without causal skipping, s² softmax and dropout traffic") {
  const ModelSpec m = gpt_1_3b();
  LayerShape s;
  s.micro_batch = 2;
  s.seq = 2048;
  s.tp = 2;
  s.attention_kernel = AttentionKernel::unfused;
  s.dropout = true;  // Megatron's GPT default attention dropout 0.1
  const double T = 2 * 2048.0, seq = 2048, q = double(m.q_dim()) / 2, a = double(m.heads) / 2;
  const double scores = T * a * seq;  // b·(a/t)·s·s elements per rank
  double gemm = 0, softmax_bytes = 0, dropout_bytes = 0;
  for (const KernelWork& k : block_kernels(m, s, Pass::forward)) {
    if (k.name == "attn_scores" || k.name == "attn_pv") gemm += k.flops;
    if (k.name == "attn_softmax") softmax_bytes = k.bytes;
    if (k.name == "attn_dropout") dropout_bytes = k.bytes;
    CHECK(k.name != "attn_core");
  }
  // Megatron's baddbmm computes the whole s×s square: 2 GEMMs of 2·T·s·q each (twice flash's causal count).
  CHECK(gemm == doctest::Approx(2 * 2 * T * seq * q));
  CHECK(softmax_bytes == doctest::Approx(scores * (2 + 2)));     // read S, write P (16-bit)
  CHECK(dropout_bytes == doctest::Approx(scores * (2 + 2 + 1)));  // read P, write P' and a byte mask
  double bwd_gemm = 0;
  for (const KernelWork& k : block_kernels(m, s, Pass::input_grad))
    if (k.name == "attn_pv_bwd" || k.name == "attn_scores_bwd") bwd_gemm += k.flops;
  CHECK(bwd_gemm == doctest::Approx(2 * gemm));  // dV, dP', dQ, dK
  // Korthikanti's selective recompute re-runs exactly these four forward kernels.
  int core = 0;
  for (const KernelWork& k : block_kernels(m, s, Pass::forward)) core += is_attention_core(k);
  CHECK(core == 4);
  // Without dropout (Plan::training.dropout 0) the dropout kernels go and nothing else changes.
  LayerShape nd = s;
  nd.dropout = false;
  for (Pass p : {Pass::forward, Pass::input_grad}) {
    const auto with = block_kernels(m, s, p), without = block_kernels(m, nd, p);
    CHECK(without.size() + 1 == with.size());
    for (const KernelWork& k : without) CHECK((k.name != "attn_dropout" && k.name != "attn_dropout_bwd"));
  }
}

}  // namespace fsdpx
