// executor/model/sampler.cpp — next-token sampling (see sampler.h). softmax(logits / T) is computed
// from the model's probabilities p = softmax(logits) as p_i^(1/T) renormalised, relative to the largest
// p so that small T cannot overflow; ids with p = 0 are never drawn.
#include "executor/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/errors.h"
#include "executor/model/transformer.h"

namespace fsdpx {

std::int64_t draw_token(std::span<const float> probs, double temperature, double u) {
  FSDP_CHECK(!probs.empty(), "draw_token: empty distribution");
  const auto best = std::max_element(probs.begin(), probs.end());
  if (temperature <= 0 || *best <= 0) return best - probs.begin();
  const double log_best = std::log(double(*best));
  std::vector<double> w(probs.size());
  double total = 0;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    w[i] = probs[i] > 0 ? std::exp((std::log(double(probs[i])) - log_best) / temperature) : 0.0;
    total += w[i];
  }
  double target = u * total;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (target < w[i]) return std::int64_t(i);
    target -= w[i];
  }
  return best - probs.begin();  // u·total rounded up to the total
}

std::vector<std::int32_t> sample_tokens(const ModelSpec& model, std::span<const float> params,
                                        const std::vector<std::int32_t>& prompt, const SampleOptions& o,
                                        std::vector<float>* token_probs) {
  FSDP_CHECK(!prompt.empty() && o.window >= 1 && o.window <= model.max_seq, "sample_tokens: bad window or prompt");
  const std::int64_t vocab = o.vocab_limit > 0 ? std::min(o.vocab_limit, model.vocab) : model.vocab;
  Transformer<float> net(model, 1, o.window);
  FSDP_CHECK(std::int64_t(params.size()) == net.layout().total, "sample_tokens: parameter count");
  std::mt19937_64 rng(o.seed);
  std::vector<std::int32_t> context = prompt, out, window(static_cast<std::size_t>(o.window));
  for (std::int64_t n = 0; n < o.tokens; ++n) {
    // The last `window` tokens, zero-padded on the right: causal attention keeps the padding from
    // reaching the last real position.
    const std::int64_t len = std::min<std::int64_t>(o.window, std::int64_t(context.size()));
    std::fill(window.begin(), window.end(), 0);
    std::copy(context.end() - len, context.end(), window.begin());
    net.forward(params.data(), window.data(), window.data());
    const auto row = net.probabilities().subspan(static_cast<std::size_t>((len - 1) * model.vocab),
                                                 static_cast<std::size_t>(vocab));
    const double u = double(rng() >> 11) * 0x1.0p-53;  // 53 random bits: uniform in [0, 1)
    const auto token = static_cast<std::int32_t>(draw_token(row, o.temperature, u));
    if (token_probs) token_probs->push_back(row[static_cast<std::size_t>(token)]);
    context.push_back(token);
    out.push_back(token);
  }
  return out;
}

}  // namespace fsdpx
