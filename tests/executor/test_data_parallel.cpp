// tests/executor/test_data_parallel.cpp — the model and the thread communicator together: 4 ranks run
// forward/backward concurrently on different micro-batches and all-reduce their gradients; the result
// must equal, bit for bit, the rank-order sum of the same gradients computed one rank at a time
// (checks that concurrent ranks share no state — OpenMP and BLAS included — and that the reduction
// order is fixed).
#include <doctest/doctest.h>

#include <vector>

#include "executor/comm/thread_communicator.h"
#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

std::vector<float> rank_grads(const ModelSpec& spec, const std::vector<float>& params, int rank) {
  Transformer<float> model(spec, 2, 6);
  std::vector<float> grads(params.size(), 0.0f);
  const auto batch = test::random_tokens(2, 6, spec.vocab, 100 + unsigned(rank));
  model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), grads.data(), 0.25f);
  return grads;
}

TEST_CASE("data-parallel gradients all-reduced over 4 threads equal the serial rank-order sum") {
  for (const ModelSpec& spec : {test::tiny_llama(), test::tiny_gpt()}) {
    CAPTURE(spec.name);
    const ParamLayout layout = make_param_layout(spec);
    std::vector<float> params(std::size_t(layout.total));
    init_all(layout, 3, params.data());
    std::vector<float> expect = rank_grads(spec, params, 0);
    for (int r = 1; r < 4; ++r) {
      const std::vector<float> g = rank_grads(spec, params, r);
      for (std::size_t i = 0; i < g.size(); ++i) expect[i] += g[i];
    }
    std::vector<std::vector<float>> got(4);
    run_ranks(4, [&](Communicator& c) {
      std::vector<float> g = rank_grads(spec, params, c.rank());
      c.all_reduce(g.data(), std::int64_t(g.size()));
      got[std::size_t(c.rank())] = std::move(g);
    });
    for (int r = 0; r < 4; ++r) CHECK(got[std::size_t(r)] == expect);
  }
}

}  // namespace
}  // namespace fsdpx
