// core/gpu_spec.cpp — strict reader for configs/gpus/<name>.json. The file is in datasheet units
// (TFLOP/s, GiB, TB/s, GB/s, GFLOP, MB; 1 TB = 1e12 B, 1 GB = 1e9 B, 1 GiB = 2^30 B); GpuSpec holds
// SI units (flop/s, bytes, bytes/s, FLOPs). Every figure may carry a "sources" entry; the loader only
// checks that sources name known figures (tests check that every shipped GPU cites all of them).
#include "core/gpu_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json_reader.h"

namespace fsdpx {

namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kMega = 1e6;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Figures that a "sources" object may cite, one per top-level key of the file.
constexpr std::string_view kGpuFigures[] = {"peak_tflops",       "vector_tflops",    "hbm_gib",
                                            "hbm_bw_tb_per_s",   "nvlink_gb_per_s",  "sm_count",
                                            "matmul_efficiency", "memory_efficiency",
                                            "attention_efficiency", "attention_backward_efficiency",
                                            "matmul_half_efficiency_dim", "fp8_matmul_max_efficiency",
                                            "matmul_sustained_efficiency", "fp8_matmul_sustained_efficiency",
                                            "cudnn_attention_efficiency", "cudnn_attention_backward_efficiency",
                                            "kernel_efficiency", "rated_power_w", "power_limit_w"};

constexpr DType kRequiredPeaks[] = {DType::bf16, DType::fp16, DType::tf32, DType::fp32};

std::map<DType, double> parse_peaks(JsonObject o) {
  std::map<DType, double> peaks;
  for (DType t : kRequiredPeaks) peaks[t] = o.number_in(dtype_name(t), input_range::kPeakTflops) * kTera;
  // FP8 tensor cores start with Hopper/CDNA3; A100 has none.
  if (auto fp8 = o.optional_number_in("fp8", input_range::kPeakTflops)) peaks[DType::fp8] = *fp8 * kTera;
  o.finish();
  return peaks;
}

// [[size, efficiency], ...] with sizes strictly increasing and efficiencies in their range (a floor of
// 1e-4, not 0: a denormal efficiency makes every kernel take forever); size_scale converts the file's
// unit (GFLOP, MB) to FLOPs or bytes.
EfficiencyCurve parse_curve(JsonObject& o, std::string_view key, double size_scale) {
  EfficiencyCurve c;
  for (const auto& [v, path] : o.array(key)) {
    const nlohmann::json& p = *v;
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
      throw_config_error(o.file(), path, fmt::format("expected [size, efficiency], got {}", json_excerpt(p)));
    const double size = p[0].get<double>(), eff = p[1].get<double>();
    check_in_range(size, input_range::kCurveSize, o.file(), path + "/0");
    check_in_range(eff, input_range::kEfficiency, o.file(), path + "/1");
    if (!c.points.empty() && !(size * size_scale > c.points.back().first))
      throw_config_error(o.file(), path + "/0", "sizes must be strictly increasing");
    c.points.emplace_back(size * size_scale, eff);
  }
  if (c.points.empty()) o.fail(key, "expected at least one [size, efficiency] point");
  return c;
}

std::map<std::string, std::string> parse_sources(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file, "/sources");
  std::map<std::string, std::string> sources;
  for (const auto& [key, _] : j.items()) {
    if (std::find(std::begin(kGpuFigures), std::end(kGpuFigures), key) == std::end(kGpuFigures))
      o.fail(key,
             fmt::format("sources may only cite figures of this file ({})", fmt::join(kGpuFigures, ", ")));
    sources[key] = o.string(key);
  }
  o.finish();
  return sources;
}

nlohmann::json curve_to_json(const EfficiencyCurve& c, double size_scale) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [size, eff] : c.points) a.push_back({size / size_scale, eff});
  return a;
}

}  // namespace

double EfficiencyCurve::at(double size) const {
  FSDP_CHECK(!points.empty(), "efficiency curve without points");
  if (size <= points.front().first) return points.front().second;
  if (size >= points.back().first) return points.back().second;
  // First point strictly above `size`; its predecessor is at or below it.
  auto hi = std::upper_bound(points.begin(), points.end(), size,
                             [](double s, const std::pair<double, double>& p) { return s < p.first; });
  auto lo = hi - 1;
  const double t = std::log(size / lo->first) / std::log(hi->first / lo->first);
  return lo->second + t * (hi->second - lo->second);
}

// Dense tensor work holds a GPU at its rated board power (an H100 SXM's best GEMMs reach 80% of the
// boost-clock peak at 700 W, cost-model-facts.md §2, Maximum Achievable Matmul FLOPS); below it the
// firmware lowers the SM clock until the power fits (`nvidia-smi -pl`). CMOS dynamic power is
// ~ C·V²·f with the supply voltage scaled with the clock under DVFS (Hennessy & Patterson, Computer
// Architecture: A Quantitative Approach, 6th ed., §1.5), so power ~ f³ and f = (limit/rated)^(1/3):
// 0.894 for an H100 at 500 W. Static and HBM power, which do not shrink with the clock, are left out,
// so the estimate is on the optimistic side. Memory bandwidth is untouched (HBM has its own clock).
double GpuSpec::clock_factor() const {
  if (rated_power_w <= 0 || power_limit_w <= 0 || power_limit_w >= rated_power_w) return 1.0;
  return std::cbrt(power_limit_w / rated_power_w);
}

double GpuSpec::peak(DType t) const {
  auto it = peak_flops_per_s.find(t);
  FSDP_CHECK(it != peak_flops_per_s.end(), fmt::format("{} has no {} peak", name, dtype_name(t)));
  return it->second;
}

namespace {

// The sustained GEMM rates: each at most the burst maximum it scales (MSMF <= MAMF by definition), the
// fp8 one only with an fp8 peak.
void parse_sustained(JsonObject& o, GpuSpec& g) {
  const double burst = g.matmul_efficiency.points.back().second;
  g.matmul_sustained_efficiency =
      o.optional_number_in("matmul_sustained_efficiency", input_range::kEfficiency).value_or(0);
  if (g.matmul_sustained_efficiency > burst)
    o.fail("matmul_sustained_efficiency",
           fmt::format("a sustained rate above the burst maximum (matmul_efficiency's top, {})", burst));
  g.fp8_matmul_sustained_efficiency =
      o.optional_number_in("fp8_matmul_sustained_efficiency", input_range::kEfficiency).value_or(0);
  if (g.fp8_matmul_sustained_efficiency > 0 && !g.peak_flops_per_s.count(DType::fp8))
    o.fail("fp8_matmul_sustained_efficiency", "an fp8 matmul efficiency needs an fp8 peak in peak_tflops");
  const double fp8_burst = g.fp8_matmul_max_efficiency > 0 ? g.fp8_matmul_max_efficiency : burst;
  if (g.fp8_matmul_sustained_efficiency > fp8_burst)
    o.fail("fp8_matmul_sustained_efficiency", fmt::format("a sustained rate above the burst maximum ({})", fp8_burst));
}

// "kernel_efficiency": {"matmul": {name: curve}, "memory": {...}, "attention": {...}}, each curve in its
// class's file units (GFLOP, MB, tokens).
struct KernelCurveClass {
  std::string_view key;
  std::map<std::string, EfficiencyCurve> GpuSpec::*curves;
  double size_scale;
};
constexpr KernelCurveClass kKernelCurveClasses[] = {{"matmul", &GpuSpec::matmul_by_kernel, kGiga},
                                                    {"memory", &GpuSpec::memory_by_kernel, kMega},
                                                    {"attention", &GpuSpec::attention_by_kernel, 1.0}};

void parse_kernel_efficiency(JsonObject& o, GpuSpec& g) {
  if (!o.has("kernel_efficiency")) return;
  JsonObject classes = o.object("kernel_efficiency");
  for (const KernelCurveClass& c : kKernelCurveClasses) {
    if (!classes.has(c.key)) continue;
    JsonObject named = classes.object(c.key);
    for (const auto& [name, v] : classes.raw(c.key).items()) (g.*c.curves)[name] = parse_curve(named, name, c.size_scale);
    named.finish();
  }
  classes.finish();
}

nlohmann::json kernel_efficiency_json(const GpuSpec& g) {
  nlohmann::json j = nlohmann::json::object();
  for (const KernelCurveClass& c : kKernelCurveClasses)
    for (const auto& [name, curve] : g.*c.curves) j[std::string(c.key)][name] = curve_to_json(curve, c.size_scale);
  return j;
}

}  // namespace

GpuSpec parse_gpu_spec(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file);
  GpuSpec g;
  g.name = o.string("name");
  g.peak_flops_per_s = parse_peaks(o.object("peak_tflops"));
  g.vector_flops_per_s = o.number_in("vector_tflops", input_range::kPeakTflops) * kTera;
  g.hbm_bytes = o.number_in("hbm_gib", input_range::kHbmGib) * kGiB;
  g.hbm_bw_bytes_per_s = o.number_in("hbm_bw_tb_per_s", input_range::kHbmBwTbPerS) * kTera;
  g.nvlink_bw_bytes_per_s = o.number_in("nvlink_gb_per_s", input_range::kLinkGbPerS) * kGiga;
  g.sm_count = static_cast<int>(o.integer_in("sm_count", input_range::kSmCount));
  g.matmul_efficiency = parse_curve(o, "matmul_efficiency", kGiga);
  g.memory_efficiency = parse_curve(o, "memory_efficiency", kMega);
  g.attention_efficiency = parse_curve(o, "attention_efficiency", 1.0);  // tokens
  g.attention_backward_efficiency = parse_curve(o, "attention_backward_efficiency", 1.0);
  g.matmul_half_efficiency_dim = o.number_in("matmul_half_efficiency_dim", input_range::kHalfEfficiencyDim);
  g.fp8_matmul_max_efficiency =
      o.optional_number_in("fp8_matmul_max_efficiency", input_range::kEfficiency).value_or(0);
  if (g.fp8_matmul_max_efficiency > 0 && !g.peak_flops_per_s.count(DType::fp8))
    o.fail("fp8_matmul_max_efficiency", "an fp8 matmul efficiency needs an fp8 peak in peak_tflops");
  parse_sustained(o, g);
  if (o.has("cudnn_attention_efficiency") || o.has("cudnn_attention_backward_efficiency")) {
    g.cudnn_attention_efficiency = parse_curve(o, "cudnn_attention_efficiency", 1.0);
    g.cudnn_attention_backward_efficiency = parse_curve(o, "cudnn_attention_backward_efficiency", 1.0);
  }
  parse_kernel_efficiency(o, g);
  g.rated_power_w = o.optional_number_in("rated_power_w", input_range::kPowerW).value_or(0);
  g.power_limit_w = o.optional_number_in("power_limit_w", input_range::kPowerW).value_or(0);
  if (g.power_limit_w > 0 && g.rated_power_w <= 0)
    o.fail("power_limit_w", "a power limit needs the GPU's rated_power_w");
  if (o.has("sources")) g.sources = parse_sources(o.raw("sources"), file);
  o.finish();
  return g;
}

void parse_gpu_calibration_overrides(JsonObject& o, GpuSpec& g) {
  const std::string note = fmt::format("overridden by {}", o.file());
  if (auto v = o.optional_number_in("power_limit_w", input_range::kPowerW)) {
    if (g.rated_power_w <= 0) o.fail("power_limit_w", fmt::format("GPU {} has no rated_power_w to limit", g.name));
    g.power_limit_w = *v;
    g.sources["power_limit_w"] = note;
  }
  if (auto v = o.optional_number_in("fp8_matmul_max_efficiency", input_range::kEfficiency)) {
    if (!g.peak_flops_per_s.count(DType::fp8))
      o.fail("fp8_matmul_max_efficiency", fmt::format("GPU {} has no fp8 peak", g.name));
    g.fp8_matmul_max_efficiency = *v;
    g.sources["fp8_matmul_max_efficiency"] = note;
  }
  if (auto v = o.optional_number_in("vector_tflops", input_range::kPeakTflops)) {
    g.vector_flops_per_s = *v * kTera;
    g.sources["vector_tflops"] = note;
  }
  const struct {
    std::string_view key;
    EfficiencyCurve GpuSpec::*curve;
    double size_scale;
  } curves[] = {{"matmul_efficiency", &GpuSpec::matmul_efficiency, kGiga},
                {"memory_efficiency", &GpuSpec::memory_efficiency, kMega},
                {"attention_efficiency", &GpuSpec::attention_efficiency, 1.0},
                {"attention_backward_efficiency", &GpuSpec::attention_backward_efficiency, 1.0}};
  for (const auto& c : curves)
    if (o.has(c.key)) {
      g.*c.curve = parse_curve(o, c.key, c.size_scale);
      g.sources[std::string(c.key)] = note;
    }
  if (o.has("kernel_efficiency")) {
    parse_kernel_efficiency(o, g);
    g.sources["kernel_efficiency"] = note;
  }
  // A measured GEMM curve is the rate of the GPU as it ran: no sustained scaling on top of it.
  if (o.has("matmul_efficiency")) g.matmul_sustained_efficiency = 0, g.fp8_matmul_sustained_efficiency = 0;
}

nlohmann::json gpu_spec_to_json(const GpuSpec& g) {
  nlohmann::json peaks = nlohmann::json::object();
  for (const auto& [t, flops] : g.peak_flops_per_s) peaks[std::string(dtype_name(t))] = flops / kTera;
  nlohmann::json j{{"name", g.name},
                   {"peak_tflops", peaks},
                   {"vector_tflops", g.vector_flops_per_s / kTera},
                   {"hbm_gib", g.hbm_bytes / kGiB},
                   {"hbm_bw_tb_per_s", g.hbm_bw_bytes_per_s / kTera},
                   {"nvlink_gb_per_s", g.nvlink_bw_bytes_per_s / kGiga},
                   {"sm_count", g.sm_count},
                   {"matmul_efficiency", curve_to_json(g.matmul_efficiency, kGiga)},
                   {"memory_efficiency", curve_to_json(g.memory_efficiency, kMega)},
                   {"attention_efficiency", curve_to_json(g.attention_efficiency, 1.0)},
                   {"attention_backward_efficiency", curve_to_json(g.attention_backward_efficiency, 1.0)},
                   {"matmul_half_efficiency_dim", g.matmul_half_efficiency_dim}};
  if (g.fp8_matmul_max_efficiency > 0) j["fp8_matmul_max_efficiency"] = g.fp8_matmul_max_efficiency;
  if (g.matmul_sustained_efficiency > 0) j["matmul_sustained_efficiency"] = g.matmul_sustained_efficiency;
  if (g.fp8_matmul_sustained_efficiency > 0)
    j["fp8_matmul_sustained_efficiency"] = g.fp8_matmul_sustained_efficiency;
  if (!g.cudnn_attention_efficiency.points.empty()) {
    j["cudnn_attention_efficiency"] = curve_to_json(g.cudnn_attention_efficiency, 1.0);
    j["cudnn_attention_backward_efficiency"] = curve_to_json(g.cudnn_attention_backward_efficiency, 1.0);
  }
  if (const nlohmann::json k = kernel_efficiency_json(g); !k.empty()) j["kernel_efficiency"] = k;
  if (g.rated_power_w > 0) j["rated_power_w"] = g.rated_power_w;
  if (g.power_limit_w > 0) j["power_limit_w"] = g.power_limit_w;
  if (!g.sources.empty()) j["sources"] = g.sources;
  return j;
}

}  // namespace fsdpx
