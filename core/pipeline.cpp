// core/pipeline.cpp — stage balancing (see pipeline.h).
#include "core/pipeline.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

namespace {

bool is_integer(double x) { return std::floor(x) == x; }

// Effective layers before stage i (i = 0 ... stages). Integer totals: torchtitan's split, the first
// (total mod stages) stages take one more; otherwise i x (total / stages), rounded by the caller.
double effective_before(int i, int stages, double total) {
  if (is_integer(total)) {
    const auto t = static_cast<long long>(total);
    return static_cast<double>(i * (t / stages) + std::min<long long>(i, t % stages));
  }
  return i * total / stages;
}

}  // namespace

std::vector<int> balance_stage_blocks(int layers, int stages, StageAccounting accounting) {
  FSDP_CHECK(layers >= 1 && stages >= 1, "balance_stage_blocks needs layers and stages");
  const double a = accounting.input_weight, b = accounting.output_weight;
  if (!(a >= 0 && b >= 0 && std::isfinite(a) && std::isfinite(b)))
    throw ConfigError(fmt::format("stage weights must be finite and >= 0, got {} and {}", a, b));
  const double total = layers + a + b;
  std::vector<int> blocks;
  int before = 0;
  for (int i = 0; i < stages; ++i) {
    const double end_effective = effective_before(i + 1, stages, total);
    int end = static_cast<int>(std::lround(std::clamp(end_effective - a, 0.0, double(layers))));
    if (i + 1 == stages) end = layers;
    blocks.push_back(end - before);
    before = end;
  }
  for (int i = 0; i < stages; ++i) {
    const bool holds_more = i == 0 || i + 1 == stages;  // the embedding or the head
    if (blocks[std::size_t(i)] < 0 || (blocks[std::size_t(i)] == 0 && !holds_more))
      throw ConfigError(fmt::format("{} blocks do not fill {} pipeline stages with the embedding counted as {} and "
                                    "the head as {} blocks: stage {} would hold no block",
                                    layers, stages, a, b, i));
  }
  return blocks;
}

}  // namespace fsdpx
