// tests/cuda/test_cuda_elementwise.cpp — CUDA RoPE, MLP activations (SwiGLU, GELU tanh, ReLU²),
// residual add, casts/padding and AdamW against the CPU reference (executor/cpu, executor/runtime/
// adamw) on fresh random bf16-representable inputs, forward and backward.
#include <doctest/doctest.h>

#include "executor/cpu/activation.h"
#include "executor/cpu/rope.h"
#include "executor/cuda/activation.h"
#include "executor/cuda/adamw.h"
#include "executor/cuda/cast.h"
#include "executor/cuda/rope.h"
#include "executor/runtime/adamw.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

TEST_CASE("cuda rope forward/backward match the CPU reference (GQA heads, V untouched)") {
  const std::int64_t b = 2, t = 19, nh = 4, nkv = 2, hd = 16, n = b * t * (nh + 2 * nkv) * hd;
  const auto table = cpu::make_rope_table<float>(t, hd, 10000.0);
  std::vector<float> x = random_bf16(n), fwd = x, bwd = x;
  cpu::rope_forward(fwd.data(), table, b, t, nh, nkv, hd);
  cpu::rope_backward(bwd.data(), table, b, t, nh, nkv, hd);
  DeviceBuffer<float> d_cos(table.cos.size()), d_sin(table.sin.size());
  upload(d_cos, table.cos), upload(d_sin, table.sin);
  DeviceBuffer<bf16> d_x(n);
  upload_bf16(d_x, x);
  rope_forward(d_x.get(), d_cos.get(), d_sin.get(), b, t, nh, nkv, hd, nullptr);
  CHECK(close("rope forward", download_bf16(d_x), fwd, 1e-6, kBf16Rtol));
  upload_bf16(d_x, x);
  rope_backward(d_x.get(), d_cos.get(), d_sin.get(), b, t, nh, nkv, hd, nullptr);
  CHECK(close("rope backward", download_bf16(d_x), bwd, 1e-6, kBf16Rtol));
}

// f = 129: single elements; f = 136: 16-byte packs (f % 8 == 0), 17 per row (SwiGLU's up half starts
// 136 elements in), 629 packs over 3 blocks.
void check_activation(FfnKind kind, std::int64_t n, std::int64_t f) {
  CAPTURE(n);
  CAPTURE(f);
  const std::int64_t w = cpu::mlp_up_width(kind, f);
  std::vector<float> inp = random_bf16(n * w, -3.0f, 3.0f), dout = random_bf16(n * f), dinp0 = random_bf16(n * w);
  std::vector<float> out(n * f), dinp = dinp0;
  cpu::mlp_act_forward(kind, out.data(), inp.data(), n, f);
  cpu::mlp_act_backward(kind, dinp.data(), dout.data(), inp.data(), n, f);
  DeviceBuffer<bf16> d_inp(n * w), d_out(n * f), d_dout(n * f), d_dinp(n * w);
  upload_bf16(d_inp, inp), upload_bf16(d_dout, dout), upload_bf16(d_dinp, dinp0);
  mlp_act_forward(kind, d_out.get(), d_inp.get(), n, f, nullptr);
  mlp_act_backward(kind, d_dinp.get(), d_dout.get(), d_inp.get(), n, f, nullptr);
  CHECK(close(std::string(ffn_kind_name(kind)) + " forward", download_bf16(d_out), out, 1e-5, kBf16Rtol));
  CHECK(close(std::string(ffn_kind_name(kind)) + " backward", download_bf16(d_dinp), dinp, 1e-5, kBf16Rtol));
}

void check_activation(FfnKind kind) {
  check_activation(kind, 37, 129);
  check_activation(kind, 37, 136);
}

TEST_CASE("cuda swiglu matches the CPU reference") { check_activation(FfnKind::swiglu); }
TEST_CASE("cuda gelu (tanh) matches the CPU reference") { check_activation(FfnKind::gelu); }
TEST_CASE("cuda squared relu matches the CPU reference") { check_activation(FfnKind::squared_relu); }

TEST_CASE("cuda residual add, casts and padding") {
  const std::int64_t n = 1001;
  std::vector<float> a = random_bf16(n), b = random_bf16(n), sum(n);
  cpu::residual_forward(sum.data(), a.data(), b.data(), n);
  DeviceBuffer<bf16> d_a(n), d_b(n), d_out(n);
  upload_bf16(d_a, a), upload_bf16(d_b, b);
  residual_forward(d_out.get(), d_a.get(), d_b.get(), n, nullptr);
  CHECK(close("residual", download_bf16(d_out), sum, 1e-6, kBf16Rtol));

  std::vector<float> f32 = random_bf16(n, -100.0f, 100.0f);
  for (float& v : f32) v *= 1.0f + 1e-3f;  // not bf16-representable any more: rounding is exercised
  std::vector<float> rounded(n), twice(n);
  for (std::int64_t i = 0; i < n; ++i) rounded[i] = round_bf16(f32[i]), twice[i] = f32[i] + rounded[i];
  DeviceBuffer<float> d_f32(n);
  upload(d_f32, f32);
  cast_f32_to_bf16(d_out.get(), d_f32.get(), n, nullptr);
  CHECK(close("cast f32->bf16 (round to nearest even)", download_bf16(d_out), rounded, 0, 0));
  cast_bf16_to_f32(d_f32.get(), d_out.get(), n, true, nullptr);
  CHECK(close("cast bf16->f32 accumulate", download(d_f32), twice, 0, 1e-7));

  const std::int64_t rows = 3, src_cols = 5, dst_cols = 8;
  std::vector<float> src = random_bf16(rows * src_cols), padded(rows * dst_cols, 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < src_cols; ++c) padded[r * dst_cols + c] = src[r * src_cols + c];
  DeviceBuffer<bf16> d_src(rows * src_cols), d_dst(rows * dst_cols);
  upload_bf16(d_src, src);
  upload_bf16(d_dst, random_bf16(rows * dst_cols, 1.0f, 2.0f));  // poison: padding must be written
  pad_columns_bf16(d_dst.get(), d_src.get(), rows, src_cols, dst_cols, nullptr);
  CHECK(close("pad columns", download_bf16(d_dst), padded, 0, 0));
  zero_tail_bf16(d_dst.get(), 10, rows * dst_cols, nullptr);
  for (std::int64_t i = 10; i < rows * dst_cols; ++i) padded[i] = 0.0f;
  CHECK(close("zero tail", download_bf16(d_dst), padded, 0, 0));
}

TEST_CASE("cuda adamw matches the CPU shard update over 3 steps and writes the bf16 copy") {
  const std::int64_t n = 5003;
  OptimizerSettings o;
  o.lr = 1e-2, o.weight_decay = 0.1, o.beta1 = 0.9, o.beta2 = 0.95, o.eps = 1e-8;
  std::vector<float> p = random_bf16(n), m(n, 0.0f), v(n, 0.0f);
  DeviceBuffer<float> d_p(n), d_m(n), d_v(n), d_g(n);
  DeviceBuffer<bf16> d_pb(n);
  upload(d_p, p), upload(d_m, m), upload(d_v, v);
  for (std::int64_t t = 1; t <= 3; ++t) {
    const std::vector<float> g = random_bf16(n);
    const AdamWStep step{o.lr, t, 0.7};
    adamw_update(o, step, p.data(), m.data(), v.data(), g.data(), n);
    upload(d_g, g);
    const AdamWArgs a{float(o.lr), float(o.beta1), float(o.beta2), float(o.eps), float(o.weight_decay), t, 0.7f};
    adamw_update(a, d_p.get(), d_m.get(), d_v.get(), d_g.get(), d_pb.get(), n, nullptr);
  }
  CHECK(close("adamw params", download(d_p), p, 1e-6, 1e-5));
  CHECK(close("adamw exp_avg", download(d_m), m, 1e-7, 1e-5));
  CHECK(close("adamw exp_avg_sq", download(d_v), v, 1e-9, 1e-5));
  std::vector<float> p_bf16(n);
  for (std::int64_t i = 0; i < n; ++i) p_bf16[i] = round_bf16(p[i]);
  CHECK(close("adamw bf16 copy", download_bf16(d_pb), p_bf16, 1e-6, kBf16Rtol));
}

}  // namespace
}  // namespace fsdpx::cuda::test
