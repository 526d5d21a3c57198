// core/cluster_spec.cpp — strict reader for configs/clusters/<name>.json: the GPU (a name resolved by
// the caller, optionally with HBM/peak overrides), GPUs per node, node count, and the intra- and
// inter-node fabrics in datasheet units (GB/s = 1e9 B/s, µs). A cluster without "inter_node" is
// single-node only. Leaves out rail topology and per-link NVLink modelling.
#include "core/cluster_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json_reader.h"

namespace fsdpx {

namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kMicro = 1e-6;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Figures a cluster's "sources" object may cite.
constexpr std::string_view kClusterFigures[] = {"gpu",
                                                "gpus_per_node",
                                                "nodes",
                                                "gpus",
                                                "host_threads",
                                                "intra_node.bus_bw_gb_per_s",
                                                "intra_node.latency_us",
                                                "intra_node.nvls",
                                                "intra_node.nccl_channels",
                                                "inter_node.nics_per_node",
                                                "inter_node.nic_gb_per_s",
                                                "inter_node.latency_us"};

GpuSpec resolve_or_explain(const std::string& gpu_name, JsonObject& o, GpuResolver resolve_gpu) {
  try {
    return resolve_gpu(gpu_name);
  } catch (const ConfigError& e) {
    o.fail("gpu", fmt::format("cannot load GPU \"{}\": {}", gpu_name, e.what()));
  }
}

// "gpu": "h100-sxm-80gb" or {"name": ..., "hbm_gib": ..., "hbm_bw_tb_per_s": ..., "peak_tflops": {...},
// and the calibration overrides of gpu_spec.h: "vector_tflops", "matmul_efficiency"...}.
GpuSpec parse_gpu_ref(JsonObject& o, GpuResolver resolve_gpu) {
  if (o.raw("gpu").is_string()) return resolve_or_explain(o.string("gpu"), o, resolve_gpu);
  JsonObject g = o.object("gpu");
  GpuSpec spec = resolve_or_explain(g.string("name"), o, resolve_gpu);
  const std::string note = fmt::format("overridden by {}", o.file());
  if (auto v = g.optional_number_in("hbm_gib", input_range::kHbmGib)) {
    spec.hbm_bytes = *v * kGiB;
    spec.sources["hbm_gib"] = note;
  }
  if (auto v = g.optional_number_in("hbm_bw_tb_per_s", input_range::kHbmBwTbPerS)) {
    spec.hbm_bw_bytes_per_s = *v * kTera;
    spec.sources["hbm_bw_tb_per_s"] = note;
  }
  if (auto peaks = g.optional_object("peak_tflops")) {
    for (DType t : {DType::fp32, DType::tf32, DType::bf16, DType::fp16, DType::fp8})
      if (auto v = peaks->optional_number_in(dtype_name(t), input_range::kPeakTflops))
        spec.peak_flops_per_s[t] = *v * kTera;
    peaks->finish();
    spec.sources["peak_tflops"] = note;
  }
  parse_gpu_calibration_overrides(g, spec);  // curves measured by `fsdpx calibrate`
  g.finish();
  return spec;
}

IntraNodeFabric parse_intra(JsonObject o) {
  IntraNodeFabric f;
  f.bus_bw_bytes_per_s = o.number_in("bus_bw_gb_per_s", input_range::kLinkGbPerS) * kGiga;
  f.latency_s = o.number_in("latency_us", input_range::kLatencyUs) * kMicro;
  f.nvls = o.boolean("nvls");
  // NCCL's MAXCHANNELS is 64 (src/include/device.h).
  if (auto ch = o.optional_positive_integer("nccl_channels")) {
    if (*ch > 64) o.fail("nccl_channels", fmt::format("expected at most 64 (NCCL's MAXCHANNELS), got {}", *ch));
    f.nccl_channels = static_cast<int>(*ch);
  }
  o.finish();
  return f;
}

InterNodeFabric parse_inter(JsonObject o) {
  InterNodeFabric f;
  f.nics_per_node = static_cast<int>(o.integer_in("nics_per_node", input_range::kNicsPerNode));
  f.nic_bw_bytes_per_s = o.number_in("nic_gb_per_s", input_range::kLinkGbPerS) * kGiga;
  f.latency_s = o.number_in("latency_us", input_range::kLatencyUs) * kMicro;
  o.finish();
  return f;
}

void check_sources(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file, "/sources");
  for (const auto& [key, _] : j.items()) {
    if (std::find(std::begin(kClusterFigures), std::end(kClusterFigures), key) == std::end(kClusterFigures))
      o.fail(key, fmt::format("sources may only cite figures of this file ({})",
                              fmt::join(kClusterFigures, ", ")));
    o.string(key);
  }
  o.finish();
}

// "gpus": a job on part of its last node. Without "nodes" it sets the node count; with it, it must lie
// in the last of those nodes (more than (nodes - 1) x gpus_per_node, at most nodes x gpus_per_node).
void parse_gpus(JsonObject& o, ClusterSpec& c) {
  const auto gpus = o.optional_positive_integer("gpus");
  if (!gpus) return;
  constexpr std::int64_t kMaxGpus = 1 << 24;
  if (*gpus > kMaxGpus) o.fail("gpus", fmt::format("expected at most {}, got {}", kMaxGpus, *gpus));
  const std::int64_t needed = (*gpus + c.gpus_per_node - 1) / c.gpus_per_node;
  if (!o.has("nodes")) c.nodes = static_cast<int>(needed);
  if (needed != c.nodes)
    o.fail("gpus", fmt::format("{} GPUs need {} nodes of {} GPUs, but nodes is {}", *gpus, needed, c.gpus_per_node,
                               c.nodes));
  c.gpus = *gpus == std::int64_t(c.nodes) * c.gpus_per_node ? 0 : static_cast<int>(*gpus);
}

}  // namespace

ClusterSpec parse_cluster_spec(const nlohmann::json& j, const std::string& file, GpuResolver resolve_gpu) {
  FSDP_CHECK(resolve_gpu != nullptr, "parse_cluster_spec needs a GPU resolver");
  JsonObject o(j, file);
  ClusterSpec c;
  c.name = o.string("name");
  c.gpu = parse_gpu_ref(o, resolve_gpu);
  c.gpus_per_node = static_cast<int>(o.integer_in("gpus_per_node", input_range::kGpusPerNode));
  c.nodes = static_cast<int>(o.optional_integer_in("nodes", input_range::kNodes).value_or(1));
  parse_gpus(o, c);
  c.host_threads = o.optional_boolean("host_threads").value_or(false);
  c.intra = parse_intra(o.object("intra_node"));
  if (auto inter = o.optional_object("inter_node"))
    c.inter = parse_inter(*inter);
  else if (c.nodes > 1)
    o.fail("nodes",
           fmt::format("{} nodes need an \"inter_node\" fabric; this cluster is single-node only", c.nodes));
  if (o.has("sources")) check_sources(o.raw("sources"), file);
  o.finish();
  return c;
}

nlohmann::json cluster_spec_to_json(const ClusterSpec& c) {
  // The GPU is written as a name plus overrides of the figures a cluster may change, so that a
  // round trip through parse_cluster_spec reproduces them even if the GPU file differs.
  nlohmann::json peaks = nlohmann::json::object();
  for (const auto& [t, flops] : c.gpu.peak_flops_per_s) peaks[std::string(dtype_name(t))] = flops / kTera;
  nlohmann::json j{{"name", c.name},
                   {"gpu",
                    {{"name", c.gpu.name},
                     {"hbm_gib", c.gpu.hbm_bytes / kGiB},
                     {"hbm_bw_tb_per_s", c.gpu.hbm_bw_bytes_per_s / kTera},
                     {"peak_tflops", peaks}}},
                   {"gpus_per_node", c.gpus_per_node},
                   {"nodes", c.nodes},
                   {"host_threads", c.host_threads},
                   {"intra_node",
                    {{"bus_bw_gb_per_s", c.intra.bus_bw_bytes_per_s / kGiga},
                     {"latency_us", c.intra.latency_s / kMicro},
                     {"nvls", c.intra.nvls},
                     {"nccl_channels", c.intra.nccl_channels}}}};
  if (c.gpus > 0) j["gpus"] = c.gpus;
  if (c.inter.nics_per_node > 0)
    j["inter_node"] = {{"nics_per_node", c.inter.nics_per_node},
                       {"nic_gb_per_s", c.inter.nic_bw_bytes_per_s / kGiga},
                       {"latency_us", c.inter.latency_s / kMicro}};
  return j;
}

}  // namespace fsdpx
