// tools/report/compare_html.h — `fsdpx compare -o FILE.html`: one self-contained page (inline CSS and SVG,
// no script, no external URL) with the step time, a chart of predicted against measured time per phase,
// and the phase and op tables, largest misses first. Leaves out a timeline view: the two Chrome traces
// (fsdpx simulate --trace, fsdpx run --trace) open side by side in ui.perfetto.dev for that.
#pragma once

#include <string>

#include "simulator/op_comparison.h"

namespace fsdpx {

struct ComparePage {
  std::string title;     // "llama-tiny: plan P against run M"
  std::string measured;  // what was measured ("3 steps on 4 ranks")
  const Comparison* comparison = nullptr;
  bool stages = false;   // several pipeline stages: ops carry their stage
};

// Figure id: fig-compare-phases; table ids: table-compare-phases, table-compare-ops.
std::string compare_html(const ComparePage& page);

}  // namespace fsdpx
