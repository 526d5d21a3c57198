// tests/cuda/test_cuda_lora.cpp — LoRA on the CUDA backend (docs/lora.md) against the CPU backend:
// CudaModel's loss and adapter gradients against Transformer<float> with the same adapters (tiny llama
// and gpt, every target, B ≠ 0), the base getting no gradient (null pointers); B = 0 gives the base
// model's loss bit for bit; full recompute is bitwise equal to none. Then the Trainer: the llama-tiny
// LoRA example (heads widened to head_dim 32; also on gpt-tiny) on CUDA follows the CPU backend over 20
// steps within bf16 tolerance, its base weights stay bit-identical, and 1 and 2 ranks on one GPU agree.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/attention_kernel.h"
#include "core/config_paths.h"
#include "core/dtype.h"
#include "executor/cuda_backend/cuda_backends.h"
#include "executor/cuda_backend/cuda_model.h"
#include "executor/model/init.h"
#include "executor/model/lora.h"
#include "executor/model/transformer.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/cuda_tiny_models.h"
#include "tests/cuda/trainer_run.h"
#include "tests/executor/trainer_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx::cuda::test {
namespace {

constexpr std::int64_t kB = 2, kT = 40;

// r = 8, as the example: u, du and B have leading dimension r, 16 bytes in bf16. Smaller ranks give
// 2r-byte leading dimensions, for which the cuBLASLt heuristic has not yet been seen to find an algorithm
// (no GPU run yet); a miss aborts with "gemm: no cuBLASLt algorithm ...".
LoraSettings every_target(const ModelSpec& m) {
  LoraSettings s;
  s.rank = 8, s.alpha = 16;
  s.targets = {LoraTarget::q, LoraTarget::k, LoraTarget::v, LoraTarget::o, LoraTarget::up, LoraTarget::down};
  if (m.ffn_kind == FfnKind::swiglu) s.targets.insert(s.targets.begin() + 4, LoraTarget::gate);
  return s;
}

// bf16-representable values: the seeded base, and adapters with A ~ U(±1/√in) and B ~ U(±b_bound)
// (B = 0, peft's init, would make dA vanish).
std::vector<float> bf16_base(const ParamLayout& layout) {
  std::vector<float> p(std::size_t(layout.total));
  init_all(layout, 5, p.data());
  for (float& x : p) x = round_bf16(x);
  return p;
}

std::vector<float> bf16_adapters(const LoraLayout& l, float b_bound) {
  std::vector<float> a(std::size_t(l.total));
  for (std::int64_t blk = 0; blk < l.layers; ++blk)
    for (const LoraSlot& s : l.slots) {
      const float bound = 1.0f / std::sqrt(float(s.in));
      const std::vector<float> av = random_bf16(std::size_t(l.rank * s.in), -bound, bound);
      const std::vector<float> bv = random_bf16(std::size_t(s.out * l.rank), -b_bound, b_bound);
      std::copy(av.begin(), av.end(), a.begin() + (l.block_offset(blk) + s.a_offset));
      std::copy(bv.begin(), bv.end(), a.begin() + (l.block_offset(blk) + s.b_offset));
    }
  return a;
}

struct LoraResult {
  float loss = 0;
  std::vector<float> adapter_grads;
};

LoraResult run_cpu(const ModelSpec& spec, const LoraLayout& l, const std::vector<float>& params,
                   const std::vector<float>& adapters, const fsdpx::test::TokenBatch& batch) {
  ModelOptions o;
  o.lora = &l;
  Transformer<float> model(spec, kB, kT, o);
  std::vector<float> base_grads(params.size(), 0.0f), a = adapters;
  LoraResult r{0, std::vector<float>(adapters.size(), 0.0f)};
  model.set_lora_buffers(a.data(), r.adapter_grads.data());
  r.loss = model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), base_grads.data(), 1.0f);
  CHECK(std::all_of(base_grads.begin(), base_grads.end(), [](float g) { return g == 0.0f; }));
  return r;
}

// `l` null: the model without LoRA. Every gradient pointer of the base is null (frozen).
LoraResult run_gpu(const ModelSpec& spec, const LoraLayout* l, const std::vector<float>& params,
                   const std::vector<float>& adapters, const fsdpx::test::TokenBatch& batch, CudaModelOptions opts = {}) {
  opts.lora = l;
  GemmContext gemm;
  CudaModel model(spec, kB, kT, opts, gemm);
  const ParamLayout& layout = model.layout();
  DeviceBuffer<bf16> d_params(params.size()), d_adapters(std::max<std::size_t>(1, adapters.size()));
  DeviceBuffer<float> d_grads(std::max<std::size_t>(1, adapters.size())), d_loss(1);
  upload_bf16(d_params, params);
  if (l) upload_bf16(d_adapters, adapters);
  CUDA_CHECK(cudaMemset(d_grads.get(), 0, sizeof(float) * d_grads.size()));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<const bf16*> p;
  for (const ModuleLayout& m : layout.modules) p.push_back(d_params.get() + m.offset);
  std::vector<float*> g(p.size(), nullptr);
  DeviceBuffer<float> base_grads(l ? 1 : std::size_t(layout.total));  // without LoRA the base needs gradients
  if (!l)
    for (std::size_t k = 0; k < g.size(); ++k) g[k] = base_grads.get() + layout.modules[k].offset;
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (l) model.set_lora_buffers(d_adapters.get(), d_grads.get());
  model.set_loss_output(d_loss.get());
  model.set_batch(batch.tokens.data(), batch.targets.data(), stream);
  for (int m = 0; m < layout.num_modules(); ++m) model.forward_module(m, p, stream);
  model.begin_backward(1.0f);
  for (int m = layout.num_modules() - 1; m >= 0; --m) model.backward_module(m, p, g, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return LoraResult{download(d_loss)[0], l ? download(d_grads) : std::vector<float>{}};
}

// Relative L2 error per adapter matrix (printing maxdiff), each within max_rel.
void check_adapter_grads(const LoraLayout& l, const std::vector<float>& got, const std::vector<float>& ref,
                         double max_rel) {
  for (std::int64_t blk = 0; blk < l.layers; ++blk)
    for (const LoraSlot& s : l.slots)
      for (const bool is_a : {true, false}) {
        const std::int64_t begin = l.block_offset(blk) + (is_a ? s.a_offset : s.b_offset);
        const std::int64_t n = is_a ? l.rank * s.in : s.out * l.rank;
        double maxdiff = 0, num = 0, den = 0;
        for (std::int64_t e = begin; e < begin + n; ++e) {
          const double d = double(got[std::size_t(e)]) - double(ref[std::size_t(e)]);
          maxdiff = ::fsdpx::test::nan_max(maxdiff, std::fabs(d)), num += d * d;
          den += double(ref[std::size_t(e)]) * double(ref[std::size_t(e)]);
        }
        const double rel = std::sqrt(num / (den > 0 ? den : 1));
        MESSAGE("LoRA block " << blk << " target " << int(s.target) << (is_a ? " dA" : " dB") << ": maxdiff "
                              << maxdiff << ", rel L2 err " << rel << ", ref norm " << std::sqrt(den));
        CHECK(den > 0);
        CHECK(std::isfinite(rel));
        CHECK(rel <= max_rel);
      }
}

TEST_CASE("CudaModel with LoRA: loss and adapter gradients match the CPU Transformer<float>; B = 0 is the base") {
  for (const ModelSpec& spec : {cuda_tiny_llama(), cuda_tiny_gpt()}) {
    CAPTURE(spec.name);
    const LoraLayout l = make_lora_layout(spec, every_target(spec));
    const std::vector<float> params = bf16_base(make_param_layout(spec));
    const std::vector<float> adapters = bf16_adapters(l, 0.2f);
    const auto batch = fsdpx::test::random_tokens(kB, kT, spec.vocab, unsigned(rng()()));
    const LoraResult ref = run_cpu(spec, l, params, adapters, batch);
    const LoraResult got = run_gpu(spec, &l, params, adapters, batch);
    MESSAGE(spec.name << " LoRA loss: gpu " << got.loss << ", cpu " << ref.loss);
    CHECK(std::fabs(got.loss - ref.loss) <= 2e-2 * std::fabs(ref.loss));
    check_adapter_grads(l, got.adapter_grads, ref.adapter_grads, 3e-2);  // bf16 activations, as test_cuda_model
    // B = 0: every adapter adds exactly zero to its output (y + 0 rounds to y).
    const LoraResult zero_b = run_gpu(spec, &l, params, bf16_adapters(l, 0.0f), batch);
    CHECK(zero_b.loss == run_gpu(spec, nullptr, params, {}, batch).loss);
    // Full recompute re-runs the adapters' forward (u) in backward: bitwise the same.
    CudaModelOptions full;
    full.recompute.assign(std::size_t(spec.layers), RecomputeMode::full);
    const LoraResult again = run_gpu(spec, &l, params, adapters, batch, full);
    CHECK(again.loss == got.loss);
    CHECK(again.adapter_grads == got.adapter_grads);
  }
}

constexpr int kSteps = 20;

// The LoRA example (configs/plans/llama-tiny-cpu-lora.json: r = 8 on every projection, its optimizer,
// batch and seed) on `model` (llama-tiny, or gpt-tiny for a tied head and biases, without `gate`) with its
// 4 heads of 16 turned into 2 heads of 32 (the flash kernel's smallest head_dim; llama on 1 KV head), on
// `ranks` FSDP ranks; the CPU backend's fp32 or the CUDA runtime's bf16.
Plan lora_example(const std::string& model, int ranks, bool cuda) {
  const Plan example = load_plan(resolve_config("plans", "llama-tiny-cpu-lora"));
  ModelSpec m = load_model(model);
  m.heads = 2, m.kv_heads = m.arch == Arch::llama ? 1 : 2, m.head_dim = 32;
  fsdpx::test::PlanShape s;
  s.dp_shard = ranks, s.accum = example.training.global_batch / ranks;
  Plan p = fsdpx::test::tiny_plan(m, s, example.training.seq);
  p.lora = example.lora;
  if (m.ffn_kind != FfnKind::swiglu) std::erase(p.lora->targets, LoraTarget::gate);
  p.optimizer = example.optimizer;
  p.training.seed = example.training.seed;
  if (cuda) p.precision.param = fsdpx::DType::bf16, p.attention_kernel = AttentionKernel::cuda_core;
  validate_plan(p, "test plan");
  return p;
}

struct LoraRun {
  std::vector<double> losses;
  std::vector<float> base;
  AdapterState adapters;
};

LoraRun train(const Plan& plan, bool cuda) {
  const auto trainer = hash_data_trainer(plan, cuda);
  LoraRun r;
  for (int s = 0; s < kSteps; ++s) r.losses.push_back(trainer->step().loss);
  r.base = trainer->gather_full_params();
  r.adapters = trainer->state().adapters;
  return r;
}

double max_loss_rel_diff(const std::vector<double>& got, const std::vector<double>& ref) {
  double d = 0;
  for (std::size_t s = 0; s < ref.size(); ++s) d = ::fsdpx::test::nan_max(d, std::abs(got[s] - ref[s]) / std::abs(ref[s]));
  return std::isfinite(d) && got.size() == ref.size() ? d : 1e30;
}

TEST_CASE("CudaRankBackend: the LoRA example follows the CPU backend, keeps its base, and 1 and 2 ranks agree") {
  for (const std::string model : {"llama-tiny", "gpt-tiny"}) {
    CAPTURE(model);
    const Plan cpu_plan = lora_example(model, 1, false);
    const LoraRun cpu = train(cpu_plan, false);
    const LoraRun one = train(lora_example(model, 1, true), true);
    std::vector<float> init(std::size_t(make_param_layout(cpu_plan.model).total));
    init_all(make_param_layout(cpu_plan.model), cpu_plan.training.seed, init.data());
    CHECK(one.base == init);  // the fp32 masters of the frozen base, bit for bit
    std::vector<float> start(cpu.adapters.params.size());
    init_lora(make_lora_layout(cpu_plan.model, *cpu_plan.lora), cpu_plan.training.seed, start.data());
    const double vs_cpu = max_loss_rel_diff(one.losses, cpu.losses);
    const double moved = fsdpx::test::max_rel_diff(one.adapters.params, start);
    const double adapters_vs_cpu = fsdpx::test::max_rel_diff(one.adapters.params, cpu.adapters.params);
    MESSAGE("LoRA example on " << model << ", " << kSteps << " steps: loss " << one.losses.front() << " -> "
                               << one.losses.back() << "; maxdiff loss rel vs CPU " << vs_cpu << "; adapters moved "
                               << moved << ", adapters vs CPU " << adapters_vs_cpu);
    CHECK(vs_cpu <= 2e-2);  // bf16 compute against fp32, as test_cuda_trainer
    CHECK(moved > 1e-3);    // the adapters trained
    // Adam's normalised steps turn bf16 noise on near-zero gradients into up to lr (3e-3) per step, ~0.05
    // over the run against adapters of ~0.1: a loose bound (the model test checks the gradients themselves).
    CHECK(adapters_vs_cpu <= 0.5);
    if (model != "llama-tiny") continue;
    const LoraRun two = train(lora_example(model, 2, true), true);
    const double ranks = max_loss_rel_diff(two.losses, one.losses);
    MESSAGE("LoRA example on " << model << ": 2 vs 1 ranks on one GPU, maxdiff loss rel " << ranks);
    CHECK(two.base == init);
    CHECK(ranks <= 2e-3);  // the same bf16 micro-batches, fp32 sums in another order
  }
}

}  // namespace
}  // namespace fsdpx::cuda::test
