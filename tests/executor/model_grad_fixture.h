// tests/executor/model_grad_fixture.h — a whole CPU Transformer in double for the executor's gradient checks:
// the seeded init moved by N(0, 0.3) noise (every nonlinearity exercised, routing far from ties), a random
// batch, its loss and gradients; the parameter indices the checks sample; the recompute check. Leaves out the
// comparison itself (grad_check.h).
#pragma once

#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx::test {

struct NoisyModel {
  Transformer<double> model;
  std::vector<double> params, grads;
  TokenBatch batch;
  double first_loss = 0;

  // B = 2 sequences of T = 5 tokens; forward and backward run once (grads filled).
  explicit NoisyModel(const ModelSpec& spec, std::int64_t b = 2, std::int64_t t = 5)
      : model(spec, b, t), params(std::size_t(model.layout().total)), grads(params.size(), 0.0),
        batch(random_tokens(b, t, spec.vocab, 11)) {
    init_all(model.layout(), 42, params.data());
    std::mt19937 rng(3);
    std::normal_distribution<double> noise(0.0, 0.3);
    for (double& p : params) p += noise(rng);
    first_loss = loss();
    model.backward(params.data(), grads.data());
  }
  double loss() { return model.forward(params.data(), batch.tokens.data(), batch.targets.data()); }
};

// Three elements (first, middle, last) of every tensor of module `m`, as full-model indices.
inline std::vector<std::int64_t> sample_module(const ParamLayout& layout, int m) {
  std::vector<std::int64_t> idx;
  const ModuleLayout& ml = layout.modules[std::size_t(m)];
  for (const TensorSlot& t : ml.tensors)
    for (std::int64_t e : {std::int64_t(0), t.numel() / 2, t.numel() - 1}) idx.push_back(ml.offset + t.offset + e);
  return idx;
}

// Three elements of every tensor of every module.
inline std::vector<std::int64_t> sample_all(const ParamLayout& layout) {
  std::vector<std::int64_t> idx;
  for (int m = 0; m < layout.num_modules(); ++m)
    for (std::int64_t i : sample_module(layout, m)) idx.push_back(i);
  return idx;
}

// Every element of tensor `name` of module `m` (empty when it has none).
inline std::vector<std::int64_t> every_element(const ModuleLayout& m, const std::string& name) {
  const TensorSlot* t = m.find(name);
  std::vector<std::int64_t> idx(t ? std::size_t(t->numel()) : 0);
  if (t) std::iota(idx.begin(), idx.end(), m.offset + t->offset);
  return idx;
}

// Loss and gradients of the seeded init (no noise) on a random batch, every block recomputing or none.
inline std::vector<double> init_grads(const ModelSpec& spec, bool recompute, double& loss) {
  const auto batch = random_tokens(2, 5, spec.vocab, 11);
  ModelOptions o;
  if (recompute) o.recompute.assign(std::size_t(spec.layers), RecomputeMode::full);
  Transformer<double> model(spec, 2, 5, o);
  std::vector<double> params(std::size_t(model.layout().total)), grads(params.size(), 0.0);
  init_all(model.layout(), 42, params.data());
  loss = model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), grads.data());
  return grads;
}

}  // namespace fsdpx::test
