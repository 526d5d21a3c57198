// tests/executor/test_model_recompute.cpp — activation recompute (full, selective, mixed per block)
// gives gradients bit-identical to keeping all activations, and the module-by-module API on separate
// per-module buffers (what an FSDP runtime feeds from unsharded units) equals the flat-buffer helpers
// bit for bit. Also checks the op names reported to the profiler are the simulator's kernel names.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

struct Result {
  float loss = 0;
  std::vector<float> grads;
};

Result run_flat(const ModelSpec& spec, ModelOptions opts) {
  Transformer<float> model(spec, 2, 6, std::move(opts));
  std::vector<float> params(std::size_t(model.layout().total));
  Result r;
  r.grads.assign(params.size(), 0.0f);
  init_all(model.layout(), 1234, params.data());
  const auto batch = test::random_tokens(2, 6, spec.vocab, 17);
  r.loss = model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), r.grads.data());
  return r;
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("recompute full/selective/mixed gives bit-identical gradients to none") {
  for (const ModelSpec& spec : {test::tiny_llama(), test::tiny_gpt()}) {
    CAPTURE(spec.name);
    const Result none = run_flat(spec, {});
    for (auto modes : {std::vector{RecomputeMode::full, RecomputeMode::full},
                       std::vector{RecomputeMode::selective, RecomputeMode::selective},
                       std::vector{RecomputeMode::none, RecomputeMode::full}}) {
      ModelOptions opts;
      opts.recompute = modes;
      const Result r = run_flat(spec, opts);
      CHECK(r.loss == none.loss);
      CHECK(bit_identical(r.grads, none.grads));
    }
  }
}

TEST_CASE("module-by-module API on separate buffers equals the flat helpers") {
  for (const ModelSpec& spec : {test::tiny_llama(), test::tiny_gpt()}) {
    CAPTURE(spec.name);
    const Result flat = run_flat(spec, {});
    Transformer<float> model(spec, 2, 6);
    const ParamLayout& layout = model.layout();
    std::vector<std::vector<float>> p(layout.modules.size()), g(layout.modules.size());
    std::vector<const float*> pp;
    std::vector<float*> gp;
    for (int m = 0; m < layout.num_modules(); ++m) {
      const auto n = std::size_t(layout.modules[std::size_t(m)].numel);
      p[std::size_t(m)].resize(n + 1), g[std::size_t(m)].assign(n + 1, 0.0f);  // +1: never a null data()
      init_module_range(layout, 1234, m, 0, std::int64_t(n), p[std::size_t(m)].data());
      pp.push_back(p[std::size_t(m)].data()), gp.push_back(g[std::size_t(m)].data());
    }
    const auto batch = test::random_tokens(2, 6, spec.vocab, 17);
    model.set_batch(batch.tokens.data(), batch.targets.data());
    for (int m = 0; m < layout.num_modules(); ++m) model.forward_module(m, pp);
    CHECK(model.loss() == flat.loss);
    model.begin_backward(1.0f);
    for (int m = layout.num_modules() - 1; m >= 0; --m) model.backward_module(m, pp, gp);
    std::vector<float> joined;
    for (int m = 0; m < layout.num_modules(); ++m)
      joined.insert(joined.end(), g[std::size_t(m)].begin(), g[std::size_t(m)].end() - 1);
    CHECK(bit_identical(joined, flat.grads));
  }
}

struct CountingProfiler : OpProfiler {
  std::map<std::string, int> count;
  double total_s = 0;
  void record(std::string_view op, int, double time_s) override {
    ++count[std::string(op)];
    total_s += time_s;
  }
};

TEST_CASE("profiler hooks report simulator kernel names once per block and pass") {
  CountingProfiler prof;
  ModelOptions opts;
  opts.profiler = &prof;
  const ModelSpec spec = test::tiny_llama();
  run_flat(spec, opts);
  const int layers = int(spec.layers);
  for (const char* op : {"attn_norm", "qkv", "rope", "attn_core", "attn_out", "attn_residual", "mlp_norm", "mlp_up",
                         "mlp_act", "mlp_down", "mlp_residual", "qkv_dx", "qkv_dw", "attn_core_bwd", "mlp_down_dw"}) {
    CAPTURE(op);
    CHECK(prof.count[op] == layers);
  }
  for (const char* op : {"embed", "final_norm", "lm_head", "loss", "loss_bwd", "lm_head_dx", "lm_head_dw",
                         "final_norm_bwd", "embed_dw"}) {
    CAPTURE(op);
    CHECK(prof.count[op] == 1);
  }
  CHECK(prof.total_s > 0);
}

}  // namespace
}  // namespace fsdpx
