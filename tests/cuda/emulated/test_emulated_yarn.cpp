// tests/cuda/emulated/test_emulated_yarn.cpp — YaRN RoPE scaling on the CUDA backend (emulated runtime):
// the CUDA rope kernel reads the device copy of the shared table (executor/model/rope_table.h: YaRN's
// frequencies and cos/sin scale), and latent attention's RoPE kernel (executor/cuda/mla.h) a device copy of
// the same table with the same softmax factor, so a tiny Llama and deepseek-tiny, each with YaRN (factor 4
// over 4 tokens), under FSDP follow the CPU backend's losses within 1e-5 over 10 steps (measured 2.4e-7 and
// 9.5e-7; a flipped sign in the emulated latent RoPE fails the second, maxdiff 7.2e-4); and YaRN moves those
// losses away from plain RoPE's by more than 10x that tolerance (a table that ignored the scaling on both
// backends would not be caught by the first check alone).
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "core/config_paths.h"
#include "core/model_spec.h"
#include "tests/cuda/cuda_tiny_models.h"
#include "tests/cuda/emulated/emulated_runs.h"
#include "tests/cuda/emulated/follows_cpu.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx::emulated_test {
namespace {

// factor 4 over an original context of 4 tokens (the 16 positions pass it), DeepSeek's mscales.
RopeScaling tiny_yarn() {
  RopeScaling y;
  y.kind = RopeScalingKind::yarn, y.factor = 4.0, y.original_max_seq = 4, y.mscale = 1.0, y.mscale_all_dim = 0.707;
  return y;
}

void check_yarn_moves_losses(Plan yarn) {
  const auto data = std::make_shared<test::HashData>(yarn.model.vocab);
  Plan plain = yarn;
  plain.model.rope_scaling = RopeScaling{};
  const double d = max_abs_diff(losses(yarn, data, false), losses(plain, data, false));
  MESSAGE(yarn.model.name << ": YaRN vs plain RoPE on the CPU, maxdiff " << d);
  CHECK(d > 10 * kLossTol);  // measured 1.0e-3 (tiny llama) and 7.3e-4 (deepseek-tiny)
}

}  // namespace

TEST_CASE("emulated CUDA: a tiny Llama with YaRN under FSDP on 2 ranks follows the CPU backend within 1e-5") {
  ModelSpec m = cuda::test::cuda_tiny_llama();
  m.rope_scaling = tiny_yarn();
  check_follows_cpu(tiny_fsdp(m, 2), "tiny llama YaRN FSDP 2");
  check_yarn_moves_losses(tiny_fsdp(m, 2));
}

TEST_CASE("emulated CUDA: deepseek-tiny with YaRN under FSDP on 1 rank follows the CPU backend within 1e-5") {
  ModelSpec m = load_model("deepseek-tiny");
  m.rope_scaling = tiny_yarn();
  check_follows_cpu(tiny_fsdp(m, 1), "deepseek-tiny YaRN FSDP 1");
  check_yarn_moves_losses(tiny_fsdp(m, 1));
}

}  // namespace fsdpx::emulated_test
