// tests/executor/test_model_parallel.cpp — gradient checks in double of the tensor-, sequence- and
// context-parallel model: ranks are threads; each holds its slices of one perturbed full parameter set
// (param_layout.h's full_element), and the loss and every rank's gradient element (both summed over
// the context-parallel ranks) must equal the single-rank model's (itself checked against finite
// differences in test_model_grad.cpp) within 1e-10 relative: llama with GQA (tp 2, and tp 4 with
// fewer KV heads than ranks), gpt with biases and a tied head, sequence parallelism on and off, full
// recompute; context parallelism 2 and 4, alone and with tensor parallelism; and the init of a slice
// equals the same elements of the full init.
#include <doctest/doctest.h>

#include <cmath>
#include <mutex>
#include <random>
#include <vector>

#include "executor/comm/thread_communicator.h"
#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "tests/executor/tiny_models.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

struct Case {
  ModelSpec spec;
  int tp = 1, cp = 1;
  bool sp = true;
  RecomputeMode recompute = RecomputeMode::none;
  std::int64_t b = 2, t = 8;
};

// The full model's loss and gradients on perturbed parameters (the reference).
struct Reference {
  std::vector<double> params, grads;
  double loss = 0;
};

Reference full_model(const Case& c, const test::TokenBatch& batch) {
  Transformer<double> model(c.spec, c.b, c.t);
  Reference r;
  r.params.assign(std::size_t(model.layout().total), 0.0);
  r.grads.assign(r.params.size(), 0.0);
  init_all(model.layout(), 42, r.params.data());
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0.0, 0.3);  // exercise every nonlinearity
  for (double& p : r.params) p += noise(rng);
  r.loss = model.forward(r.params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(r.params.data(), r.grads.data());
  return r;
}

struct Worst {
  std::mutex mu;
  double loss_sum = 0, grad_rel = 0, max_grad = 0;
};

// One rank: its slices of the reference parameters; its gradients against the reference's elements.
void run_rank(const Case& c, const test::TokenBatch& batch, const Reference& ref, const ParamLayout& full,
              Communicator& world, Worst& worst) {
  const int rank = world.rank();
  ModelParallel par{c.tp, rank % c.tp, c.cp, rank / c.tp, c.sp};
  auto tp = world.split(rank / c.tp, rank % c.tp);
  auto cp = world.split(rank % c.tp, rank / c.tp);
  ModelComm comm(tp.get(), cp.get(), nullptr);
  ModelOptions o;
  o.parallel = par;
  o.comm = &comm;
  if (c.recompute != RecomputeMode::none) o.recompute.assign(std::size_t(c.spec.layers), c.recompute);
  Transformer<double> model(c.spec, c.b, c.t, o);
  const ParamLayout& local = model.layout();
  std::vector<double> p(std::size_t(local.total)), g(p.size(), 0.0);
  for (std::size_t m = 0; m < local.modules.size(); ++m)
    for (std::int64_t e = 0; e < local.modules[m].numel; ++e)
      p[std::size_t(local.modules[m].offset + e)] =
          ref.params[std::size_t(full.modules[m].offset + local.modules[m].full_element(e))];
  const double loss = model.forward(p.data(), batch.tokens.data(), batch.targets.data());
  model.backward(p.data(), g.data());
  if (c.cp > 1) cp->all_reduce(g.data(), std::int64_t(g.size()));  // the cp ranks' tokens add up (the runtime's dp_shard_cp reduce-scatter)
  double diff = 0;
  for (std::size_t m = 0; m < local.modules.size(); ++m)
    for (std::int64_t e = 0; e < local.modules[m].numel; ++e) {
      const double want = ref.grads[std::size_t(full.modules[m].offset + local.modules[m].full_element(e))];
      diff = ::fsdpx::test::nan_max(diff, std::abs(g[std::size_t(local.modules[m].offset + e)] - want));
    }
  std::lock_guard<std::mutex> lock(worst.mu);
  if (par.tp_rank == 0) worst.loss_sum += loss;
  worst.grad_rel = ::fsdpx::test::nan_max(worst.grad_rel, diff);
}

void check_case(const Case& c) {
  const auto batch = test::random_tokens(c.b, c.t, c.spec.vocab, 11);
  const Reference ref = full_model(c, batch);
  const ParamLayout full = make_param_layout(c.spec);
  Worst worst;
  run_ranks(c.tp * c.cp, [&](Communicator& world) { run_rank(c, batch, ref, full, world, worst); });
  double scale = 0;
  for (double x : ref.grads) scale = ::fsdpx::test::nan_max(scale, std::abs(x));
  const double loss_rel = std::abs(worst.loss_sum - ref.loss) / ref.loss, grad_rel = worst.grad_rel / scale;
  MESSAGE(c.spec.name << " tp " << c.tp << " cp " << c.cp << " sp " << c.sp << ": loss rel diff " << loss_rel
                      << ", gradient max rel diff " << grad_rel);
  CHECK(loss_rel < 1e-12);
  CHECK(grad_rel < 1e-10);
}

ModelSpec even_vocab(ModelSpec s) {
  s.vocab = 16;  // divisible by every tp degree here
  return s;
}

TEST_CASE("tensor parallelism: llama (GQA) and gpt gradients equal the single-rank model's") {
  for (bool sp : {true, false}) {
    check_case(Case{even_vocab(test::tiny_llama()), 2, 1, sp});
    check_case(Case{even_vocab(test::tiny_gpt()), 2, 1, sp});
  }
  check_case(Case{even_vocab(test::tiny_llama()), 4, 1, true});   // kv_heads 2 < tp 4 (Megatron's grouped path)
  check_case(Case{even_vocab(test::tiny_llama()), 4, 1, false});
  check_case(Case{even_vocab(test::tiny_gpt()), 2, 1, true, RecomputeMode::full});
}

TEST_CASE("context parallelism (and with tensor parallelism): gradients equal the single-rank model's") {
  for (const ModelSpec& spec : {even_vocab(test::tiny_llama()), even_vocab(test::tiny_gpt())}) {
    check_case(Case{spec, 1, 2, true});
    check_case(Case{spec, 2, 2, true});
    check_case(Case{spec, 2, 2, false});
  }
  check_case(Case{even_vocab(test::tiny_llama()), 1, 4, true, RecomputeMode::full});  // 8 chunks of 1 token
  check_case(Case{even_vocab(test::tiny_llama()), 4, 2, true});  // kv_heads < tp with cp
}

TEST_CASE("tensor-parallel init: each slice is the full init's elements") {
  for (const ModelSpec& spec : {even_vocab(test::tiny_llama()), even_vocab(test::tiny_gpt())})
    for (int tp : {2, 4}) {
      if (spec.heads % tp != 0) continue;
      const ParamLayout full = make_param_layout(spec);
      std::vector<float> all(std::size_t(full.total));
      init_all(full, 5, all.data());
      std::int64_t covered = 0;
      for (int r = 0; r < tp; ++r) {
        const ParamLayout local = make_param_layout(spec, TpSlice{tp, r});
        std::vector<float> mine(std::size_t(local.total));
        init_all(local, 5, mine.data());
        for (std::size_t m = 0; m < local.modules.size(); ++m)
          for (std::int64_t e = 0; e < local.modules[m].numel; ++e)
            REQUIRE(mine[std::size_t(local.modules[m].offset + e)] ==
                    all[std::size_t(full.modules[m].offset + local.modules[m].full_element(e))]);
        covered += local.total;
      }
      CHECK(covered >= full.total);  // the slices cover the model (replicated tensors more than once)
    }
}

}  // namespace
}  // namespace fsdpx
