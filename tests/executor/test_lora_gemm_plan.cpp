// tests/executor/test_lora_gemm_plan.cpp — the CUDA backend's LoRA GEMMs (executor/cuda_backend/
// lora_gemm_plan.h) run through a plain column-major reference GEMM, without a GPU, must give the CPU
// adapter path (executor/model/lora.h) for every target of llama-tiny and gpt-tiny: u, y, dA, dB and dx
// within 1e-12 relative in double. A wrong transpose, leading dimension, column offset or scale fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "core/config_paths.h"
#include "executor/cuda_backend/lora_gemm_plan.h"
#include "executor/model/lora.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

using cuda::LoraGemm;
using cuda::LoraOperand;
using Buffers = std::map<LoraOperand, std::vector<double>>;

// Column-major C = (accumulate ? C : 0) + alpha op(A) op(B), the contract of cuda::gemm_col_major.
void reference_gemm(const LoraGemm& g, Buffers& buf) {
  const double* a = buf.at(g.a).data() + g.a_offset;
  const double* b = buf.at(g.b).data() + g.b_offset;
  double* c = buf.at(g.c).data() + g.c_offset;
  for (std::int64_t j = 0; j < g.n; ++j)
    for (std::int64_t i = 0; i < g.m; ++i) {
      double sum = 0;
      for (std::int64_t p = 0; p < g.k; ++p) {
        const double av = g.trans_a ? a[p + i * g.lda] : a[i + p * g.lda];
        const double bv = g.trans_b ? b[j + p * g.ldb] : b[p + j * g.ldb];
        sum += av * bv;
      }
      double& out = c[i + j * g.ldc];
      out = (g.accumulate ? out : 0.0) + double(g.alpha) * sum;
    }
}

std::vector<double> random_vector(std::int64_t n, std::mt19937& gen) {
  std::normal_distribution<double> dist(0.0, 0.5);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = dist(gen);
  return v;
}

double max_rel(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    diff = ::fsdpx::test::nan_max(diff, std::abs(got[i] - want[i])), scale = ::fsdpx::test::nan_max(scale, std::abs(want[i]));
  return scale > 0 ? diff / scale : diff;
}

// The width of the output an adapter of `t` adds to: qkv, attn_out, mlp_up or mlp_down.
std::int64_t output_width(const ModelSpec& m, LoraTarget t) {
  switch (t) {
    case LoraTarget::q: case LoraTarget::k: case LoraTarget::v: return m.q_dim() + 2 * m.kv_dim();
    case LoraTarget::gate: case LoraTarget::up: return m.ffn_kind == FfnKind::swiglu ? 2 * m.ffn_hidden : m.ffn_hidden;
    default: return m.hidden;
  }
}

TEST_CASE("lora gemm plan: the device GEMMs give the CPU adapter path for every target") {
  for (const std::string name : {"llama-tiny", "gpt-tiny"}) {
    const ModelSpec m = load_model(name);
    LoraSettings settings;
    settings.rank = 4, settings.alpha = 6;  // scale 1.5: exact in the GEMMs' float alpha
    settings.targets = {LoraTarget::q, LoraTarget::k, LoraTarget::v, LoraTarget::o, LoraTarget::up, LoraTarget::down};
    if (m.ffn_kind == FfnKind::swiglu) settings.targets.push_back(LoraTarget::gate);
    const LoraLayout l = make_lora_layout(m, settings);
    const std::int64_t n = 5, r = l.rank;
    std::mt19937 gen(11);
    std::vector<double> adapters = random_vector(l.block_numel, gen), grads(adapters.size(), 0.0);
    const LoraBlock<double> block{&l, adapters.data(), grads.data()};
    for (const LoraSlot& s : l.slots) {
      CAPTURE(name);
      CAPTURE(int(s.target));
      const std::int64_t width = output_width(m, s.target);
      const std::vector<double> x = random_vector(n * s.in, gen), y0 = random_vector(n * width, gen),
                                dy = random_vector(n * width, gen), dx0 = random_vector(n * s.in, gen);
      // CPU reference.
      std::vector<double> y_cpu = y0, dx_cpu = dx0;
      std::vector<std::vector<double>> saved;
      std::fill(grads.begin(), grads.end(), 0.25);  // the gradients accumulate
      lora_forward(block, s.target, x.data(), y_cpu.data(), width, n, saved);
      lora_backward(block, s.target, x.data(), dy.data(), width, dx_cpu.data(), n, saved);
      const int k = lora_slot(l, s.target);
      // The device plan, through the reference GEMM.
      Buffers buf{{LoraOperand::x, x},
                  {LoraOperand::y, y0},
                  {LoraOperand::dy, dy},
                  {LoraOperand::dx, dx0},
                  {LoraOperand::a, {adapters.begin() + s.a_offset, adapters.begin() + s.a_offset + r * s.in}},
                  {LoraOperand::b, {adapters.begin() + s.b_offset, adapters.begin() + s.b_offset + s.out * r}},
                  {LoraOperand::da, std::vector<double>(std::size_t(r * s.in), 0.25)},
                  {LoraOperand::db, std::vector<double>(std::size_t(s.out * r), 0.25)},
                  {LoraOperand::u, std::vector<double>(std::size_t(n * r), 7.0)},  // overwritten
                  {LoraOperand::du, std::vector<double>(std::size_t(n * r), 7.0)}};
      for (const LoraGemm& g : cuda::lora_forward_gemms(s, r, l.scale, n, width)) reference_gemm(g, buf);
      for (const LoraGemm& g : cuda::lora_backward_gemms(s, r, l.scale, n, width)) reference_gemm(g, buf);
      const std::vector<double> da_cpu(grads.begin() + s.a_offset, grads.begin() + s.a_offset + r * s.in);
      const std::vector<double> db_cpu(grads.begin() + s.b_offset, grads.begin() + s.b_offset + s.out * r);
      CHECK(max_rel(buf.at(LoraOperand::u), saved[std::size_t(k)]) < 1e-12);
      CHECK(max_rel(buf.at(LoraOperand::y), y_cpu) < 1e-12);
      CHECK(max_rel(buf.at(LoraOperand::da), da_cpu) < 1e-12);
      CHECK(max_rel(buf.at(LoraOperand::db), db_cpu) < 1e-12);
      CHECK(max_rel(buf.at(LoraOperand::dx), dx_cpu) < 1e-12);
      CHECK(max_rel(buf.at(LoraOperand::y), y0) > 1e-3);  // the adapter changed its columns
    }
  }
}

}  // namespace
}  // namespace fsdpx
