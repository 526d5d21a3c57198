// tests/cuda/test_cuda_attention_tc.cpp — the tensor-core attention (executor/cuda/attention_tc.h, forward
// and backward, causal, GQA 4:1) against the CPU plain-softmax reference and the CUDA-core kernel
// (attention.h) on the same bf16 inputs, for head dims 64 and 128 and sequence lengths that are not
// multiples of the 64-row tile (one partial tile, and three tiles with a partial last one); its
// register-resident kernels (attention_fa2.h, which it runs) in bf16 and f16 at more shapes, with lse
// against its definition. Skipped with test_cuda's "SKIPPED: no CUDA device found" without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "executor/cpu/attention.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/attention_fa2.h"
#include "executor/cuda/attention_tc.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

struct AttnRun {
  std::vector<float> out, lse, dqkv;
};

// Forward then backward of the tensor-core (tc) or the CUDA-core kernel; dqkv starts at dqkv0 (+=).
AttnRun run_gpu(bool tc, const AttnShape& s, const std::vector<float>& qkv, const std::vector<float>& dout,
                const std::vector<float>& dqkv0) {
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  DeviceBuffer<bf16> d_qkv(n_qkv), d_out(n_out), d_dout(n_out), d_dqkv(n_qkv);
  DeviceBuffer<float> d_lse(flash_attention_lse_elems(s)), d_scratch(flash_attention_scratch_elems(s));
  upload_bf16(d_qkv, qkv), upload_bf16(d_dout, dout), upload_bf16(d_dqkv, dqkv0);
  upload_bf16(d_out, random_bf16(n_out, 5.0f, 6.0f));  // poison: every output must be written
  if (tc) {
    tc_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s, nullptr);
    tc_attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_out.get(), d_qkv.get(), d_lse.get(), s,
                          nullptr);
  } else {
    flash_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s, nullptr);
    flash_attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_out.get(), d_qkv.get(), d_lse.get(), s,
                             nullptr);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return AttnRun{download_bf16(d_out), download(d_lse), download_bf16(d_dqkv)};
}

void check_tc(const AttnShape& s) {
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  const auto qkv = random_bf16(n_qkv, -1.5f, 1.5f), dout = random_bf16(n_out), dqkv0 = random_bf16(n_qkv);
  std::vector<float> out(n_out), saved(cpu::attention_saved_elems(s)), dqkv = dqkv0;
  cpu::attention_forward(out.data(), saved.data(), qkv.data(), s);
  cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), s);
  const AttnRun tc = run_gpu(true, s, qkv, dout, dqkv0), core = run_gpu(false, s, qkv, dout, dqkv0);
  const std::string tag = "hd " + std::to_string(s.hd) + " t " + std::to_string(s.t);
  // P is rounded to bf16 before P·V and dS before dS·K, dSᵀ·Q (as FA2): bf16 tolerances, as test_cuda_attention.
  CHECK(close("tc forward vs CPU " + tag, tc.out, out, 1e-2, kBf16Rtol));
  CHECK(close("tc forward vs CUDA-core " + tag, tc.out, core.out, 1e-2, kBf16Rtol));
  CHECK(close("tc lse vs CUDA-core " + tag, tc.lse, core.lse, 1e-4, 1e-4));
  CHECK(close("tc backward dqkv vs CPU " + tag, tc.dqkv, dqkv, 2e-2, 2 * kBf16Rtol));
  CHECK(close("tc backward dqkv vs CUDA-core " + tag, tc.dqkv, core.dqkv, 2e-2, 2 * kBf16Rtol));
}

TEST_CASE("tensor-core attention matches the CPU reference and the CUDA-core kernel (GQA 4:1, ragged tiles)") {
  for (const std::int64_t hd : {64, 128})
    for (const std::int64_t t : {45, 150}) {
      AttnShape s;
      s.b = 2, s.t = t, s.nh = 8, s.nkv = 2, s.hd = hd;
      check_tc(s);
    }
}

// Host floats -> device T (bf16 or f16, rounded) and back.
template <class T>
void upload16(DeviceBuffer<T>& d, const std::vector<float>& x) {
  std::vector<T> h(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) h[i] = T(x[i]);
  upload(d, h);
}
template <class T>
std::vector<float> download16(const DeviceBuffer<T>& d) {
  const std::vector<T> h = download(d);
  std::vector<float> x(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) x[i] = float(h[i]);
  return x;
}

// lse [B, NH, T] = log Σ_{k ≤ t} exp(q·k / sqrt(HD)), in double, straight from the definition.
std::vector<float> reference_lse(const std::vector<float>& qkv, const AttnShape& s) {
  std::vector<float> lse(s.b * s.nh * s.t);
  const std::int64_t row = s.qkv_row();
  const double scale = 1.0 / std::sqrt(double(s.hd));
  for (std::int64_t b = 0; b < s.b; ++b)
    for (std::int64_t h = 0; h < s.nh; ++h)
      for (std::int64_t t = 0; t < s.t; ++t) {
        const std::int64_t kvh = h / (s.nh / s.nkv);
        const float* q = &qkv[(b * s.t + t) * row + h * s.hd];
        std::vector<double> x(t + 1);
        double mx = -1e300, sum = 0;
        for (std::int64_t k = 0; k <= t; ++k) {
          const float* kk = &qkv[(b * s.t + k) * row + (s.nh + kvh) * s.hd];
          double dot = 0;
          for (std::int64_t d = 0; d < s.hd; ++d) dot += double(q[d]) * kk[d];
          x[k] = dot * scale, mx = std::max(mx, x[k]);
        }
        for (const double v : x) sum += std::exp(v - mx);
        lse[(b * s.nh + h) * s.t + t] = float(mx + std::log(sum));
      }
  return lse;
}

// The register-resident kernels (attention_fa2.h, what tc_attention_forward and tc_attention_backward run)
// on T inputs against the CPU reference: out and lse (every element poisoned first), then dqkv += from a
// random start.
template <class T>
void check_fa2(std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv, std::int64_t hd) {
  AttnShape s;
  s.b = b, s.t = t, s.nh = nh, s.nkv = nkv, s.hd = hd;
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  // bf16 values, exact in f16 too (|x| < 2^-14 aside); what the GPU sees is rounded to T below.
  const auto to_t = [](std::vector<float> x) {
    for (float& v : x) v = float(T(v));
    return x;
  };
  const auto qkv = to_t(random_bf16(n_qkv, -1.5f, 1.5f)), dout = to_t(random_bf16(n_out)),
             dqkv0 = to_t(random_bf16(n_qkv));
  std::vector<float> out(n_out), saved(cpu::attention_saved_elems(s)), dqkv = dqkv0;
  cpu::attention_forward(out.data(), saved.data(), qkv.data(), s);
  cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), s);
  const std::vector<float> lse = reference_lse(qkv, s);
  DeviceBuffer<T> d_qkv(n_qkv), d_out(n_out), d_dout(n_out), d_dqkv(n_qkv);
  DeviceBuffer<float> d_lse(flash_attention_lse_elems(s)), d_scratch(flash_attention_scratch_elems(s));
  upload16(d_qkv, qkv), upload16(d_dout, dout), upload16(d_dqkv, dqkv0);
  upload16(d_out, random_bf16(n_out, 5.0f, 6.0f));  // poison: every output must be written
  upload(d_lse, std::vector<float>(d_lse.size(), 1e30f));
  fa2_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s, nullptr);
  fa2_attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_out.get(), d_qkv.get(), d_lse.get(), s,
                         nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const bool is_bf16 = std::is_same_v<T, bf16>;
  const std::string tag = std::string(is_bf16 ? "bf16" : "f16") + " b " + std::to_string(b) + " t " +
                          std::to_string(t) + " nh/nkv " + std::to_string(nh) + "/" + std::to_string(nkv) + " hd " +
                          std::to_string(hd);
  // P and dS are rounded to T before their products (as FA2), and the results to T: T's tolerances (f16
  // keeps 3 more bits than bf16).
  CHECK(close("fa2 forward vs CPU " + tag, download16(d_out), out, is_bf16 ? 1e-2 : 2e-3, is_bf16 ? kBf16Rtol : 2e-3));
  CHECK(close("fa2 lse vs definition " + tag, download(d_lse), lse, 1e-4, 1e-4));
  CHECK(close("fa2 backward dqkv vs CPU " + tag, download16(d_dqkv), dqkv, is_bf16 ? 2e-2 : 1e-2,
              is_bf16 ? 2 * kBf16Rtol : 1e-2));
}

TEST_CASE("register-resident attention (mma.sync) matches the CPU reference: bf16, f16, GQA, ragged T") {
  for (const std::int64_t hd : {64, 128}) {
    check_fa2<bf16>(1, 37, 4, 1, hd);   // T < 64: one partial tile, GQA 4:1
    check_fa2<bf16>(2, 150, 8, 2, hd);  // B 2, three tiles, the last partial
    check_fa2<bf16>(1, 128, 4, 4, hd);  // T a multiple of 64, MHA (1:1)
    check_fa2<f16>(2, 45, 4, 4, hd);
    check_fa2<f16>(1, 201, 8, 2, hd);
  }
}

TEST_CASE("tensor-core attention takes head dims 64 and 128 only, and its backward is bitwise deterministic") {
  AttnShape s;
  s.b = 1, s.t = 100, s.nh = 4, s.nkv = 1, s.hd = 64;
  CHECK(tc_attention_supports(s));
  AttnShape odd = s;
  odd.hd = 96;
  CHECK_FALSE(tc_attention_supports(odd));
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  const auto qkv = random_bf16(n_qkv), dout = random_bf16(n_out), zeros = std::vector<float>(n_qkv, 0.0f);
  const AttnRun first = run_gpu(true, s, qkv, dout, zeros), second = run_gpu(true, s, qkv, dout, zeros);
  CHECK(first.out == second.out);
  CHECK(first.dqkv == second.dqkv);
}

}  // namespace
}  // namespace fsdpx::cuda::test
