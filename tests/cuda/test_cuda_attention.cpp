// tests/cuda/test_cuda_attention.cpp — the fused flash attention (forward and backward, GQA, causal)
// against the CPU plain-softmax attention on the same bf16 inputs, for every supported head dim and
// sequence lengths that are not multiples of the 32-row tile. The saved log-sum-exp is checked
// against one computed in double on the host.
#include <doctest/doctest.h>

#include <cmath>

#include "executor/cpu/attention.h"
#include "executor/cuda/attention.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/nan_max.h"

namespace fsdpx::cuda::test {
namespace {

// lse[b, h, t] = log Σ_{t2 ≤ t} exp(q·k / sqrt(HD)), in double.
std::vector<float> reference_lse(const std::vector<float>& qkv, const AttnShape& s) {
  std::vector<float> lse(s.b * s.nh * s.t);
  const std::int64_t row = s.qkv_row(), group = s.nh / s.nkv;
  for (std::int64_t b = 0; b < s.b; ++b)
    for (std::int64_t h = 0; h < s.nh; ++h)
      for (std::int64_t t = 0; t < s.t; ++t) {
        std::vector<double> sc;
        for (std::int64_t t2 = 0; t2 <= t; ++t2) {
          double dot = 0;
          for (std::int64_t i = 0; i < s.hd; ++i)
            dot += double(qkv[(b * s.t + t) * row + h * s.hd + i]) *
                   double(qkv[(b * s.t + t2) * row + (s.nh + h / group) * s.hd + i]);
          sc.push_back(dot / std::sqrt(double(s.hd)));
        }
        double m = sc[0], sum = 0;
        for (double x : sc) m = ::fsdpx::test::nan_max(m, x);
        for (double x : sc) sum += std::exp(x - m);
        lse[(b * s.nh + h) * s.t + t] = float(m + std::log(sum));
      }
  return lse;
}

void check_attention(const AttnShape& s) {
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  const auto qkv = random_bf16(n_qkv, -1.5f, 1.5f), dout = random_bf16(n_out), dqkv0 = random_bf16(n_qkv);
  std::vector<float> out(n_out), saved(cpu::attention_saved_elems(s)), dqkv = dqkv0;
  cpu::attention_forward(out.data(), saved.data(), qkv.data(), s);
  // The GPU backward reads its own bf16 forward output; feed the CPU the same rounded dout only.
  cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), s);

  DeviceBuffer<bf16> d_qkv(n_qkv), d_out(n_out), d_dout(n_out), d_dqkv(n_qkv);
  DeviceBuffer<float> d_lse(flash_attention_lse_elems(s)), d_scratch(flash_attention_scratch_elems(s));
  upload_bf16(d_qkv, qkv), upload_bf16(d_dout, dout), upload_bf16(d_dqkv, dqkv0);
  upload_bf16(d_out, random_bf16(n_out, 5.0f, 6.0f));  // poison: every output must be written
  flash_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s, nullptr);
  flash_attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_out.get(), d_qkv.get(), d_lse.get(), s,
                           nullptr);
  const std::string tag = "hd " + std::to_string(s.hd) + " t " + std::to_string(s.t);
  CHECK(close("flash forward " + tag, download_bf16(d_out), out, 1e-2, kBf16Rtol));
  CHECK(close("flash lse " + tag, download(d_lse), reference_lse(qkv, s), 1e-4, 1e-4));
  // dqkv: fp32 sums over up to T keys, the GPU using its bf16-rounded O for delta: 2e-2 absolute.
  CHECK(close("flash backward dqkv " + tag, download_bf16(d_dqkv), dqkv, 2e-2, 2 * kBf16Rtol));
}

TEST_CASE("cuda flash attention matches the CPU reference (GQA, causal, ragged tiles)") {
  for (const std::int64_t hd : {32, 64, 96, 128}) {
    AttnShape s;
    s.b = 2, s.t = hd == 128 ? 45 : 70, s.nh = 4, s.nkv = 2, s.hd = hd;
    check_attention(s);
  }
  AttnShape mha;  // NKV = NH (no grouping), one batch, T below one tile
  mha.b = 1, mha.t = 7, mha.nh = 3, mha.nkv = 3, mha.hd = 64;
  check_attention(mha);
}

TEST_CASE("cuda flash attention backward is bitwise deterministic") {
  AttnShape s;
  s.b = 1, s.t = 66, s.nh = 4, s.nkv = 1, s.hd = 64;
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  const auto qkv = random_bf16(n_qkv), dout = random_bf16(n_out);
  DeviceBuffer<bf16> d_qkv(n_qkv), d_out(n_out), d_dout(n_out), d_dqkv(n_qkv);
  DeviceBuffer<float> d_lse(flash_attention_lse_elems(s)), d_scratch(flash_attention_scratch_elems(s));
  upload_bf16(d_qkv, qkv), upload_bf16(d_dout, dout);
  flash_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s, nullptr);
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    CUDA_CHECK(cudaMemset(d_dqkv.get(), 0, sizeof(bf16) * n_qkv));
    flash_attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_out.get(), d_qkv.get(), d_lse.get(), s,
                             nullptr);
    if (run == 0) first = download_bf16(d_dqkv);
    else CHECK(first == download_bf16(d_dqkv));
  }
}

}  // namespace
}  // namespace fsdpx::cuda::test
