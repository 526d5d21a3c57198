// tests/cost_models/test_compute_fp8.cpp — fp8 recipes on a block's kernels: which GEMMs turn fp8 (the
// linear layers, never attention), their FLOPs unchanged and operand bytes halved, the casts per recipe
// (tensorwise's amax pass or its producer's, delayed scaling's none, rowwise's extra backward casts, eager's
// chains, Transformer Engine's fp8-writing norm), the fp8 peak in the roofline, and the linear parameter
// count against the model's closed form.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cost_models/compute.h"
#include "cost_models/compute_fp8.h"
#include "cost_models/params.h"
#include "tests/support/specs.h"

namespace fsdpx {
namespace {

GpuSpec h100_fp8() {
  GpuSpec g;
  g.name = "h100-test";
  g.peak_flops_per_s = {{DType::bf16, 989.4e12}, {DType::fp8, 1979e12}, {DType::fp32, 66.9e12}};
  g.vector_flops_per_s = 66.9e12;
  g.hbm_bw_bytes_per_s = 3.35e12;
  g.matmul_efficiency.points = {{1e9, 0.6}, {16e9, 0.9}, {128e9, 0.95}};
  g.memory_efficiency.points = {{1e6, 0.6}, {100e6, 0.9}};
  g.attention_efficiency.points = {{512, 0.312}, {8192, 0.374}};
  g.attention_backward_efficiency.points = {{512, 0.216}, {8192, 0.321}};
  return g;
}

LayerShape shape(std::optional<Fp8Settings> fp8) {
  LayerShape s;
  s.micro_batch = 2;
  s.seq = 8192;
  s.fp8 = fp8;
  return s;
}

int count_prefix(const std::vector<KernelWork>& ks, const std::string& prefix) {
  int n = 0;
  for (const KernelWork& k : ks) n += k.name.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

double sum_flops(const std::vector<KernelWork>& ks, bool fp8) {
  double f = 0;
  for (const KernelWork& k : ks)
    if (k.matmul && k.fp8 == fp8) f += k.flops;
  return f;
}

TEST_CASE("fp8 turns exactly the linear GEMMs fp8, with their FLOPs, in every pass") {
  const ModelSpec m = test::llama31_8b();
  for (Pass p : {Pass::forward, Pass::input_grad, Pass::weight_grad}) {
    const auto bf16 = block_kernels(m, shape(std::nullopt), p);
    const auto fp8 = block_kernels(m, shape(Fp8Settings{}), p);
    double linear = 0;
    for (const KernelWork& k : bf16)
      if (is_linear_gemm(k)) linear += k.flops;
    CHECK(linear > 0);
    CHECK(sum_flops(fp8, true) == doctest::Approx(linear));
    CHECK(sum_flops(fp8, false) == doctest::Approx(sum_flops(bf16, false) - linear));  // attention stays bf16
    for (const KernelWork& k : fp8)
      if (k.name == "attn_core" || k.name == "attn_core_bwd") CHECK_FALSE(k.fp8);
  }
}

TEST_CASE("an fp8 GEMM reads one byte per operand element and runs at the fp8 peak") {
  const ModelSpec m = test::llama31_8b();
  const auto bf16 = block_kernels(m, shape(std::nullopt), Pass::forward);
  const auto fp8 = block_kernels(m, shape(Fp8Settings{}), Pass::forward);
  const KernelWork* a = nullptr;
  const KernelWork* b = nullptr;
  for (const KernelWork& k : bf16) if (k.name == "mlp_down") a = &k;
  for (const KernelWork& k : fp8) if (k.name == "mlp_down") b = &k;
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  const double T = 2 * 8192.0, n = 4096, kk = 14336;
  CHECK(a->bytes == doctest::Approx(2 * (T * kk + n * kk + T * n)));
  CHECK(b->bytes == doctest::Approx(T * kk + n * kk + 2 * T * n));
  const GpuSpec g = h100_fp8();
  // 1.9 TFLOP: past the curve's last point either way, so exactly twice as fast at twice the peak.
  CHECK(kernel_time_s(*b, g, DType::bf16) == doctest::Approx(kernel_time_s(*a, g, DType::bf16) / 2));
  // A 15 GFLOP GEMM: the curve is read at the work a bf16 GEMM does in the same time (half), where the
  // efficiency is lower, so it gains less than 2x.
  KernelWork small_bf16 = *a, small_fp8 = *b;
  small_bf16.flops = small_fp8.flops = 15e9;
  small_bf16.bytes = small_fp8.bytes = 0;
  const double t_bf16 = kernel_time_s(small_bf16, g, DType::bf16), t_fp8 = kernel_time_s(small_fp8, g, DType::bf16);
  CHECK(t_fp8 < t_bf16 / 1.5);
  CHECK(t_fp8 > t_bf16 / 2.0);
}

TEST_CASE("a measured fp8 matmul maximum scales the fp8 GEMMs' efficiency, never the bf16 ones") {
  const ModelSpec m = test::llama31_8b();
  KernelWork a, b;
  for (const KernelWork& k : block_kernels(m, shape(std::nullopt), Pass::forward)) if (k.name == "mlp_down") a = k;
  for (const KernelWork& k : block_kernels(m, shape(Fp8Settings{}), Pass::forward)) if (k.name == "mlp_down") b = k;
  REQUIRE(b.fp8);
  a.bytes = b.bytes = 0;  // compute-bound: time is FLOPs over peak x efficiency
  GpuSpec g = h100_fp8();
  const double bf16_before = kernel_time_s(a, g, DType::bf16), fp8_before = kernel_time_s(b, g, DType::bf16);
  // H100 SXM's MAMF fractions (ml-engineering): fp8 70.9% against the curve's top 95% here.
  g.fp8_matmul_max_efficiency = 0.709;
  CHECK(kernel_time_s(a, g, DType::bf16) == doctest::Approx(bf16_before));
  CHECK(kernel_time_s(b, g, DType::bf16) == doctest::Approx(fp8_before * 0.95 / 0.709));
  // At the same size below the curve's top, the same ratio: the curve's shape is kept.
  a.flops = b.flops = 4e9;
  g.fp8_matmul_max_efficiency = 0;
  const double small_before = kernel_time_s(b, g, DType::bf16);
  g.fp8_matmul_max_efficiency = 0.709;
  CHECK(kernel_time_s(b, g, DType::bf16) == doctest::Approx(small_before * 0.95 / 0.709));
}

TEST_CASE("sustained GEMM rates scale bf16 and fp8 GEMMs by their own ratio, never attention") {
  const ModelSpec m = test::llama31_8b();
  KernelWork a, b, attn;
  for (const KernelWork& k : block_kernels(m, shape(std::nullopt), Pass::forward)) {
    if (k.name == "mlp_down") a = k;
    if (k.name == "attn_core") attn = k;
  }
  for (const KernelWork& k : block_kernels(m, shape(Fp8Settings{}), Pass::forward)) if (k.name == "mlp_down") b = k;
  REQUIRE(b.fp8);
  a.bytes = b.bytes = attn.bytes = 0;  // compute-bound
  GpuSpec g = h100_fp8();
  g.fp8_matmul_max_efficiency = 0.709;
  const double bf16_burst = kernel_time_s(a, g, DType::bf16), fp8_burst = kernel_time_s(b, g, DType::bf16);
  const double attn_burst = kernel_time_s(attn, g, DType::bf16);
  g.matmul_sustained_efficiency = 0.7164;  // against the curve's top, 0.95 here
  CHECK(kernel_time_s(a, g, DType::bf16) == doctest::Approx(bf16_burst * 0.95 / 0.7164));
  // No fp8 figure: the bf16 ratio on top of the fp8 burst (the same settled clock).
  CHECK(kernel_time_s(b, g, DType::bf16) == doctest::Approx(fp8_burst * 0.95 / 0.7164));
  g.fp8_matmul_sustained_efficiency = 0.6512;  // its own figure replaces the burst maximum
  CHECK(kernel_time_s(b, g, DType::bf16) == doctest::Approx(fp8_burst * 0.709 / 0.6512));
  CHECK(kernel_time_s(attn, g, DType::bf16) == doctest::Approx(attn_burst));
  // cuDNN's attention runs at its own curve; the GEMMs do not care which attention runs.
  g.cudnn_attention_efficiency.points = {{512, 0.624}, {8192, 0.748}};  // twice FlashAttention-2's
  g.cudnn_attention_backward_efficiency.points = {{512, 0.432}, {8192, 0.642}};
  attn.attention_cudnn = true;
  CHECK(kernel_time_s(attn, g, DType::bf16) == doctest::Approx(attn_burst / 2));
}

TEST_CASE("casts per recipe: tensorwise has amax passes, delayed scaling none, rowwise recasts in backward") {
  const ModelSpec m = test::llama31_8b();
  const auto tw = block_kernels(m, shape(Fp8Settings{Fp8Scaling::tensorwise, false}), Pass::forward);
  const auto dl = block_kernels(m, shape(Fp8Settings{Fp8Scaling::delayed, false}), Pass::forward);
  const auto cur = block_kernels(m, shape(Fp8Settings{Fp8Scaling::current, false}), Pass::forward);
  CHECK(count_prefix(tw, "fp8_cast") > 0);
  int tw_amax = 0, dl_amax = 0, cur_amax = 0;
  for (const KernelWork& k : tw) tw_amax += k.name.find("_amax") != std::string::npos ? 1 : 0;
  for (const KernelWork& k : dl) dl_amax += k.name.find("_amax") != std::string::npos ? 1 : 0;
  for (const KernelWork& k : cur) cur_amax += k.name.find("_amax") != std::string::npos ? 1 : 0;
  CHECK(tw_amax > 0);
  CHECK(dl_amax == 0);
  // Compiled tensorwise: the activations' amax is computed by their producer (torchao's roofline,
  // fuse_with_prev), only the weights keep an amax pass; current scaling keeps one for every tensor.
  CHECK(cur_amax > tw_amax);
  CHECK(count_prefix(tw, "fp8_cast_qkv_weight_amax") == 1);
  // One input cast per distinct input: the fused qkv and mlp_up GEMMs; with torchtitan's separate
  // projections wq/wk/wv share one, w1/w3 one. Eager, each has its own amax (and more) as well.
  CHECK(count_prefix(tw, "fp8_cast_attn_in") == 1);
  CHECK(count_prefix(tw, "fp8_cast_mlp_in") == 1);
  CHECK(count_prefix(cur, "fp8_cast_attn_in") == 2);
  LayerShape separate = shape(Fp8Settings{});
  separate.stack.separate_projections = true;
  const auto sep = block_kernels(m, separate, Pass::forward);
  CHECK(count_prefix(sep, "fp8_cast_attn_in") == 1);
  CHECK(count_prefix(sep, "fp8_cast_mlp_in") == 1);
  CHECK(count_prefix(sep, "fp8_cast_wk_weight") == 2);
  LayerShape eager = separate;
  eager.fp8_fused_casts = false;
  CHECK(count_prefix(block_kernels(m, eager, Pass::forward), "fp8_cast_attn_in_amax") == 1);
  // The output gradients' amax likewise: in the producer when compiled, a pass of its own with current scaling.
  const auto tw_dx = block_kernels(m, shape(Fp8Settings{Fp8Scaling::tensorwise, false}), Pass::input_grad);
  const auto cur_dx = block_kernels(m, shape(Fp8Settings{Fp8Scaling::current, false}), Pass::input_grad);
  CHECK(count_prefix(tw_dx, "fp8_cast_mlp_down_grad_out_amax") == 0);
  CHECK(count_prefix(tw_dx, "fp8_cast_mlp_down_grad_out_cast") == 1);
  CHECK(count_prefix(cur_dx, "fp8_cast_mlp_down_grad_out_amax") == 1);
  const auto tw_dw = block_kernels(m, shape(Fp8Settings{Fp8Scaling::tensorwise, false}), Pass::weight_grad);
  const auto rw_dw = block_kernels(m, shape(Fp8Settings{Fp8Scaling::rowwise, false}), Pass::weight_grad);
  CHECK(count_prefix(tw_dw, "fp8_") == 0);  // compiled casts wrote both layouts in forward and input-grad
  CHECK(count_prefix(rw_dw, "fp8_cast") > 0);  // rowwise scales each axis separately
}

// torchao rowwise: slow-accumulation backward GEMMs run as tensorwise cuBLAS with the scales applied to the
// output afterwards (torchao/float8/float8_ops.py addmm_float8_unwrapped): one rescale per backward GEMM.
TEST_CASE("rowwise backward GEMMs rescale their bf16 outputs in a kernel of their own; tensorwise's do not") {
  const ModelSpec m = test::llama31_8b();
  const LayerShape rw = shape(Fp8Settings{Fp8Scaling::rowwise, false});
  const LayerShape tw = shape(Fp8Settings{Fp8Scaling::tensorwise, false});
  int gemms = 0, rescales = 0;
  KernelWork down_dx, down_dx_rescale;
  for (const KernelWork& k : block_kernels(m, rw, Pass::input_grad)) {
    gemms += is_linear_gemm(k) ? 1 : 0;
    rescales += k.name.find("_fp8_rescale") != std::string::npos ? 1 : 0;
    if (k.name == "mlp_down_dx") down_dx = k;
    if (k.name == "mlp_down_dx_fp8_rescale") down_dx_rescale = k;
  }
  CHECK(gemms > 0);
  CHECK(rescales == gemms);
  // dX of mlp_down is tokens x ffn_hidden, read and written in bf16.
  CHECK(down_dx_rescale.bytes == doctest::Approx(2 * 2 * down_dx.rows * down_dx.in_features));
  for (const auto& ks : {block_kernels(m, rw, Pass::forward), block_kernels(m, tw, Pass::input_grad),
                         block_kernels(m, tw, Pass::weight_grad)})
    CHECK(count_prefix(ks, "mlp_down_dx_fp8_rescale") + count_prefix(ks, "mlp_down_dw_fp8_rescale") == 0);
  CHECK(count_prefix(block_kernels(m, rw, Pass::weight_grad), "mlp_down_dw_fp8_rescale") == 1);
}

TEST_CASE("fp8 all-gather removes the forward weight casts; eager casts cost more than fused ones") {
  const ModelSpec m = test::llama31_8b();
  const auto no_ag = block_kernels(m, shape(Fp8Settings{Fp8Scaling::tensorwise, false}), Pass::forward);
  const auto ag = block_kernels(m, shape(Fp8Settings{Fp8Scaling::tensorwise, true}), Pass::forward);
  CHECK(count_prefix(no_ag, "fp8_cast_qkv_weight") > 0);
  CHECK(count_prefix(ag, "fp8_cast_qkv_weight") == 0);
  LayerShape eager = shape(Fp8Settings{});
  eager.fp8_fused_casts = false;
  const GpuSpec g = h100_fp8();
  double fused_s = 0, eager_s = 0;
  for (const KernelWork& k : no_ag) if (k.name.rfind("fp8_", 0) == 0) fused_s += kernel_time_s(k, g, DType::bf16);
  for (const KernelWork& k : block_kernels(m, eager, Pass::forward))
    if (k.name.rfind("fp8_", 0) == 0) eager_s += kernel_time_s(k, g, DType::bf16);
  CHECK(fused_s > 0);
  CHECK(eager_s > 2 * fused_s);
}

// Transformer Engine's LayerNormLinear (Megatron's linear_qkv and linear_fc1): with delayed scaling the
// norm writes fp8 and only the column-wise copy is made; current scaling casts after a bf16 norm.
TEST_CASE("Transformer Engine's norm writes the qkv and fc1 inputs in fp8 under delayed scaling only") {
  const ModelSpec m = test::llama31_8b();
  LayerShape dl = shape(Fp8Settings{Fp8Scaling::delayed, false});
  LayerShape cur = shape(Fp8Settings{Fp8Scaling::current, false});
  const auto dl_plain = block_kernels(m, dl, Pass::forward);
  dl.stack.te_layernorm_linear = cur.stack.te_layernorm_linear = true;
  const auto dl_ln = block_kernels(m, dl, Pass::forward);
  const auto cur_ln = block_kernels(m, cur, Pass::forward);
  CHECK(count_prefix(dl_plain, "fp8_cast_attn_in") == 1);
  CHECK(count_prefix(dl_ln, "fp8_cast_attn_in") == 0);
  CHECK(count_prefix(dl_ln, "fp8_cast_mlp_in") == 0);
  CHECK(count_prefix(dl_ln, "fp8_attn_in_t") == 1);
  CHECK(count_prefix(dl_ln, "fp8_cast_mlp_down") > 0);  // fc2's input comes from the activation: cast
  CHECK(count_prefix(cur_ln, "fp8_cast_attn_in") == 2);  // amax pass and cast
  const GpuSpec g = h100_fp8();
  CHECK(kernels_time_s(dl_ln, g, DType::bf16) < kernels_time_s(dl_plain, g, DType::bf16));
}

TEST_CASE("Transformer Engine casts a weight once per step: a share per micro-batch") {
  const ModelSpec m = test::llama31_8b();
  LayerShape one = shape(Fp8Settings{Fp8Scaling::delayed, false});
  LayerShape four = one;
  four.fp8_weight_casts_per_micro_batch = 0.25;
  double b1 = 0, b4 = 0;
  for (const KernelWork& k : block_kernels(m, one, Pass::forward)) if (k.name == "fp8_cast_qkv_weight_cast") b1 = k.bytes;
  for (const KernelWork& k : block_kernels(m, four, Pass::forward)) if (k.name == "fp8_cast_qkv_weight_cast") b4 = k.bytes;
  CHECK(b1 > 0);
  CHECK(b4 == doctest::Approx(b1 / 4));
}

TEST_CASE("linear parameters of a block: Llama-3.1-8B's block less its two norms") {
  const ModelSpec m = test::llama31_8b();
  const double norms = 2.0 * double(m.hidden);
  CHECK(fp8_linear_params_per_block(m) == doctest::Approx(double(count_params(m).per_block) - norms));
  CHECK(fp8_linear_gather_bytes(Fp8Settings{Fp8Scaling::tensorwise, true}, 2) == 1);
  CHECK(fp8_linear_gather_bytes(Fp8Settings{Fp8Scaling::tensorwise, false}, 2) == 2);
  CHECK(fp8_linear_gather_bytes(std::nullopt, 2) == 2);
}

}  // namespace
}  // namespace fsdpx
