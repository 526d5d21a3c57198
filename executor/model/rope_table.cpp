// executor/model/rope_table.cpp — RoPE inverse frequencies and cos/sin tables (see rope_table.h),
// computed in double and rounded once to the table's type.
#include "executor/model/rope_table.h"

#include <cmath>
#include <numbers>

#include "core/errors.h"

namespace fsdpx {

double rope_inv_freq(std::int64_t i, std::int64_t head_dim, double theta, const RopeScaling& scaling) {
  // RoFormer eq. 15; HF LlamaRotaryEmbedding.
  const double inv_freq = std::pow(theta, -2.0 * double(i) / double(head_dim));
  if (scaling.kind != RopeScalingKind::llama3) return inv_freq;
  // Wavelengths (tokens per turn) above original/low_freq_factor are slowed by `factor`, those below
  // original/high_freq_factor kept; between, a linear blend in original/wavelength. Both sources treat
  // the band's edges as inside it (where the blend equals the outer rules anyway).
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
  for (std::int64_t t = 0; t < tab.seq; ++t)
    for (std::int64_t i = 0; i < tab.half; ++i) {
      const double angle = double(positions[std::size_t(t)]) * inv_freq[static_cast<std::size_t>(i)];
      tab.cos[static_cast<std::size_t>(t * tab.half + i)] = static_cast<Real>(std::cos(angle));
      tab.sin[static_cast<std::size_t>(t * tab.half + i)] = static_cast<Real>(std::sin(angle));
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
