// tests/executor/grad_check.h — central finite differences in double precision for the executor's
// gradient checks: d f/d x_i ≈ (f(x + h·e_i) − f(x − h·e_i)) / 2h, truncation error O(h²).
// The error reported is max|analytic − numeric| / max|numeric| over the checked elements.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/nan_max.h"

namespace fsdpx::test {

struct GradCheck {
  double max_abs_diff = 0;
  double max_abs_ref = 0;
  std::int64_t checked = 0;
  double rel() const { return max_abs_ref > 0 ? max_abs_diff / max_abs_ref : max_abs_diff; }
};

// Compares analytic[i] with the central difference of `loss` in x[i] for every i in `indices`
// (all elements when empty). x is restored afterwards.
inline GradCheck check_grad(std::vector<double>& x, const std::vector<double>& analytic,
                            const std::function<double()>& loss, std::vector<std::int64_t> indices = {},
                            double h = 1e-5) {
  if (indices.empty())
    for (std::int64_t i = 0; i < std::int64_t(x.size()); ++i) indices.push_back(i);
  GradCheck r;
  for (std::int64_t i : indices) {
    const double saved = x[std::size_t(i)];
    x[std::size_t(i)] = saved + h;
    const double up = loss();
    x[std::size_t(i)] = saved - h;
    const double down = loss();
    x[std::size_t(i)] = saved;
    const double numeric = (up - down) / (2 * h);
    r.max_abs_diff = nan_max(r.max_abs_diff, std::abs(numeric - analytic[std::size_t(i)]));
    r.max_abs_ref = nan_max(r.max_abs_ref, std::abs(numeric));
    ++r.checked;
  }
  return r;
}

inline std::vector<double> random_vector(std::size_t n, std::mt19937& rng, double scale = 1.0) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace fsdpx::test

// Prints the error and the number of checked elements, then requires rel < tol.
#define FSDPX_CHECK_GRAD(what, result, tol)                                                            \
  do {                                                                                                 \
    const auto& r_ = (result);                                                                         \
    INFO((what) << ": maxdiff " << r_.max_abs_diff << " max|grad| " << r_.max_abs_ref << " rel "        \
              << r_.rel() << " over " << r_.checked << " elements (tol " << (tol) << ")");            \
    CHECK(r_.checked > 0);                                                                             \
    CHECK(r_.max_abs_ref > 0);                                                                         \
    CHECK(r_.rel() < (tol));                                                                           \
  } while (0)
