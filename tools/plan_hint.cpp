// tools/plan_hint.cpp — plans the request for the newest torchtitan release and compares (plan_hint.h).
#include "tools/plan_hint.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "planner/target.h"
#include "tools/format.h"

namespace fsdpx {

std::optional<TargetHint> target_hint(const PlanRequest& r, const PlanResult& res) {
  if (r.target.kind != TargetKind::fsdpx || r.framework || r.fp16 || r.lora || r.cluster.host_threads) return {};
  PlanRequest other = r;
  other.target = default_torchtitan_target();
  const double ours = res.best ? res.best->metrics.tokens_per_s_per_gpu : 0;
  // Only a plan at least kHintSpeedup x ours is named, and the tolerance chooses within its share of the
  // fastest: shapes whose bound stays below that floor need no refining (search_plan_above).
  const double floor_tps = kHintSpeedup * ours * (1 - other.throughput_tolerance);
  std::optional<Candidate> theirs;
  try {
    theirs = search_plan_above(other, floor_tps);
  } catch (const ConfigError&) {
    return {};  // the request does not map to torchtitan (a fixed degree it does not run, ...)
  }
  if (!theirs) return {};
  const CandidateMetrics& m = theirs->metrics;
  if (ours > 0 && m.tokens_per_s_per_gpu < kHintSpeedup * ours) return {};
  TargetHint h;
  h.target = target_name(other.target);
  h.tokens_per_s_per_gpu = m.tokens_per_s_per_gpu;
  h.mfu = m.mfu;
  h.speedup = ours > 0 ? m.tokens_per_s_per_gpu / ours : 0;
  h.layout = theirs->label;
  h.why = target_gaps(theirs->plan, r.target);
  return h;
}

std::string target_hint_text(const TargetHint& h) {
  const std::string faster = h.speedup > 0 ? fmt::format("{:.1f}x the fsdpx plan's throughput", h.speedup)
                                           : std::string("where no fsdpx plan fits");
  std::string out = fmt::format("hint: --target {} reaches {:.0f} tokens/s per GPU ({:.1f}% MFU), {}, with {}", h.target,
                                h.tokens_per_s_per_gpu, 100 * h.mfu, faster, h.layout);
  if (!h.why.empty()) {
    out += "; fsdpx's executor cannot run it:";
    for (const std::string& w : h.why) out += " " + w + ";";
    out.pop_back();
  }
  return wrap_text(out + "\n");
}

nlohmann::json target_hint_json(const TargetHint& h) {
  return {{"target", h.target},     {"tokens_per_s_per_gpu", h.tokens_per_s_per_gpu},
          {"mfu", h.mfu},           {"speedup", h.speedup},
          {"layout", h.layout},     {"fsdpx_cannot_run", h.why}};
}

}  // namespace fsdpx
