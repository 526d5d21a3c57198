// tests/cuda/emulated/kernels_attention.cpp — host launchers of executor/cuda's flash attention and fused
// classifier for the emulated runtime, computed on the stream with the CPU reference kernels
// (executor/cpu/attention.h, cross_entropy.h) in fp32. Flash attention saves only the row log-sum-exp, so
// the backward recomputes the forward (as FlashAttention-2 recomputes P) and checks that the `out` and
// `lse` it is handed are exactly what the forward of this qkv wrote: a stale or unordered forward aborts
// instead of passing unnoticed. The tensor-core kernels (attention_tc.h) compute the same math, so their
// launchers are these, counted (tc_attention_launches) so that a test sees the block dispatch to them.
// Leaves out the device kernels' tiling and summation orders.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "executor/cpu/attention.h"
#include "executor/cpu/cross_entropy.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/attention_tc.h"
#include "executor/cuda/cross_entropy.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

using emu::enqueue;
using emu::load;
using emu::store;

std::int64_t flash_attention_lse_elems(const AttnShape& s) { return s.b * s.nh * s.t; }
std::int64_t flash_attention_scratch_elems(const AttnShape& s) { return s.b * s.nh * s.t; }

namespace {

struct AttnForward {
  std::vector<float> out, saved, lse;  // [B, T, NH·HD], the CPU kernel's P, [B, NH, T]
};

// Row log-sum-exp of the scaled causal scores, in double: lse[b, h, i] = log Σ_{j ≤ i} exp(q_i·k_j / √HD).
std::vector<float> row_lse(const std::vector<float>& qkv, const AttnShape& s) {
  std::vector<float> lse(std::size_t(s.b * s.nh * s.t));
  const std::int64_t row = s.qkv_row(), group = s.nh / s.nkv;
  const double scale = 1.0 / std::sqrt(double(s.hd));
  for (std::int64_t b = 0; b < s.b; ++b)
    for (std::int64_t h = 0; h < s.nh; ++h)
      for (std::int64_t i = 0; i < s.t; ++i) {
        const float* q = &qkv[std::size_t((b * s.t + i) * row + h * s.hd)];
        std::vector<double> sc(std::size_t(i + 1));
        double mx = -1e300, sum = 0;
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* k = &qkv[std::size_t((b * s.t + j) * row + (s.nh + h / group) * s.hd)];
          double d = 0;
          for (std::int64_t e = 0; e < s.hd; ++e) d += double(q[e]) * double(k[e]);
          sc[std::size_t(j)] = d * scale, mx = std::max(mx, d * scale);
        }
        for (double v : sc) sum += std::exp(v - mx);
        lse[std::size_t((b * s.nh + h) * s.t + i)] = float(mx + std::log(sum));
      }
  return lse;
}

AttnForward attention(const std::vector<float>& qkv, const AttnShape& s) {
  AttnForward f;
  f.out.resize(std::size_t(s.b * s.t * s.nh * s.hd));
  f.saved.resize(std::size_t(cpu::attention_saved_elems(s)));
  cpu::attention_forward<float>(f.out.data(), f.saved.data(), qkv.data(), s);
  f.lse = row_lse(qkv, s);
  return f;
}

[[noreturn]] void stale(const char* what) {
  std::fprintf(stderr, "emulated flash_attention_backward: %s differs from the forward of this qkv (a stale or "
                       "unordered forward)\n", what);
  std::abort();
}

}  // namespace

template <class T>
void flash_attention_forward(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream) {
  enqueue(stream, [=] {
    const AttnForward f = attention(load(qkv, s.b * s.t * s.qkv_row()), s);
    store(out, f.out);
    for (std::size_t i = 0; i < f.lse.size(); ++i) lse[i] = f.lse[i];
  });
}

template <class T>
void flash_attention_backward(T* dqkv, float*, const T* dout, const T* out, const T* qkv, const float* lse,
                              const AttnShape& s, cudaStream_t stream) {
  enqueue(stream, [=] {
    const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
    const auto x = load(qkv, n_qkv);
    const AttnForward f = attention(x, s);
    for (std::int64_t i = 0; i < n_out; ++i)
      if (!(emu::to_f32(out[i]) == emu::to_f32(emu::from_f32<T>(f.out[std::size_t(i)])))) stale("out");
    for (std::size_t i = 0; i < f.lse.size(); ++i)
      if (!(lse[i] == f.lse[i])) stale("lse");
    auto dx = load(dqkv, n_qkv);
    const auto dy = load(dout, n_out);
    cpu::attention_backward<float>(dx.data(), dy.data(), x.data(), f.saved.data(), s);
    store(dqkv, dx);
  });
}

namespace {
std::atomic<std::int64_t> tc_launches{0};
}  // namespace

namespace emu {
std::int64_t tc_attention_launches() { return tc_launches.load(); }
}  // namespace emu

// The tensor-core kernels' head sizes (attention_tc.cu); their math is flash attention's, above.
bool tc_attention_supports(const AttnShape& s) { return s.hd == 64 || s.hd == 128; }

template <class T>
void tc_attention_forward(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream) {
  if (!tc_attention_supports(s)) std::abort();  // the device launcher's check (attention_tc_common.cuh)
  ++tc_launches;
  flash_attention_forward(out, lse, qkv, s, stream);
}

template <class T>
void tc_attention_backward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv, const float* lse,
                           const AttnShape& s, cudaStream_t stream) {
  if (!tc_attention_supports(s)) std::abort();
  ++tc_launches;
  flash_attention_backward(dqkv, scratch, dout, out, qkv, lse, s, stream);
}

// Row by row the CPU forward (its row loss); then, for dlogits, the CPU backward over all rows; the
// padding columns get dlogits 0. The mean adds the row losses in order in fp32, as the CPU forward does.
template <class T>
void fused_classifier(T* logits_to_dlogits, float* losses, float* loss_mean, const std::int32_t* targets,
                      std::int64_t n, std::int64_t vocab, std::int64_t vocab_padded, float dloss, bool write_dlogits,
                      cudaStream_t stream) {
  enqueue(stream, [=] {
    std::vector<float> probs(std::size_t(n * vocab));
    float total = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      float* row = &probs[std::size_t(i * vocab)];
      for (std::int64_t v = 0; v < vocab; ++v) row[v] = emu::to_f32(logits_to_dlogits[i * vocab_padded + v]);
      losses[i] = cpu::softmax_cross_entropy_forward<float>(row, &targets[i], 1, vocab);
      total += losses[i];
    }
    *loss_mean = total / float(n);
    if (!write_dlogits) return;
    cpu::softmax_cross_entropy_backward<float>(probs.data(), targets, n, vocab, dloss);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t v = 0; v < vocab_padded; ++v)
        logits_to_dlogits[i * vocab_padded + v] = emu::from_f32<T>(v < vocab ? probs[std::size_t(i * vocab + v)] : 0.f);
  });
}

#define FSDPX_INSTANTIATE(T)                                                                                         \
  template void flash_attention_forward<T>(T*, float*, const T*, const AttnShape&, cudaStream_t);                   \
  template void flash_attention_backward<T>(T*, float*, const T*, const T*, const T*, const float*, const AttnShape&, \
                                            cudaStream_t);                                                          \
  template void tc_attention_forward<T>(T*, float*, const T*, const AttnShape&, cudaStream_t);                      \
  template void tc_attention_backward<T>(T*, float*, const T*, const T*, const T*, const float*, const AttnShape&,    \
                                         cudaStream_t);                                                             \
  template void fused_classifier<T>(T*, float*, float*, const std::int32_t*, std::int64_t, std::int64_t,             \
                                    std::int64_t, float, bool, cudaStream_t);
FSDPX_EMU_INSTANTIATE_16_AND_32(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
