// tests/executor/test_model_pipeline.cpp — the CPU model driven as pipeline stages: chunks of modules
// on separate model instances, handing activations forward and gradients back, give the whole model's
// loss and gradients bit for bit; zero-bubble's split backward (every module's input pass in backward
// order, the weight passes later and without parameters) gives the full backward's gradients bit for
// bit and matches central differences in double. llama and gpt (tied head on the last stage), recompute
// none and full, float and double.
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "tests/executor/grad_check.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

constexpr std::int64_t kBatch = 2, kSeq = 5;

ModelSpec four_layers(ModelSpec s) {
  s.layers = 4;
  return s;
}

ModelOptions options(const ModelSpec& s, RecomputeMode rc) {
  ModelOptions o;
  o.recompute.assign(std::size_t(s.layers), rc);
  return o;
}

// Stages of modules [first, last]: embedding | blocks 0-1 | blocks 2-3 | final norm + head.
const std::vector<std::pair<int, int>> kStages = {{0, 0}, {1, 2}, {3, 4}, {5, 6}};

enum class Backward { full, split_backward_order, split_forward_order };

template <class Real>
struct Run {
  Real loss = 0;
  std::vector<Real> grads;
};

// One micro-batch through the stages, each on its own model; the split runs every weight pass (which
// takes no parameters) after all input passes, in backward or forward module order.
template <class Real>
Run<Real> run_stages(const ModelSpec& spec, RecomputeMode rc, const std::vector<Real>& params, Backward how) {
  const auto batch = test::random_tokens(kBatch, kSeq, spec.vocab, 11);
  std::vector<std::unique_ptr<Transformer<Real>>> stages;
  for (std::size_t k = 0; k < kStages.size(); ++k)
    stages.push_back(std::make_unique<Transformer<Real>>(spec, kBatch, kSeq, options(spec, rc)));
  const ParamLayout& layout = stages[0]->layout();
  Run<Real> out;
  out.grads.assign(params.size(), Real(0));
  const auto p = stages[0]->module_ptrs(params.data());
  const auto g = stages[0]->module_ptrs(out.grads.data());
  for (std::size_t k = 0; k < kStages.size(); ++k) {
    Transformer<Real>& s = *stages[k];
    s.set_batch(batch.tokens.data(), batch.targets.data());
    if (k > 0) s.set_input(kStages[k].first, stages[k - 1]->output(kStages[k - 1].second));
    for (int m = kStages[k].first; m <= kStages[k].second; ++m) s.forward_module(m, p);
  }
  out.loss = stages.back()->loss();
  stages.back()->begin_backward(Real(1));
  for (std::size_t k = kStages.size(); k-- > 0;) {
    Transformer<Real>& s = *stages[k];
    if (k + 1 < kStages.size()) s.set_output_grad(kStages[k].second, stages[k + 1]->input_grad());
    for (int m = kStages[k].second; m >= kStages[k].first; --m)
      if (how == Backward::full) s.backward_module(m, p, g);
      else s.backward_input_module(m, p);
  }
  if (how == Backward::full) return out;
  const int modules = layout.num_modules();
  for (int i = 0; i < modules; ++i) {
    const int m = how == Backward::split_backward_order ? modules - 1 - i : i;
    for (std::size_t k = 0; k < kStages.size(); ++k)
      if (m >= kStages[k].first && m <= kStages[k].second) stages[k]->backward_weight_module(m, g);
  }
  return out;
}

template <class Real>
std::vector<Real> init_params(const ModelSpec& spec) {
  Transformer<Real> model(spec, kBatch, kSeq);
  std::vector<Real> params(std::size_t(model.layout().total));
  init_all(model.layout(), 42, params.data());
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0.0, 0.3);
  for (Real& x : params) x += Real(noise(rng));
  return params;
}

template <class Real>
void check_stages_match_whole_model(const ModelSpec& spec, RecomputeMode rc) {
  const std::vector<Real> params = init_params<Real>(spec);
  Transformer<Real> whole(spec, kBatch, kSeq, options(spec, rc));
  const auto batch = test::random_tokens(kBatch, kSeq, spec.vocab, 11);
  std::vector<Real> grads(params.size(), Real(0));
  const Real loss = whole.forward(params.data(), batch.tokens.data(), batch.targets.data());
  whole.backward(params.data(), grads.data());
  const bool tied = spec.tied_embeddings;
  for (Backward how : {Backward::full, Backward::split_backward_order, Backward::split_forward_order}) {
    // With a tied head the table's gradient is a sum of the head's and the embedding's: bit for bit
    // only when the weight passes add them in the full backward's order.
    if (tied && how == Backward::split_forward_order) continue;
    CAPTURE(int(how));
    const Run<Real> staged = run_stages(spec, rc, params, how);
    CHECK(staged.loss == loss);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < grads.size(); ++i) differ += staged.grads[i] != grads[i];
    CHECK(differ == 0);
  }
}

}  // namespace

TEST_CASE("pipeline stages and the split backward give the whole model's loss and gradients bit for bit") {
  for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::full}) {
    CAPTURE(int(rc));
    check_stages_match_whole_model<float>(four_layers(test::tiny_llama()), rc);
    check_stages_match_whole_model<double>(four_layers(test::tiny_llama()), rc);
    check_stages_match_whole_model<float>(four_layers(test::tiny_gpt()), rc);
    check_stages_match_whole_model<double>(four_layers(test::tiny_gpt()), rc);
  }
}

TEST_CASE("the split backward's gradients match central differences") {
  for (const ModelSpec& spec : {four_layers(test::tiny_llama()), four_layers(test::tiny_gpt())}) {
    CAPTURE(spec.name);
    std::vector<double> params = init_params<double>(spec);
    const Run<double> split = run_stages(spec, RecomputeMode::full, params, Backward::split_backward_order);
    Transformer<double> model(spec, kBatch, kSeq);
    const auto batch = test::random_tokens(kBatch, kSeq, spec.vocab, 11);
    auto f = [&] { return model.forward(params.data(), batch.tokens.data(), batch.targets.data()); };
    std::vector<std::int64_t> sample;
    for (const ModuleLayout& m : model.layout().modules)
      for (const TensorSlot& t : m.tensors)
        for (std::int64_t e : {std::int64_t(0), t.numel() / 2, t.numel() - 1}) sample.push_back(m.offset + t.offset + e);
    FSDPX_CHECK_GRAD(spec.name, test::check_grad(params, split.grads, f, sample), 1e-6);
  }
}

}  // namespace fsdpx
