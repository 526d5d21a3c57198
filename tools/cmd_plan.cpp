// tools/cmd_plan.cpp — `fsdpx plan --model M --cluster C (--nodes N | --world-size N) --seq S
// --global-batch B [--target fsdpx|torchtitan@V] [--memory-limit GiB] [--memory-margin GiB|P%]
// [--throughput-tolerance P] [--allow-bf16-reduce] [--fp16] [--objective throughput|memory] [--top K] [--pareto]
// [--tp T] [--cp C] [--pp P] [--pp-schedule S] [--vpp V] [--dp-shard D] [--dp-replicate R]
// [--sharding fsdp_full_shard|hsdp] [--recompute none|selective|selective_op|full]
// [-o plan.json] [--format text|json]`: searches plans (planner/planner.h), prints the chosen one with its
// memory at the peak and the top-K alternatives, and writes the plan JSON (loadable by `fsdpx simulate
// --plan`). Every count and size is range-checked (one line, exit 2). When nothing fits it exits 2 with
// the least memory any plan needs and what would make it fit. For fsdpx's own target it hints at a
// torchtitan plan far faster than fsdpx's executor can run (plan_hint.h).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "planner/ep_degrees.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "core/output_file.h"
#include "planner/batch_split.h"
#include "planner/planner.h"
#include "planner/shapes.h"
#include "planner/space.h"
#include "tools/cli_names.h"
#include "tools/cluster_size.h"
#include "tools/cmd_plan.h"
#include "tools/plan_file.h"
#include "tools/lora_options.h"
#include "tools/plan_hint.h"
#include "tools/plan_report.h"

namespace fsdpx {

namespace {

// A bar on stderr, only on a terminal and only once the search has run for a second (display only:
// the search never reads the clock).
class ProgressBar {
 public:
  ProgressBar() : tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (shown_) std::fprintf(stderr, "\r%60s\r", "");
  }
  void operator()(double fraction) {
    if (!tty_) return;
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed_s < 1.0) return;
    shown_ = true;
    const int filled = int(fraction * 40);
    std::fprintf(stderr, "\rplanning [%s%s] %3.0f%%", std::string(std::size_t(filled), '#').c_str(),
                 std::string(std::size_t(40 - filled), '.').c_str(), fraction * 100);
    std::fflush(stderr);
  }

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMaxMemoryGiB = 1024 * 1024;  // 1 PiB per GPU: a typo guard, not a hardware limit
constexpr int kMaxTop = 1000;

[[noreturn]] void bad(const char* option, const std::string& what) {
  throw ConfigError(fmt::format("command line: {}: {}", option, what));
}

// "--memory-margin 8" (GiB) or "10%" (of the capacity).
double margin_bytes(const std::string& text, double capacity_bytes) {
  const bool pct = !text.empty() && text.back() == '%';
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(text.substr(0, text.size() - (pct ? 1 : 0)), &used);
  } catch (const std::exception&) {
    bad("--memory-margin", fmt::format("expected GiB or a percentage such as 10%, got \"{}\"", text));
  }
  if (used + (pct ? 1 : 0) != text.size() || !std::isfinite(v) || v < 0)
    bad("--memory-margin", fmt::format("expected GiB >= 0 or a percentage such as 10%, got \"{}\"", text));
  const double bytes = pct ? v / 100 * capacity_bytes : v * kGiB;
  if (bytes >= capacity_bytes)
    bad("--memory-margin", fmt::format("{} leaves nothing of the {:.2f} GiB capacity", text, capacity_bytes / kGiB));
  return bytes;
}

// The fixed degrees must fit the world size and the target, and leave at least one shape to search.
void check_fixed(const PlanRequest& r, const PlanOptions& o) {
  const FixedDegrees& f = r.space.fixed;
  const int world = r.cluster.world_size();
  for (auto [degree, name] : {std::pair{f.pp, "--pp"}, {f.tp, "--tp"}, {f.cp, "--cp"}, {f.dp_shard, "--dp-shard"},
                              {f.dp_replicate, "--dp-replicate"}})
    if (degree > 0 && world % degree != 0) bad(name, fmt::format("{} does not divide the {} ranks", degree, world));
  if (f.pp_schedule && f.pp == 1) bad("--pp-schedule", "pipeline schedules need --pp > 1");
  const char* schedule = pipeline_schedule_name(o.pp_schedule);
  if (f.vpp > 1 && f.pp_schedule && *f.pp_schedule != PipelineSchedule::interleaved_1f1b)
    bad("--vpp", fmt::format("{} chunks per rank need --pp-schedule interleaved_1f1b, not {}", f.vpp, schedule));
  if (f.vpp == 1 && f.pp_schedule == PipelineSchedule::interleaved_1f1b)
    bad("--vpp", "interleaved_1f1b needs more than one chunk per rank");
  const Space s = effective_space(resolve_memory(r));
  if (f.tp > 1 && !s.knobs.allow_tp)
    bad("--tp", fmt::format("target {} runs tp = 1 on this cluster", o.target));
  if (f.cp > 1 && !s.knobs.allow_cp) bad("--cp", fmt::format("target {} runs cp = 1 on this cluster", o.target));
  if (f.pp > 1 && !s.knobs.allow_pp)
    bad("--pp", fmt::format("target {} runs pp = 1 (--target torchtitan@0.2.2 runs pipelines)", o.target));
  if (f.pp_schedule && f.pp != 1 &&
      std::find(s.knobs.pp_schedules.begin(), s.knobs.pp_schedules.end(), *f.pp_schedule) == s.knobs.pp_schedules.end() &&
      *f.pp_schedule != PipelineSchedule::gpipe)
    bad("--pp-schedule", fmt::format("target {} does not run {} (torchtitan's zero-bubble schedules are multi-stage)",
                                     o.target, schedule));
  if (o.recompute && s.knobs.uniform_recompute.empty())
    bad("--recompute", fmt::format("target {} does not run {} recompute on this cluster", o.target,
                                   recompute_mode_name(*o.recompute)));
  PlanRequest narrowed = r;
  narrowed.space = s.knobs;
  // fsdpx's runtimes run ZB-H1's split backward with tp = cp = 1 only (core/backend_capabilities.cpp, planner/shapes.cpp): name the
  // schedule rather than the factorisation.
  const bool model_parallel = f.tp > 1 || f.cp > 1;
  if (f.pp_schedule == PipelineSchedule::zero_bubble && model_parallel && r.target.kind == TargetKind::fsdpx &&
      parallel_shapes(narrowed).empty())
    bad("--pp-schedule", fmt::format("target {} runs zero_bubble (ZB-H1) with tp = cp = 1 only; with --tp {} --cp {} "
                                     "choose 1f1b or interleaved_1f1b", o.target, std::max(f.tp, 1), std::max(f.cp, 1)));
  // An MoE or latent-attention model: the row runs its blocks on fewer axes (planner/shapes.cpp drops the
  // shapes its capability gaps refuse), so name the fixed degree rather than the factorisation.
  PlanRequest unfixed = narrowed;
  unfixed.space.fixed = FixedDegrees{};
  if (r.target.kind == TargetKind::fsdpx && (r.model.is_moe() || r.model.is_mla()) && parallel_shapes(narrowed).empty() &&
      !parallel_shapes(unfixed).empty())
    for (auto [degree, name] : {std::pair{f.tp, "--tp"}, {f.cp, "--cp"}, {f.pp, "--pp"}, {f.dp_replicate, "--dp-replicate"}})
      if (degree > 1)
        bad(name, fmt::format("target {} does not run model {}'s mixture-of-experts or latent-attention blocks with {} "
                              "{} on this cluster (its backend's capability row, core/backend_capabilities.cpp)",
                              o.target, r.model.name, name, degree));
  if (parallel_shapes(narrowed).empty())
    bad("--pp", fmt::format("the fixed degrees leave no factorisation of the {} ranks (tp within a node and dividing "
                            "the heads, cp with seq divisible by 2 x cp, at most one stage per block)", world));
}

// --sharding: full shard searches dp_replicate 1 only; HSDP replicates across the nodes unless
// --dp-replicate says how many replicas.
void apply_sharding(PlanRequest& r, DataParallel sharding) {
  FixedDegrees& f = r.space.fixed;
  if (sharding == DataParallel::fsdp_full_shard) {
    if (f.dp_replicate > 1) bad("--sharding", "fsdp_full_shard has one replica; --dp-replicate > 1 is hsdp");
    r.space.allow_hsdp = false;
    f.dp_replicate = 1;
    return;
  }
  if (f.dp_replicate == 1) bad("--sharding", "hsdp needs more than one replica, not --dp-replicate 1");
  if (f.dp_replicate > 1) return;
  if (r.cluster.nodes < 2) bad("--sharding", "hsdp replicates across nodes: on one node give --dp-replicate N > 1");
  f.dp_replicate = r.cluster.nodes;
}

PlanRequest request_of(const PlanOptions& o) {
  PlanRequest r;
  r.model = load_model(o.model);
  r.cluster = sized_cluster(load_cluster(o.cluster), o.nodes, o.world_size);
  r.seq = o.seq;
  r.global_batch = o.global_batch;
  if (r.seq > r.model.max_seq)
    throw ConfigError(fmt::format("{}: max_seq: the model's context length {} is shorter than --seq {}",
                                  resolve_config("models", o.model), r.model.max_seq, r.seq));
  if (r.global_batch < 1 || r.global_batch > kMaxGlobalBatch)
    bad("--global-batch", fmt::format("expected an integer from 1 to {}, got {}", kMaxGlobalBatch, r.global_batch));
  if (o.memory_limit_gib && (!(*o.memory_limit_gib > 0) || *o.memory_limit_gib > kMaxMemoryGiB))
    bad("--memory-limit", fmt::format("expected GiB in (0, {}], got {}", kMaxMemoryGiB, *o.memory_limit_gib));
  if (o.memory_limit_gib) r.memory_limit_bytes = *o.memory_limit_gib * kGiB;
  if (!o.margin.empty()) r.memory_margin_bytes = margin_bytes(o.margin, r.memory_limit_bytes.value_or(r.cluster.gpu.hbm_bytes));
  if (!(o.tolerance_pct >= 0 && o.tolerance_pct <= 50))
    bad("--throughput-tolerance", fmt::format("expected a percentage from 0 to 50, got {}", o.tolerance_pct));
  r.throughput_tolerance = o.tolerance_pct / 100;
  r.allow_bf16_reduce = o.allow_bf16_reduce;
  r.target = parse_target(o.target, "command line: --target");
  refuse_unplanned_request(r, resolve_config("models", o.model), "/");
  if (o.top > kMaxTop) bad("--top", fmt::format("expected at most {}, got {}", kMaxTop, o.top));
  r.objective = o.objective;
  r.top_k = o.top;
  r.framework = o.framework;
  r.compiled = o.compiled;
  const Framework framework = request_framework(r);
  if (r.compiled && !framework_can_compile(framework))
    throw ConfigError(fmt::format("command line: --compiled: framework {} does not run under torch.compile",
                                  framework_name(framework)));
  r.space.fixed = o.fixed;
  if (o.recompute) {
    r.space.uniform_recompute = {*o.recompute};
    r.space.partial_recompute = false;
  }
  if (o.sharding) apply_sharding(r, *o.sharding);
  if (o.pp_schedule != PipelineSchedule::none) {
    r.space.fixed.pp_schedule = o.pp_schedule;
    if (*r.space.fixed.pp_schedule == PipelineSchedule::gpipe) r.space.pp_schedules.push_back(PipelineSchedule::gpipe);
  }
  if (o.fixed.vpp > 1 && !r.space.fixed.pp_schedule) r.space.fixed.pp_schedule = PipelineSchedule::interleaved_1f1b;
  r.lora = lora_settings(o.lora, r.model);
  r.fp16 = o.fp16;
  if (r.fp16) check_fp16_target(r.target, "command line: --fp16");
  if (o.fp8_all_gather && !o.fp8) throw ConfigError("command line: --fp8-all-gather: needs --fp8 SCALING");
  if (o.fp8) {
    r.fp8 = Fp8Settings{*o.fp8, o.fp8_all_gather};
    if (r.fp16) throw ConfigError("command line: --fp8: fp8 recipes run around bf16, not with --fp16");
    check_fp8_target(r.target, r.cluster, *r.fp8, "command line: --fp8");
  }
  check_fixed(r, o);
  return r;
}

}  // namespace

void run_plan(const PlanOptions& o) {
  const PlanRequest r = request_of(o);
  PlanResult res;
  {
    ProgressBar bar;
    res = with_errors_naming(o.model, "plan", [&] { return search_plans(r, [&bar](double f) { bar(f); }); });
  }
  if (!res.best && res.least_memory_needed_bytes <= 0) {
    std::string msg = "command line: --global-batch: " + batch_split_message(r);
    for (const std::string& s : res.suggestions) msg += "; " + s;
    throw ConfigError(msg);
  }
  const std::optional<TargetHint> hint = with_errors_naming(o.model, "plan", [&] { return target_hint(r, res); });
  if (o.format == OutputFormat::json) {
    nlohmann::json j = plan_search_json(res);
    if (hint) j["hint"] = target_hint_json(*hint);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", plan_search_text(res, o.top, o.pareto).c_str());
    if (hint) std::printf("%s", target_hint_text(*hint).c_str());
  }
  if (!res.best) throw NoPlanFits(no_fit_message(res, r, o.model, o.cluster));
  if (!o.out.empty()) {
    write_plan_file(o.out, res.best->plan);
    if (o.format == OutputFormat::text) std::printf("plan written to %s\n", o.out.c_str());
  }
}

}  // namespace fsdpx
