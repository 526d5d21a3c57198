// tests/cuda/test_cuda_model.cpp — CudaModel (executor/cuda_backend) against the CPU reference
// Transformer<float> on the same bf16-representable parameters and tokens: the loss and every parameter
// gradient tensor, for a tiny llama (RMSNorm, RoPE, GQA, SwiGLU, untied head), a tiny gpt (LayerNorm,
// learned positions, GELU, all biases, tied head) and a llama with qkv biases and a tied head. Also:
// full recompute is bitwise equal to none, two runs are bitwise identical, two pipeline stages and
// zero bubble's split backward are bitwise equal to one model, gradients accumulate over
// micro-batches (with the host token arrays scribbled right after set_batch), the memory formulas, and
// the kernel profile: the CPU model's op names and modules, each with a positive GPU time.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "executor/cuda_backend/cuda_model.h"
#include "executor/model/transformer.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/model_run.h"
#include "tests/executor/tiny_models.h"
#include "tests/nan_max.h"

namespace fsdpx::cuda::test {
namespace {

constexpr std::int64_t kB = 2, kT = 40;  // T = 40: the attention's second 32-row tile is ragged

// The executor tests' tiny models (tests/executor/tiny_models.h) widened to what the flash attention
// supports (HD ∈ {32, 64, 96, 128}). llama: hidden 64, 4 query heads on 2 KV heads of 32 (Q = 128).
ModelSpec cuda_llama() {
  ModelSpec s = fsdpx::test::tiny_llama();  // RMSNorm, RoPE, GQA, SwiGLU, untied head, no biases
  s.name = "cuda-tiny-llama";
  s.hidden = 64, s.head_dim = 32, s.ffn_hidden = 96, s.vocab = 128, s.max_seq = 64;
  return s;
}

// Qwen2-like: qkv biases only, tied head.
ModelSpec cuda_llama_qkv_bias_tied() {
  ModelSpec s = cuda_llama();
  s.name = "cuda-tiny-llama-qkv-bias-tied";
  s.tied_embeddings = true;
  s.bias = LinearBias::qkv;
  return s;
}

ModelSpec cuda_gpt() {
  ModelSpec s = fsdpx::test::tiny_gpt();  // LayerNorm, learned positions, GELU, all biases, tied head
  s.name = "cuda-tiny-gpt";
  s.hidden = 64, s.head_dim = 32, s.ffn_hidden = 128, s.vocab = 96, s.max_seq = 48;  // 2 heads: Q = 64
  return s;
}

// bf16-representable parameters with unit-scale activations: linear weights U(±√(3/in)) (variance
// 1/in), norm scales 1 ± 0.2, biases ± 0.1 (non-zero, so the bias epilogues matter).
std::vector<float> random_params(const ParamLayout& layout) {
  std::vector<float> p(std::size_t(layout.total));
  for (const ModuleLayout& m : layout.modules)
    for (const TensorSlot& t : m.tensors) {
      std::vector<float> x;
      if (t.init == InitKind::ones) {
        x = random_bf16(std::size_t(t.numel()), 0.8f, 1.2f);
      } else if (t.init == InitKind::zeros) {
        x = random_bf16(std::size_t(t.numel()), -0.1f, 0.1f);
      } else {
        const float a = std::sqrt(3.0f / float(t.cols));
        x = random_bf16(std::size_t(t.numel()), -a, a);
      }
      std::copy(x.begin(), x.end(), p.begin() + (m.offset + t.offset));
    }
  return p;
}

using Batch = fsdpx::test::TokenBatch;  // tokens, targets [B, T]

// Random tokens and targets drawn from this process's seed (printed by the test main).
Batch random_batch(std::int64_t vocab) { return fsdpx::test::random_tokens(kB, kT, vocab, unsigned(rng()())); }

struct Result {
  float loss = 0;
  std::vector<float> grads;  // [layout.total] fp32, modules in forward order
};

Result run_cpu(const ModelSpec& spec, const std::vector<float>& params, const Batch& batch, float dloss,
               ModelOptions opts = {}) {
  Transformer<float> model(spec, kB, kT, std::move(opts));
  Result r;
  r.grads.assign(params.size(), 0.0f);
  r.loss = model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), r.grads.data(), dloss);
  return r;
}

// The bf16 model on one flat buffer (tests/cuda/model_run.h).
Result run_gpu(const ModelSpec& spec, CudaModelOptions opts, const std::vector<float>& params, const Batch& batch,
               float dloss, int micro_batches = 1) {
  ModelRun r = run_model<bf16>(spec, kB, kT, std::move(opts), params, batch, dloss, micro_batches);
  return Result{r.loss, std::move(r.grads)};
}

// Relative L2 error per parameter tensor (printing maxdiff), each within max_rel.
void check_gradients(const ParamLayout& layout, const std::vector<float>& got, const std::vector<float>& ref,
                     double max_rel) {
  for (const ModuleLayout& m : layout.modules)
    for (const TensorSlot& t : m.tensors) {
      double maxdiff = 0, num = 0, den = 0;
      for (std::int64_t e = m.offset + t.offset; e < m.offset + t.offset + t.numel(); ++e) {
        const double d = double(got[std::size_t(e)]) - double(ref[std::size_t(e)]);
        maxdiff = ::fsdpx::test::nan_max(maxdiff, std::fabs(d));
        num += d * d;
        den += double(ref[std::size_t(e)]) * double(ref[std::size_t(e)]);
      }
      const double rel = std::sqrt(num / (den > 0 ? den : 1));
      MESSAGE(m.name << " " << t.name << ": maxdiff " << maxdiff << ", rel L2 err " << rel << ", ref norm "
                     << std::sqrt(den));
      CHECK(std::isfinite(rel));
      CHECK(rel <= max_rel);
    }
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("CudaModel loss and gradients match the CPU Transformer<float>") {
  for (const ModelSpec& spec : {cuda_llama(), cuda_gpt(), cuda_llama_qkv_bias_tied()}) {
    CAPTURE(spec.name);
    const ParamLayout layout = make_param_layout(spec);
    const std::vector<float> params = random_params(layout);
    const Batch batch = random_batch(spec.vocab);
    const float dloss = 0.5f;
    const Result ref = run_cpu(spec, params, batch, dloss);
    const Result got = run_gpu(spec, {}, params, batch, dloss);
    MESSAGE(spec.name << " loss: gpu " << got.loss << ", cpu " << ref.loss);
    CHECK(std::fabs(got.loss - ref.loss) <= 2e-2 * std::fabs(ref.loss));
    // bf16 activations and residual gradient against fp32 everywhere: ~1e-2 per tensor expected.
    check_gradients(layout, got.grads, ref.grads, 3e-2);
  }
}

TEST_CASE("CudaModel full recompute is bitwise equal to none, and runs are deterministic") {
  for (const ModelSpec& spec : {cuda_llama(), cuda_gpt()}) {
    CAPTURE(spec.name);
    const std::vector<float> params = random_params(make_param_layout(spec));
    const Batch batch = random_batch(spec.vocab);
    const Result none = run_gpu(spec, {}, params, batch, 1.0f);
    const Result again = run_gpu(spec, {}, params, batch, 1.0f);
    CHECK(again.loss == none.loss);
    CHECK(bit_identical(again.grads, none.grads));
    for (auto modes : {std::vector{RecomputeMode::full, RecomputeMode::full},
                       std::vector{RecomputeMode::none, RecomputeMode::full},
                       std::vector{RecomputeMode::selective, RecomputeMode::full}}) {
      CudaModelOptions opts;
      opts.recompute = modes;
      const Result r = run_gpu(spec, opts, params, batch, 1.0f);
      CHECK(r.loss == none.loss);
      CHECK(bit_identical(r.grads, none.grads));
    }
  }
}

// The model cut into two stages at module `cut` (two CudaModels, each allocating its modules only) with
// the activations and their gradient copied between them, as a pipeline's send and receive; with
// `split`, every module's backward runs as zero bubble's input pass and then, all of them, weight pass.
Result run_gpu_stages(const ModelSpec& spec, const std::vector<float>& params, const Batch& batch, float dloss,
                      int cut, bool split) {
  GemmContext gemm;
  const ParamLayout layout = make_param_layout(spec);
  const int n = layout.num_modules();
  CudaModelOptions first, second;
  first.modules.assign(std::size_t(n), false), second.modules.assign(std::size_t(n), true);
  for (int m = 0; m < cut; ++m) first.modules[std::size_t(m)] = true, second.modules[std::size_t(m)] = false;
  first.split_backward = second.split_backward = split;
  CudaModel a(spec, kB, kT, first, gemm), b(spec, kB, kT, second, gemm);
  DeviceBuffer<bf16> d_params(params.size());
  DeviceBuffer<float> d_grads(params.size()), d_loss(1);
  upload_bf16(d_params, params);
  CUDA_CHECK(cudaMemset(d_grads.get(), 0, sizeof(float) * params.size()));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<const bf16*> p;
  std::vector<float*> g;
  for (const ModuleLayout& m : layout.modules)
    p.push_back(d_params.get() + m.offset), g.push_back(d_grads.get() + m.offset);
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const std::size_t boundary_bytes = std::size_t(a.boundary_elems()) * sizeof(bf16);
  b.set_loss_output(d_loss.get());
  a.set_batch(batch.tokens.data(), batch.targets.data(), st);
  b.set_batch(batch.tokens.data(), batch.targets.data(), st);
  for (int m = 0; m < cut; ++m) a.forward_module(m, p, st);
  CUDA_CHECK(cudaMemcpyAsync(b.input_buffer(cut), a.output(cut - 1), boundary_bytes, cudaMemcpyDeviceToDevice, st));
  for (int m = cut; m < n; ++m) b.forward_module(m, p, st);
  b.begin_backward(dloss);
  auto backward = [&](CudaModel& model, int from, int to) {
    for (int m = from; m >= to; --m)
      split ? model.backward_input_module(m, p, st) : model.backward_module(m, p, g, st);
  };
  backward(b, n - 1, cut);
  CUDA_CHECK(cudaMemcpyAsync(a.output_grad_buffer(cut - 1), b.input_grad(), boundary_bytes, cudaMemcpyDeviceToDevice,
                             st));
  backward(a, cut - 1, 0);
  if (split)
    for (int m = n - 1; m >= 0; --m) (m >= cut ? b : a).backward_weight_module(m, g, st);
  CUDA_CHECK(cudaStreamSynchronize(st));
  CUDA_CHECK(cudaStreamDestroy(st));
  return Result{download(d_loss)[0], download(d_grads)};
}

TEST_CASE("CudaModel as two pipeline stages, and zero bubble's split backward, are bitwise equal to one model") {
  for (const ModelSpec& spec : {cuda_llama(), cuda_gpt()}) {
    CAPTURE(spec.name);
    const std::vector<float> params = random_params(make_param_layout(spec));
    const Batch batch = random_batch(spec.vocab);
    const Result whole = run_gpu(spec, {}, params, batch, 0.5f);
    for (int cut : {1, 2}) {  // after the embedding, after the first block
      for (bool split : {false, true}) {
        CAPTURE(cut);
        CAPTURE(split);
        const Result staged = run_gpu_stages(spec, params, batch, 0.5f, cut, split);
        CHECK(staged.loss == whole.loss);
        CHECK(bit_identical(staged.grads, whole.grads));
      }
    }
  }
}

TEST_CASE("CudaModel gradients accumulate over micro-batches") {
  const ModelSpec spec = cuda_gpt();  // tied head: the token table gets both the head and embedding grads
  const std::vector<float> params = random_params(make_param_layout(spec));
  const Batch batch = random_batch(spec.vocab);
  const Result one = run_gpu(spec, {}, params, batch, 1.0f);
  const Result two = run_gpu(spec, {}, params, batch, 1.0f, 2);
  CHECK(two.loss == one.loss);  // the same micro-batch twice: the loss output holds the last one
  std::vector<float> doubled(one.grads);
  for (float& x : doubled) x *= 2.0f;
  CHECK(close("two micro-batches = 2 × one", two.grads, doubled, 1e-9, 1e-6));
}

// The formulas of docs/cuda.md "Device model", independent of the implementation's buffer list.
TEST_CASE("CudaModel saved and working bytes follow the documented formulas") {
  for (const ModelSpec& spec : {cuda_llama(), cuda_gpt()}) {
    for (const bool recompute_first : {false, true}) {
      CAPTURE(spec.name);
      CAPTURE(recompute_first);
      CudaModelOptions opts;
      if (recompute_first) opts.recompute = {RecomputeMode::full, RecomputeMode::none};
      GemmContext gemm;
      const CudaModel model(spec, kB, kT, opts, gemm);
      const bool gpt = spec.arch == Arch::gpt;
      const std::int64_t n = kB * kT, c = spec.hidden, q = spec.q_dim(), qkv = q + 2 * spec.kv_dim();
      const std::int64_t f = spec.ffn_hidden, fu = gpt ? f : 2 * f, v = spec.vocab;
      const std::int64_t stats = gpt ? 2 : 1;  // LayerNorm saves mean and rstd, RMSNorm rstd
      const std::int64_t lse = kB * spec.heads * kT, chunks = std::min<std::int64_t>(n, 64);  // bias sums
      const std::int64_t norm_chunks = std::min<std::int64_t>(n, 1024);
      const std::int64_t acts = 2 * n * (3 * c + qkv + q + fu + f) + 4 * lse + 4 * n * 2 * stats;
      CHECK(model.saved_bytes(0) == 0);  // its output is block 0's input
      CHECK(model.saved_bytes(1) == 2 * n * c + (recompute_first ? 0 : acts));
      CHECK(model.saved_bytes(2) == 2 * n * c + acts);
      CHECK(model.saved_bytes(3) == 2 * n * c + 2 * n * c + 4 * n * stats);  // its input and output
      CHECK(model.saved_bytes(4) == 2 * n * v + 4 * n);
      const std::int64_t scratch = 2 * n * (c + q + qkv + fu + f) + 4 * lse + 4 * 2 * norm_chunks * c +
                                   (gpt ? 4 * chunks * std::max({qkv, c, fu}) : 0);
      const std::int64_t rope = gpt ? 0 : 2 * 4 * kT * spec.head_dim / 2;
      const std::int64_t batch = 4 * (3 * n + 2 * std::min(n, v) + 1);
      const std::int64_t recompute = recompute_first ? acts + 2 * n * c : 0;
      CHECK(model.working_bytes() == rope + batch + recompute + scratch + 4 + 2 * 2 * n * c);
    }
  }
}

// Every (op, module) reported, with its times in call order.
struct RecordingProfiler : OpProfiler {
  std::map<std::pair<std::string, int>, std::vector<double>> times_s;
  void record(std::string_view op, int module, double time_s) override {
    times_s[{std::string(op), module}].push_back(time_s);
  }
  std::map<std::pair<std::string, int>, std::size_t> calls() const {
    std::map<std::pair<std::string, int>, std::size_t> out;
    for (const auto& [key, t] : times_s) out[key] = t.size();
    return out;
  }
};

TEST_CASE("CudaModel kernel profile: the CPU model's ops and modules, each timed; no profiler: same bits") {
  for (const ModelSpec& spec : {cuda_llama(), cuda_gpt()}) {
    for (const bool recompute_first : {false, true}) {
      CAPTURE(spec.name);
      CAPTURE(recompute_first);
      std::vector<RecomputeMode> recompute(std::size_t(spec.layers), RecomputeMode::none);
      if (recompute_first) recompute[0] = RecomputeMode::full;  // re-runs block 1's forward names in backward
      const std::vector<float> params = random_params(make_param_layout(spec));
      const Batch batch = random_batch(spec.vocab);
      RecordingProfiler cpu_prof, gpu_prof;
      ModelOptions cpu_options;
      cpu_options.recompute = recompute;
      cpu_options.profiler = &cpu_prof;
      run_cpu(spec, params, batch, 1.0f, cpu_options);
      CudaModelOptions plain_options, timed_options;
      plain_options.recompute = timed_options.recompute = recompute;
      timed_options.profiler = &gpu_prof;
      const Result plain = run_gpu(spec, plain_options, params, batch, 1.0f);
      const Result timed = run_gpu(spec, timed_options, params, batch, 1.0f);
      REQUIRE(!cpu_prof.times_s.empty());
      CHECK(gpu_prof.calls() == cpu_prof.calls());
      for (const auto& entry : cpu_prof.times_s)
        if (!gpu_prof.times_s.count(entry.first))
          MESSAGE("missing on the GPU: " << entry.first.first << " of module " << entry.first.second);
      for (const auto& entry : gpu_prof.times_s) {
        const std::string op = entry.first.first + " of module " + std::to_string(entry.first.second);
        CAPTURE(op);
        if (!cpu_prof.times_s.count(entry.first)) MESSAGE("recorded on the GPU only: " << op);
        for (const double t : entry.second) CHECK((std::isfinite(t) && t > 0));
      }
      // Profiling only adds events and waits: the same kernels produce the same bits.
      CHECK(timed.loss == plain.loss);
      CHECK(bit_identical(timed.grads, plain.grads));
    }
  }
}

}  // namespace
}  // namespace fsdpx::cuda::test
