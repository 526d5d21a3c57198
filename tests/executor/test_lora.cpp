// tests/executor/test_lora.cpp — LoRA in the CPU model and the Trainer (Hu et al. 2021, §4.1): the
// adapter gradients match central finite differences of the loss (double); a merged model (W + s B A)
// gives the adapted model's loss; llama-tiny and gpt-tiny trained with LoRA at 1 rank lower the loss,
// leave every base weight bit-identical and move the adapters; dp_shard 4 (FSDP) gives the 1-rank
// losses and adapters within 1e-5 relative.
#include <doctest/doctest.h>

#include <random>

#include "core/config_paths.h"
#include "executor/model/init.h"
#include "executor/model/lora.h"
#include "executor/model/transformer.h"
#include "tests/executor/trainer_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

LoraSettings all_targets(const ModelSpec& m) {
  LoraSettings s;
  s.rank = 2;
  s.alpha = 4;
  s.targets = {LoraTarget::q, LoraTarget::k, LoraTarget::v, LoraTarget::o, LoraTarget::up, LoraTarget::down};
  if (m.ffn_kind == FfnKind::swiglu) s.targets.insert(s.targets.begin() + 4, LoraTarget::gate);
  return s;
}

// Adapters with B random too (B = 0 at init would make dA vanish).
std::vector<double> random_adapters(const LoraLayout& l) {
  std::vector<double> a(std::size_t(l.total));
  std::mt19937 gen(3);
  std::normal_distribution<double> dist(0.0, 0.3);
  for (double& x : a) x = dist(gen);
  return a;
}

struct Batch {
  std::vector<std::int32_t> tokens, targets;
};
Batch batch_of(const ModelSpec& m, std::int64_t b, std::int64_t t) {
  Batch out;
  for (std::int64_t i = 0; i < b * t; ++i)
    out.tokens.push_back(std::int32_t((i * 7 + 3) % m.vocab)), out.targets.push_back(std::int32_t((i * 5 + 1) % m.vocab));
  return out;
}

TEST_CASE("lora: adapter gradients match finite differences and the base gets none") {
  for (const std::string name : {"llama-tiny", "gpt-tiny"}) {
    const ModelSpec m = load_model(name);
    const LoraLayout l = make_lora_layout(m, all_targets(m));
    ModelOptions o;
    o.lora = &l;
    Transformer<double> model(m, 2, 6, o);
    std::vector<double> p(std::size_t(model.layout().total)), g(p.size(), 0.0);
    init_all(model.layout(), 5, p.data());
    std::vector<double> a = random_adapters(l), ga(a.size(), 0.0);
    const Batch b = batch_of(m, 2, 6);
    model.set_lora_buffers(a.data(), ga.data());
    model.forward(p.data(), b.tokens.data(), b.targets.data());
    model.backward(p.data(), g.data());
    CHECK(std::all_of(g.begin(), g.end(), [](double x) { return x == 0.0; }));
    double err = 0, scale = 0;  // the largest error against the largest gradient
    for (std::size_t i = 0; i < a.size(); i += 7) {
      const double keep = a[i], h = 1e-5;
      a[i] = keep + h;
      const double up = model.forward(p.data(), b.tokens.data(), b.targets.data());
      a[i] = keep - h;
      const double down = model.forward(p.data(), b.tokens.data(), b.targets.data());
      a[i] = keep;
      err = ::fsdpx::test::nan_max(err, std::abs((up - down) / (2 * h) - ga[i]));
      scale = ::fsdpx::test::nan_max(scale, std::abs(ga[i]));
    }
    MESSAGE(name << ": adapter gradients, max error " << err << " of max " << scale);
    CHECK(scale > 1e-4);
    CHECK(err < 1e-6 * scale);
  }
}

TEST_CASE("lora: the merged model W + (alpha / r) B A gives the adapted model's loss") {
  const ModelSpec m = load_model("llama-tiny");
  const LoraLayout l = make_lora_layout(m, all_targets(m));
  const Batch b = batch_of(m, 1, 8);
  std::vector<float> p(std::size_t(make_param_layout(m).total));
  init_all(make_param_layout(m), 9, p.data());
  std::vector<float> a(std::size_t(l.total)), ga(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(0.05 * std::sin(double(i)));
  ModelOptions o;
  o.lora = &l;
  Transformer<float> adapted(m, 1, 8, o);
  adapted.set_lora_buffers(a.data(), ga.data());
  const float with_adapters = adapted.forward(p.data(), b.tokens.data(), b.targets.data());
  Transformer<float> base(m, 1, 8);
  const float before = base.forward(p.data(), b.tokens.data(), b.targets.data());
  merge_lora(m, l, a.data(), p.data());
  const float merged = base.forward(p.data(), b.tokens.data(), b.targets.data());
  CHECK(std::abs(merged - with_adapters) <= 1e-5 * std::abs(with_adapters));
  CHECK(std::abs(before - with_adapters) > 1e-4);  // the adapters changed the model
}

// A learnable stream: token t of sequence s is (3 s + t) mod V, so the next token is the current one + 1.
class CountingData : public DataSource {
 public:
  explicit CountingData(std::int64_t vocab) : vocab_(vocab) {}
  void global_batch(const DataPosition& pos, std::int64_t global_batch, std::int64_t seq,
                    std::vector<std::int32_t>& tokens) override {
    tokens.resize(std::size_t(global_batch * (seq + 1)));
    for (std::int64_t s = 0; s < global_batch; ++s)
      for (std::int64_t t = 0; t <= seq; ++t)
        tokens[std::size_t(s * (seq + 1) + t)] = std::int32_t((3 * (std::int64_t(pos.next_sample) + s) + t) % vocab_);
  }
  std::string describe() const override { return "counting tokens"; }

 private:
  std::int64_t vocab_;
};

Plan lora_plan(const ModelSpec& m, int dp) {
  test::PlanShape s;
  s.dp_shard = dp, s.accum = 4 / dp;
  Plan p = test::tiny_plan(m, s, 32);
  p.optimizer.total_steps = 40;
  p.optimizer.lr = 3e-3;
  p.lora = all_targets(m);
  p.lora->rank = 4;
  p.lora->alpha = 8;
  validate_plan(p, "test plan");
  return p;
}

TEST_CASE("lora: training moves only the adapters, lowers the loss, and FSDP over 4 ranks gives the 1-rank run") {
  for (const std::string name : {"llama-tiny", "gpt-tiny"}) {
    const ModelSpec m = load_model(name);
    const Plan one = lora_plan(m, 1);
    Trainer t1(one, std::make_shared<CountingData>(m.vocab));
    const AdapterState start = t1.state().adapters;
    std::vector<double> l1;
    for (int s = 0; s < 30; ++s) l1.push_back(t1.step().loss);
    std::vector<float> init(std::size_t(make_param_layout(m).total));
    init_all(make_param_layout(m), one.training.seed, init.data());
    CHECK(t1.gather_full_params() == init);  // the base, bit for bit
    const AdapterState end = t1.state().adapters;
    CHECK(test::max_rel_diff(end.params, start.params) > 1e-3);
    MESSAGE(name << ": LoRA loss " << l1.front() << " -> " << l1.back());
    CHECK(l1.back() < l1.front() - 0.05);  // from log(V) ≈ 5.55 on a learnable stream

    Trainer t4(lora_plan(m, 4), std::make_shared<CountingData>(m.vocab));
    double worst = 0;
    for (int s = 0; s < 30; ++s) worst = ::fsdpx::test::nan_max(worst, std::abs(t4.step().loss - l1[std::size_t(s)]) / l1[std::size_t(s)]);
    MESSAGE(name << ": dp_shard 4 vs 1 rank, loss max rel diff " << worst);
    CHECK(worst <= 1e-5);
    CHECK(test::max_rel_diff(t4.state().adapters.params, end.params) <= 1e-5);
    CHECK(t4.gather_full_params() == init);
  }
}

}  // namespace
}  // namespace fsdpx
