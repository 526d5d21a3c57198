// executor/model/rope_table.cpp — RoPE inverse frequencies (plain, Llama 3.1, YaRN), YaRN's scales and
// cos/sin tables (see rope_table.h), computed in double and rounded once to the table's type
// (transformers computes YaRN's frequencies in fp32: they agree to fp32 rounding).
#include "executor/model/rope_table.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/errors.h"

namespace fsdpx {

namespace {

// Llama 3.1: wavelengths (tokens per turn) above original/low_freq_factor are slowed by `factor`, those
// below original/high_freq_factor kept; between, a linear blend in original/wavelength. Both sources treat
// the band's edges as inside it (where the blend equals the outer rules anyway).
double llama3_inv_freq(double inv_freq, const RopeScaling& scaling) {
  const double wavelen = 2.0 * std::numbers::pi / inv_freq;
  const double original = double(scaling.original_max_seq);
  const double low_freq_wavelen = original / scaling.low_freq_factor;
  const double high_freq_wavelen = original / scaling.high_freq_factor;
  if (wavelen < high_freq_wavelen) return inv_freq;
  if (wavelen > low_freq_wavelen) return inv_freq / scaling.factor;
  const double smooth = (original / wavelen - scaling.low_freq_factor) /
                        (scaling.high_freq_factor - scaling.low_freq_factor);
  return (1.0 - smooth) * inv_freq / scaling.factor + smooth * inv_freq;
}

// YaRN: the (fractional) pair index whose frequency turns `turns` times over the original context,
// dim · ln(original / (turns · 2π)) / (2 ln theta) (transformers find_correction_dim).
double yarn_correction_dim(double turns, std::int64_t dim, double theta, double original) {
  return double(dim) * std::log(original / (turns * 2.0 * std::numbers::pi)) / (2.0 * std::log(theta));
}

// The share of pair i interpolated (divided by factor): 0 up to the beta_fast pair, 1 from the beta_slow
// pair on, linear between (transformers find_correction_range and linear_ramp_factor: with truncate the
// ends are rounded outwards, clamped to [0, dim - 1], and equal ends are 0.001 apart).
double yarn_ramp(std::int64_t i, std::int64_t dim, double theta, const RopeScaling& s) {
  const double original = double(s.original_max_seq);
  double low = yarn_correction_dim(s.beta_fast, dim, theta, original);
  double high = yarn_correction_dim(s.beta_slow, dim, theta, original);
  if (s.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, double(dim - 1));
  if (low == high) high += 0.001;
  return std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
}

}  // namespace

double rope_inv_freq(std::int64_t i, std::int64_t head_dim, double theta, const RopeScaling& scaling) {
  // RoFormer eq. 15; HF LlamaRotaryEmbedding.
  const double inv_freq = std::pow(theta, -2.0 * double(i) / double(head_dim));
  switch (scaling.kind) {
    case RopeScalingKind::none: return inv_freq;
    case RopeScalingKind::llama3: return llama3_inv_freq(inv_freq, scaling);
    case RopeScalingKind::yarn: {
      const double interpolated = yarn_ramp(i, head_dim, theta, scaling);
      return inv_freq / scaling.factor * interpolated + inv_freq * (1.0 - interpolated);
    }
  }
  FSDP_CHECK(false, "rope_inv_freq: unknown RoPE scaling kind");
  return inv_freq;
}

double yarn_get_mscale(double factor, double mscale) {
  return factor <= 1.0 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0;
}

double rope_attention_factor(const RopeScaling& s) {
  if (s.kind != RopeScalingKind::yarn) return 1.0;
  if (s.attention_factor > 0) return s.attention_factor;
  if (s.mscale > 0 && s.mscale_all_dim > 0)
    return yarn_get_mscale(s.factor, s.mscale) / yarn_get_mscale(s.factor, s.mscale_all_dim);
  return yarn_get_mscale(s.factor, 1.0);
}

double yarn_softmax_scale_factor(const RopeScaling& s) {
  if (s.kind == RopeScalingKind::none || s.mscale_all_dim <= 0) return 1.0;
  const double m = yarn_get_mscale(s.factor, s.mscale_all_dim);
  return m * m;
}

template <class Real>
RopeTable<Real> make_rope_table(const std::vector<std::int64_t>& positions, std::int64_t head_dim, double theta,
                                const RopeScaling& scaling) {
  FSDP_CHECK(head_dim % 2 == 0, "rope: head_dim must be even");
  RopeTable<Real> tab;
  tab.seq = std::int64_t(positions.size());
  tab.half = head_dim / 2;
  tab.cos.resize(static_cast<std::size_t>(tab.seq * tab.half));
  tab.sin.resize(tab.cos.size());
  std::vector<double> inv_freq(static_cast<std::size_t>(tab.half));
  for (std::int64_t i = 0; i < tab.half; ++i)
    inv_freq[static_cast<std::size_t>(i)] = rope_inv_freq(i, head_dim, theta, scaling);
  const double scale = rope_attention_factor(scaling);
  for (std::int64_t t = 0; t < tab.seq; ++t)
    for (std::int64_t i = 0; i < tab.half; ++i) {
      const double angle = double(positions[std::size_t(t)]) * inv_freq[static_cast<std::size_t>(i)];
      tab.cos[static_cast<std::size_t>(t * tab.half + i)] = static_cast<Real>(scale * std::cos(angle));
      tab.sin[static_cast<std::size_t>(t * tab.half + i)] = static_cast<Real>(scale * std::sin(angle));
    }
  return tab;
}

template <class Real>
RopeTable<Real> make_rope_table(std::int64_t seq, std::int64_t head_dim, double theta,
                                const RopeScaling& scaling) {
  std::vector<std::int64_t> positions(static_cast<std::size_t>(seq));
  for (std::int64_t t = 0; t < seq; ++t) positions[std::size_t(t)] = t;
  return make_rope_table<Real>(positions, head_dim, theta, scaling);
}

#define FSDPX_INSTANTIATE(Real)                                                                           \
  template RopeTable<Real> make_rope_table<Real>(std::int64_t, std::int64_t, double, const RopeScaling&); \
  template RopeTable<Real> make_rope_table<Real>(const std::vector<std::int64_t>&, std::int64_t, double,  \
                                                 const RopeScaling&);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
