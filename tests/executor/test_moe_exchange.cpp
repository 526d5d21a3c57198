// tests/executor/test_moe_exchange.cpp — expert parallelism in the CPU MoE MLP (executor/model/moe_exchange.h):
// at ep 2 and 4, on threads and over TCP, each rank holding experts / ep and exchanging its routed rows,
// every rank's output and input gradient equal the ep 1 computation on its own tokens with all experts, its
// router gradient equals its own, and each local expert's gradient equals the sum over the ep group's ranks
// of their ep 1 gradients of that expert (in double, within 1e-12). Each pass issues two all-to-alls on the
// ep group, each within the step program's bound (program/all_to_all_contract.h). The parameter layout
// of an ep rank holds its local experts' rows, which together cover each experts' tensor once and start
// from the ep 1 initial values; a whole MoE Transformer at ep 2 and 4 (Mixtral's block and DeepSeek-V3's:
// sigmoid, grouped, biased routing and a shared expert) gives every rank ep 1's loss and gradients on its own
// batch (its local experts' gradients summed over the group).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "executor/comm/tcp_communicator.h"
#include "executor/comm/thread_communicator.h"
#include "executor/launch/socket_io.h"
#include "executor/model/init.h"
#include "executor/model/model_parallel.h"
#include "executor/model/moe_mlp.h"
#include "executor/model/transformer.h"
#include "program/all_to_all_contract.h"
#include "tests/executor/rendezvous_fixtures.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

constexpr std::int64_t kTokens = 7, kHidden = 6, kExperts = 4, kTopK = 2, kFfn = 5;

std::vector<double> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, 0.5);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

// The full model (router, every expert), shared by all ranks.
struct FullMoe {
  std::vector<double> router = random_vector(std::size_t(kExperts * kHidden), 1);
  std::vector<double> up = random_vector(std::size_t(kExperts * 2 * kFfn * kHidden), 2);
  std::vector<double> down = random_vector(std::size_t(kExperts * kHidden * kFfn), 3);
};

// One rank's result: output, input gradient, router gradient and its local experts' gradients.
struct RankResult {
  std::vector<double> out, dx, g_router, g_up, g_down;
};

MoeDims dims(int ep, int ep_rank) {
  return MoeDims{kTokens, kHidden, kExperts, kTopK, kFfn, true, ep, ep_rank};
}

// Forward and backward of rank `rank`'s tokens (seeded by the rank) with experts [first, first + local).
RankResult run_rank(const FullMoe& m, const MoeDims& d, int rank, ModelComm* comm) {
  const std::int64_t local = d.local_experts(), first = d.ep_rank * local;
  const auto x = random_vector(std::size_t(kTokens * kHidden), 100 + unsigned(rank));
  const auto dout = random_vector(std::size_t(kTokens * kHidden), 200 + unsigned(rank));
  const std::vector<double> aux(std::size_t(kExperts), 0.01 * (rank + 1));
  MoeActs<double> a;
  MoeScratch<double> s;
  a.allocate(d), s.allocate(d);
  RankResult r;
  r.out.assign(x.size(), 0), r.dx.assign(x.size(), 0), r.g_router.assign(m.router.size(), 0);
  r.g_up.assign(std::size_t(local * 2 * kFfn * kHidden), 0), r.g_down.assign(std::size_t(local * kHidden * kFfn), 0);
  const MoeTensors<const double*> p{m.router.data(), m.up.data() + first * 2 * kFfn * kHidden,
                                    m.down.data() + first * kHidden * kFfn};
  const MoeTensors<double*> g{r.g_router.data(), r.g_up.data(), r.g_down.data()};
  moe_forward(d, p, x.data(), r.out.data(), a, nullptr, 1, comm);
  moe_backward(d, p, g, x.data(), dout.data(), a, MoeAuxGrad<double>{aux.data()}, r.dx.data(), s, nullptr, 1, comm);
  return r;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, std::size_t want_at,
                  const std::string& what) {
  double maxdiff = 0;
  for (std::size_t i = 0; i < got.size(); ++i) maxdiff = std::max(maxdiff, std::abs(got[i] - want[want_at + i]));
  if (!(maxdiff <= 1e-12)) throw std::runtime_error(fmt::format("{}: maxdiff {:.3e}", what, maxdiff));
}

// The ep run of world rank `rank` in an ep group `c` (ranks 0..ep-1 of the world): checks it against the
// ep 1 references, and its issued all-to-alls against the program's bound for stated S = mean x ep.
void check_rank(const FullMoe& m, const std::vector<RankResult>& ref, Communicator& c) {
  const int ep = c.size(), q = c.rank();
  ModelComm comm(nullptr, nullptr, nullptr);
  comm.set_ep_group(&c);
  const MoeDims d = dims(ep, q);
  const RankResult r = run_rank(m, d, q, &comm);
  expect_close(r.out, ref[std::size_t(q)].out, 0, "output");
  expect_close(r.dx, ref[std::size_t(q)].dx, 0, "input gradient");
  expect_close(r.g_router, ref[std::size_t(q)].g_router, 0, "router gradient");
  std::vector<double> up_sum(ref[0].g_up.size(), 0.0), down_sum(ref[0].g_down.size(), 0.0);
  for (int s = 0; s < ep; ++s)
    for (std::size_t i = 0; i < up_sum.size(); ++i) up_sum[i] += ref[std::size_t(s)].g_up[i];
  for (int s = 0; s < ep; ++s)
    for (std::size_t i = 0; i < down_sum.size(); ++i) down_sum[i] += ref[std::size_t(s)].g_down[i];
  expect_close(r.g_up, up_sum, std::size_t(q * d.local_experts() * 2 * kFfn * kHidden), "local experts' up gradient");
  expect_close(r.g_down, down_sum, std::size_t(q * d.local_experts() * kHidden * kFfn), "local experts' down gradient");
  const auto issued = comm.take_issued();
  const double mean = double(kTokens * kTopK * kHidden) * sizeof(double);
  if (issued.size() != 4) throw std::runtime_error(fmt::format("{} collectives issued, not 4", issued.size()));
  for (const IssuedCollective& ic : issued)
    if (ic.axis != ModelAxis::ep || ic.kind != Collective::all_to_all || ic.bytes < mean ||
        !variable_all_to_all_within(mean * ep, ep, ic.bytes))
      throw std::runtime_error(fmt::format("an all-to-all of {} B (mean {} B)", ic.bytes, mean));
}

// ep 1 references: every rank's tokens through all experts.
std::vector<RankResult> references(const FullMoe& m, int ranks) {
  std::vector<RankResult> ref;
  for (int r = 0; r < ranks; ++r) ref.push_back(run_rank(m, dims(1, 0), r, nullptr));
  return ref;
}

}  // namespace

TEST_CASE("expert parallelism on threads: ep 2 and 4 give ep 1's outputs and gradients") {
  const FullMoe m;
  for (int ep : {2, 4}) {
    CAPTURE(ep);
    const auto ref = references(m, ep);
    CHECK_NOTHROW(run_ranks(ep, [&](Communicator& c) { check_rank(m, ref, c); }));
  }
}

TEST_CASE("expert parallelism over TCP: ep 2 gives ep 1's outputs and gradients") {
  const FullMoe m;
  const auto ref = references(m, 2);
  const int port = net::pick_free_port();
  const auto errors = test::run_ranks(2, [&](int r) {
    Rendezvous rdzv = Rendezvous::join(test::options(port, r, 2, 10.0));
    auto comm = make_tcp_communicator(rdzv, 20.0);
    check_rank(m, ref, *comm);
  });
  for (const std::string& e : errors) CHECK(e == "");
}

TEST_CASE("the variable all-to-all bound: [stated / ranks, stated x ranks]") {
  CHECK(variable_all_to_all_within(100, 4, 25));
  CHECK(variable_all_to_all_within(100, 4, 400));
  CHECK_FALSE(variable_all_to_all_within(100, 4, 24.9));
  CHECK_FALSE(variable_all_to_all_within(100, 4, 400.1));
  CHECK_FALSE(variable_all_to_all_within(0, 4, 0));
}

TEST_CASE("an ep rank's layout: its local experts' rows, each full element once across the group, ep 1's init") {
  ModelSpec m = test::tiny_llama();
  m.moe.experts = 4, m.moe.top_k = 2, m.moe.expert_ffn_hidden = 6, m.moe.dense_layers = 1;
  const ParamLayout full = make_param_layout(m);
  const std::int64_t per_expert = 3 * m.hidden * m.moe.expert_ffn_hidden;
  for (int ep : {2, 4}) {
    CAPTURE(ep);
    for (int mod = 0; mod < full.num_modules(); ++mod) {
      const ModuleLayout& fm = full.modules[std::size_t(mod)];
      const bool moe = mod >= 2 && mod <= int(m.layers);  // block.1 onwards: past the dense leading block
      std::vector<int> hits(std::size_t(fm.numel), 0);
      for (int q = 0; q < ep; ++q) {
        const ParamLayout local = make_param_layout(m, {}, EpSlice{ep, q});
        const ModuleLayout& lm = local.modules[std::size_t(mod)];
        CHECK(lm.numel == fm.numel - (moe ? per_expert * (m.moe.experts - m.moe.experts / ep) : 0));
        for (std::int64_t e = 0; e < lm.numel; ++e) {
          const std::int64_t f = lm.full_element(e);
          ++hits[std::size_t(f)];
          if (init_value(local, 7, mod, e) != init_value(full, 7, mod, f)) FAIL("init differs at element ", e);
        }
      }
      std::int64_t once = 0, every = 0;
      for (const ModuleLayout* l : {&fm}) {
        for (const TensorSlot& t : l->tensors)
          for (std::int64_t e = 0; e < t.numel(); ++e)
            (hits[std::size_t(t.offset + e)] == (t.expert ? 1 : ep) ? once : every) += 1;
      }
      CHECK(once == fm.numel);  // an expert element on one rank, every other element on all ep ranks
      CHECK(every == 0);
    }
  }
}

namespace {

ModelSpec tiny_mixtral() {
  ModelSpec m = test::tiny_llama();
  m.name = "tiny-mixtral";
  m.moe.experts = 4, m.moe.top_k = 2, m.moe.expert_ffn_hidden = 6, m.moe.dense_layers = 1;
  m.moe.norm_topk_prob = true, m.moe.aux_loss_coef = 0.02;
  return m;
}

struct ModelResult {
  double loss = 0;
  std::vector<double> grads;  // the rank's layout
};

// Rank r's batch (seeded by r) through the model at (ep, ep_rank), its parameters the full init's elements.
ModelResult run_model(const ModelSpec& m, int ep, int rank, int batch_seed, ModelComm* comm) {
  ModelOptions o;
  o.parallel.ep = ep, o.parallel.ep_rank = ep > 1 ? rank : 0;
  o.comm = comm;
  Transformer<double> model(m, 2, 4, o);
  const ParamLayout full = make_param_layout(m);
  std::vector<double> all(std::size_t(full.total));
  init_all(full, 9, all.data());
  const ParamLayout& local = model.layout();
  std::vector<double> p(std::size_t(local.total));
  for (std::size_t k = 0; k < local.modules.size(); ++k)
    for (std::int64_t e = 0; e < local.modules[k].numel; ++e)
      p[std::size_t(local.modules[k].offset + e)] = all[std::size_t(full.modules[k].offset + local.modules[k].full_element(e))];
  const auto batch = test::random_tokens(2, 4, m.vocab, unsigned(batch_seed));
  ModelResult r;
  r.grads.assign(p.size(), 0.0);
  r.loss = model.forward(p.data(), batch.tokens.data(), batch.targets.data());
  model.backward(p.data(), r.grads.data());
  return r;
}

}  // namespace

TEST_CASE("an MoE Transformer at ep 2 and 4: every rank's loss and gradients are ep 1's (Mixtral's and DeepSeek-V3's blocks)") {
  for (const ModelSpec& m : {tiny_mixtral(), test::tiny_deepseek_moe(0.5)})
  for (int ep : {2, 4}) {
    CAPTURE(m.name);
    CAPTURE(ep);
    const ParamLayout full = make_param_layout(m);
    std::vector<ModelResult> ref;
    for (int r = 0; r < ep; ++r) ref.push_back(run_model(m, 1, 0, 50 + r, nullptr));
    CHECK_NOTHROW(run_ranks(ep, [&](Communicator& c) {
      ModelComm comm(nullptr, nullptr, nullptr);
      comm.set_ep_group(&c);
      const ModelResult got = run_model(m, ep, c.rank(), 50 + c.rank(), &comm);
      if (std::abs(got.loss - ref[std::size_t(c.rank())].loss) > 1e-12)
        throw std::runtime_error(fmt::format("rank {}: loss {} vs ep 1's {}", c.rank(), got.loss, ref[std::size_t(c.rank())].loss));
      const ParamLayout local = make_param_layout(m, {}, EpSlice{ep, c.rank()});
      double maxdiff = 0;
      for (std::size_t k = 0; k < local.modules.size(); ++k)
        for (const TensorSlot& t : local.modules[k].tensors)
          for (std::int64_t e = 0; e < t.numel(); ++e) {
            const std::int64_t f = full.modules[k].offset + local.modules[k].full_element(t.offset + e);
            double want = 0;  // an expert's gradient: every rank's tokens routed to it; else the rank's own
            for (int r = 0; r < ep; ++r)
              if (t.expert || r == c.rank()) want += ref[std::size_t(r)].grads[std::size_t(f)];
            maxdiff = std::max(maxdiff, std::abs(got.grads[std::size_t(local.modules[k].offset + t.offset + e)] - want));
          }
      if (!(maxdiff <= 1e-12)) throw std::runtime_error(fmt::format("rank {}: gradient maxdiff {:.3e}", c.rank(), maxdiff));
    }));
  }
}

}  // namespace fsdpx
