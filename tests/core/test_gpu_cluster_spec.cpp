// tests/core/test_gpu_cluster_spec.cpp — GPU and cluster specs and config resolution: unit conversion,
// efficiency-curve interpolation, shipped figures against published tables (NVIDIA datasheets,
// stas00/ml-engineering, nccl-tests issues; typed in here, not read from the configs), sources for every figure, strict errors with paths,
// round trips, and the name -> file search order.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>
#include <string>

#include "core/config_paths.h"
#include "core/json_reader.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;
const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Points the search at the source tree's configs for the duration of a test.
struct ConfigDirEnv {
  explicit ConfigDirEnv(const std::string& dir) { setenv("FSDPX_CONFIG_DIR", dir.c_str(), 1); }
  ~ConfigDirEnv() { unsetenv("FSDPX_CONFIG_DIR"); }
};

GpuSpec fake_gpu(const std::string& name) {
  if (name != "fake") throw ConfigError("gpus: unknown gpu \"" + name + "\"");
  GpuSpec g;
  g.name = "fake";
  g.peak_flops_per_s[DType::bf16] = 1e15;
  g.hbm_bytes = 10 * kGiB;
  g.hbm_bw_bytes_per_s = 1e12;
  return g;
}

nlohmann::json small_cluster() {
  return nlohmann::json::parse(R"({"name": "c", "gpu": "fake", "gpus_per_node": 4,
    "intra_node": {"bus_bw_gb_per_s": 100, "latency_us": 2, "nvls": false},
    "inter_node": {"nics_per_node": 2, "nic_gb_per_s": 25, "latency_us": 10}})");
}

// Published figures (NVIDIA datasheets; stas00/ml-engineering compute/accelerator/README.md): dense BF16 TFLOPS, HBM bytes, HBM TB/s, NVLink GB/s
// one direction, and ml-engineering's Maximum Achievable Matmul TFLOPS (BF16).
struct Published {
  double bf16_tflops, hbm_bytes, hbm_tb_per_s, nvlink_gb_per_s, achievable_tflops;
};
const std::map<std::string, Published> kPublished{{"a100-sxm-40gb", {312, 40 * kGiB, 1.555, 300, 271.2}},
                                                  {"a100-sxm-80gb", {312, 80 * kGiB, 2.039, 300, 271.2}},
                                                  {"h100-sxm-80gb", {989.4, 80 * kGiB, 3.35, 450, 794.5}},
                                                  {"h200-sxm-141gb", {989, 141e9, 4.8, 450, 794.5}},
                                                  {"b200-180gb", {2250, 180e9, 8.0, 900, 1745}},
                                                  {"gb200", {2500, 186e9, 8.0, 900, 1822}},
                                                  {"mi300x", {1307.4, 192e9, 5.3, 448, 668.4}}};

}  // namespace

TEST_CASE("EfficiencyCurve interpolates linearly in log(size) and clamps") {
  const EfficiencyCurve c{{{1e8, 0.2}, {1e9, 0.6}, {1.6e10, 0.9}}};
  CHECK(c.at(1.0) == doctest::Approx(0.2));  // below the first point
  CHECK(c.at(1e8) == doctest::Approx(0.2));
  CHECK(c.at(1e9) == doctest::Approx(0.6));
  CHECK(c.at(1e13) == doctest::Approx(0.9));  // above the last point
  // Geometric mean of two points is halfway in log(size): the mean of their efficiencies.
  CHECK(c.at(std::sqrt(1e8 * 1e9)) == doctest::Approx(0.4));
  // A quarter of the way in log space from 1e9 to 1.6e10 (a factor 2 of 16).
  CHECK(c.at(2e9) == doctest::Approx(0.6 + 0.25 * 0.3));
  CHECK(EfficiencyCurve{{{5.0, 0.7}}}.at(1e9) == doctest::Approx(0.7));
}

TEST_CASE("every shipped GPU loads, cites every figure and matches the published tables") {
  const char* figures[] = {"peak_tflops",     "vector_tflops", "hbm_gib",           "hbm_bw_tb_per_s",
                           "nvlink_gb_per_s", "sm_count",      "matmul_efficiency", "memory_efficiency"};
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs + "/gpus")) {
    const GpuSpec g = load_gpu(entry.path().string());
    INFO(g.name);
    CHECK(g.name == entry.path().stem().string());
    for (const char* f : figures) {
      INFO("figure " << f);
      CHECK((g.sources.count(f) == 1 && !g.sources.at(f).empty()));
    }
    // Every efficiency is a fraction and grows with size.
    CHECK(g.matmul_efficiency.at(1e6) <= g.matmul_efficiency.at(1e12));
    CHECK(g.memory_efficiency.at(1e3) <= g.memory_efficiency.at(1e9));
    CHECK(g.peak(DType::bf16) >= g.peak(DType::fp32));
    const GpuSpec back = parse_gpu_spec(gpu_spec_to_json(g), "roundtrip");
    CHECK(gpu_spec_to_json(back) == gpu_spec_to_json(g));
    if (auto it = kPublished.find(g.name); it != kPublished.end()) {
      const Published& p = it->second;
      CHECK(g.peak(DType::bf16) == doctest::Approx(p.bf16_tflops * 1e12).epsilon(1e-9));
      CHECK(g.hbm_bytes == doctest::Approx(p.hbm_bytes).epsilon(1e-8));
      CHECK(g.hbm_bw_bytes_per_s == doctest::Approx(p.hbm_tb_per_s * 1e12).epsilon(1e-9));
      CHECK(g.nvlink_bw_bytes_per_s == doctest::Approx(p.nvlink_gb_per_s * 1e9).epsilon(1e-9));
      // Large GEMMs reach ml-engineering's measured maximum (1% allows rounding of the ratios).
      const double achievable = g.peak(DType::bf16) * g.matmul_efficiency.at(1e15);
      INFO("achievable " << achievable / 1e12 << " vs published " << p.achievable_tflops << " TFLOPS");
      CHECK(achievable == doctest::Approx(p.achievable_tflops * 1e12).epsilon(0.01));
    }
    ++loaded;
  }
  CHECK(loaded == 9);
}

TEST_CASE("A100 has no FP8 peak; Hopper does") {
  const GpuSpec a100 = load_gpu(kConfigs + "/gpus/a100-sxm-80gb.json");
  CHECK(a100.peak_flops_per_s.count(DType::fp8) == 0);
  CHECK(load_gpu(kConfigs + "/gpus/h100-sxm-80gb.json").peak(DType::fp8) == doctest::Approx(1979e12));
  CHECK(a100.sm_count == 108);
}

TEST_CASE("fp8_matmul_max_efficiency: optional, a fraction, and only on a GPU with an fp8 peak") {
  // Set where the Maximum Achievable Matmul FLOPS table measured fp8 (docs/validation.md "fp8 GEMM
  // efficiency"), never above the bf16 fraction; 0 (unset) in the other shipped files.
  const std::set<std::string> measured{"h100-sxm-80gb", "h200-sxm-141gb", "b200-180gb", "gb200"};
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs + "/gpus")) {
    const GpuSpec g = load_gpu(entry.path().string());
    CHECK_MESSAGE((g.fp8_matmul_max_efficiency > 0) == (measured.count(g.name) > 0), g.name);
    CHECK(g.fp8_matmul_max_efficiency <= g.matmul_efficiency.points.back().second);
  }
  CHECK(load_gpu(kConfigs + "/gpus/h100-sxm-80gb.json").fp8_matmul_max_efficiency == doctest::Approx(1402.6 / 1979).epsilon(1e-4));
  // H100 SXM's FP8 MAMF, 1402.6 of 1979 TFLOP/s (stas00/ml-engineering compute/accelerator/README.md).
  auto j = load_json_file(kConfigs + "/gpus/h100-sxm-80gb.json");
  j["fp8_matmul_max_efficiency"] = 1402.6 / 1979;
  const GpuSpec h100 = parse_gpu_spec(j, "h100.json");
  CHECK(h100.fp8_matmul_max_efficiency * h100.peak(DType::fp8) == doctest::Approx(1402.6e12));
  CHECK(parse_gpu_spec(gpu_spec_to_json(h100), "roundtrip").fp8_matmul_max_efficiency ==
        doctest::Approx(h100.fp8_matmul_max_efficiency));
  j["fp8_matmul_max_efficiency"] = 1.5;
  CHECK(contains(error_of([&] { parse_gpu_spec(j, "g.json"); }), "g.json: /fp8_matmul_max_efficiency:"));
  auto a = load_json_file(kConfigs + "/gpus/a100-sxm-80gb.json");
  a["fp8_matmul_max_efficiency"] = 0.7;  // A100 has no fp8 tensor cores
  CHECK(contains(error_of([&] { parse_gpu_spec(a, "g.json"); }), "g.json: /fp8_matmul_max_efficiency:"));
}

TEST_CASE("matmul_sustained_efficiency and the cuDNN attention curves: optional, sourced, never above the burst") {
  // Shipped files may carry them (docs/validation.md "GEMMs at the sustained clock"): each below the burst
  // maximum it scales, cited, the two cuDNN curves together.
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs + "/gpus")) {
    const GpuSpec g = load_gpu(entry.path().string());
    INFO(g.name);
    CHECK(g.matmul_sustained_efficiency < g.matmul_efficiency.points.back().second);
    if (g.fp8_matmul_max_efficiency > 0) CHECK(g.fp8_matmul_sustained_efficiency <= g.fp8_matmul_max_efficiency);
    if (g.matmul_sustained_efficiency > 0) CHECK(g.sources.count("matmul_sustained_efficiency") == 1);
    CHECK(g.cudnn_attention_efficiency.points.empty() == g.cudnn_attention_backward_efficiency.points.empty());
  }
  // The H200's MSMF over the peak, bf16 708.5 of 989 and fp8 1288.7 of 1979 TFLOP/s (stas00/ml-engineering
  // fast-mamf @082816f), and cuDNN's causal forward from the FlashAttention-3 paper's Fig. 5 (484 TFLOP/s at 2k).
  auto j = load_json_file(kConfigs + "/gpus/h100-sxm-80gb.json");
  j["matmul_sustained_efficiency"] = 708.5 / 989;
  j["fp8_matmul_sustained_efficiency"] = 1288.7 / 1979;
  j["cudnn_attention_efficiency"] = nlohmann::json::parse("[[512, 0.3184], [2048, 0.4892], [16384, 0.5448]]");
  j["cudnn_attention_backward_efficiency"] = nlohmann::json::parse("[[512, 0.2218], [2048, 0.4102], [16384, 0.5215]]");
  const GpuSpec h100 = parse_gpu_spec(j, "h100.json");
  CHECK(h100.matmul_sustained_efficiency * h100.peak(DType::bf16) == doctest::Approx(708.5e12).epsilon(1e-3));
  CHECK(h100.fp8_matmul_sustained_efficiency * h100.peak(DType::fp8) == doctest::Approx(1288.7e12).epsilon(1e-3));
  CHECK(h100.cudnn_attention_efficiency.at(2048) * 989.4 == doctest::Approx(484).epsilon(1e-3));
  const GpuSpec back = parse_gpu_spec(gpu_spec_to_json(h100), "roundtrip");
  CHECK(back.matmul_sustained_efficiency == doctest::Approx(h100.matmul_sustained_efficiency));
  CHECK(back.fp8_matmul_sustained_efficiency == doctest::Approx(h100.fp8_matmul_sustained_efficiency));
  CHECK(back.cudnn_attention_backward_efficiency.at(4096) == doctest::Approx(h100.cudnn_attention_backward_efficiency.at(4096)));
  j["matmul_sustained_efficiency"] = 0.9;  // above the burst top (0.803): not a sustained rate
  CHECK(contains(error_of([&] { parse_gpu_spec(j, "g.json"); }), "g.json: /matmul_sustained_efficiency:"));
  j["matmul_sustained_efficiency"] = 0.7164;
  j["fp8_matmul_sustained_efficiency"] = 0.75;  // above the fp8 MAMF (0.7087)
  CHECK(contains(error_of([&] { parse_gpu_spec(j, "g.json"); }), "g.json: /fp8_matmul_sustained_efficiency:"));
  j["fp8_matmul_sustained_efficiency"] = 0.6512;
  j.erase("cudnn_attention_backward_efficiency");  // the two cuDNN curves come together
  CHECK(contains(error_of([&] { parse_gpu_spec(j, "g.json"); }), "g.json: /cudnn_attention_backward_efficiency"));
  auto a = load_json_file(kConfigs + "/gpus/a100-sxm-80gb.json");
  a["fp8_matmul_sustained_efficiency"] = 0.6;  // A100 has no fp8 tensor cores
  CHECK(contains(error_of([&] { parse_gpu_spec(a, "g.json"); }), "g.json: /fp8_matmul_sustained_efficiency:"));
}

TEST_CASE("GPU errors name the file and the path inside it") {
  const std::map<std::string, std::string> cases{{"gpu_bad_efficiency.json", "/matmul_efficiency/1/1"},
                                                 {"gpu_bad_source.json", "/sources/hbm_size"}};
  for (const auto& [file, path] : cases) {
    const auto msg = error_of([&] { load_gpu(kData + "/bad/" + file); });
    INFO(msg);
    CHECK(msg.find(kData + "/bad/" + file + ": " + path + ":") == 0);
  }
  auto j = load_json_file(kConfigs + "/gpus/h100-sxm-80gb.json");
  j["memory_efficiency"] = nlohmann::json::parse("[[10, 0.5], [1, 0.9]]");  // sizes must increase
  CHECK(contains(error_of([&] { parse_gpu_spec(j, "g.json"); }), "g.json: /memory_efficiency/1/0:"));
  j = load_json_file(kConfigs + "/gpus/h100-sxm-80gb.json");
  j["peak_tflops"].erase("tf32");
  CHECK(contains(error_of([&] { parse_gpu_spec(j, "g.json"); }), "g.json: /peak_tflops/tf32: missing"));
  j["peak_tflops"]["int8"] = 1979;
  j["peak_tflops"]["tf32"] = 494.7;
  CHECK(contains(error_of([&] { parse_gpu_spec(j, "g.json"); }), "g.json: /peak_tflops/int8: unknown key"));
}

// Issue 15 items 2, 3 and 9: rates of 1e-300, 1e-9, 1e-30 GB/s or a denormal passed the "positive"
// check and ended in non-finite or wrapped durations. Every rate has a documented range.
TEST_CASE("GPU and cluster rates and sizes are range-checked at load, denormals included") {
  const std::map<std::string, nlohmann::json> gpu_edits{{"/hbm_bw_tb_per_s", 5e-324}, {"/vector_tflops", 1e-300},
                                                        {"/peak_tflops/bf16", 1e9},  {"/sm_count", 0},
                                                        {"/matmul_efficiency/0/1", 1e-30},
                                                        {"/memory_efficiency/0/0", 4.9e-324}};
  for (const auto& [path, value] : gpu_edits) {
    auto j = load_json_file(kConfigs + "/gpus/h100-sxm-80gb.json");
    j[nlohmann::json::json_pointer(path)] = value;
    const auto msg = error_of([&] { parse_gpu_spec(j, "g.json"); });
    INFO(path << " -> " << msg);
    CHECK(msg.find("g.json: " + path + ": expected ") == 0);
  }
  const std::vector<std::pair<std::string, nlohmann::json>> cluster_edits{
      {"/intra_node/bus_bw_gb_per_s", 1e-9},   {"/intra_node/bus_bw_gb_per_s", 1e-30},
      {"/inter_node/nic_gb_per_s", 5e-324},    {"/intra_node/latency_us", 1e300},
      {"/inter_node/nics_per_node", 1 << 20},  {"/gpus_per_node", 1 << 20},
      {"/nodes", std::int64_t{1} << 40},       {"/gpu/hbm_gib", 1e-300}};
  for (const auto& [path, value] : cluster_edits) {
    auto j = small_cluster();
    if (path == "/gpu/hbm_gib") j["gpu"] = nlohmann::json{{"name", "fake"}};
    j[nlohmann::json::json_pointer(path)] = value;
    const auto msg = error_of([&] { parse_cluster_spec(j, "c.json", &fake_gpu); });
    INFO(path << " -> " << msg);
    CHECK(msg.find("c.json: " + path + ": expected ") == 0);
  }
}

TEST_CASE("cluster parsing uses the resolver, converts units and checks the fabric") {
  const ClusterSpec c = parse_cluster_spec(small_cluster(), "c.json", &fake_gpu);
  CHECK(c.gpu.name == "fake");
  CHECK(c.world_size() == 4);  // nodes defaults to 1
  CHECK(c.intra.bus_bw_bytes_per_s == doctest::Approx(100e9));
  CHECK(c.intra.latency_s == doctest::Approx(2e-6));
  CHECK(c.inter.nic_bw_bytes_per_s == doctest::Approx(25e9));
  CHECK(!c.host_threads);

  auto j = small_cluster();
  j["gpu"] = nlohmann::json::parse(R"({"name": "fake", "hbm_gib": 94, "peak_tflops": {"fp8": 2000}})");
  j["nodes"] = 3;
  const ClusterSpec o = parse_cluster_spec(j, "c.json", &fake_gpu);
  CHECK(o.gpu.hbm_bytes == doctest::Approx(94 * kGiB));
  CHECK(o.gpu.peak(DType::fp8) == doctest::Approx(2000e12));
  CHECK(o.gpu.peak(DType::bf16) == doctest::Approx(1e15));  // not overridden
  CHECK(o.world_size() == 12);
  const ClusterSpec back = parse_cluster_spec(cluster_spec_to_json(o), "roundtrip", &fake_gpu);
  CHECK(cluster_spec_to_json(back) == cluster_spec_to_json(o));
  // A cluster may state its GPUs' measured fp8 matmul maximum (a calibration override).
  j["gpu"]["fp8_matmul_max_efficiency"] = 0.709;
  const ClusterSpec f = parse_cluster_spec(j, "c.json", &fake_gpu);
  CHECK(f.gpu.fp8_matmul_max_efficiency == doctest::Approx(0.709));
  CHECK(f.gpu.sources.at("fp8_matmul_max_efficiency").find("c.json") != std::string::npos);
}

TEST_CASE("cluster errors name the file and path") {
  const std::map<std::string, nlohmann::json> edits{
      {"/gpu", "nonexistent"},     {"/gpu/hbm_size", 3},         {"/gpus_per_node", 0},
      {"/intra_node/nvls", "yes"}, {"/inter_node/nic_gbps", 25}, {"/sources/bandwidth", "x"}};
  for (const auto& [path, value] : edits) {
    auto j = small_cluster();
    if (path == "/gpu/hbm_size") j["gpu"] = nlohmann::json{{"name", "fake"}};
    j[nlohmann::json::json_pointer(path)] = value;
    const auto msg = error_of([&] { parse_cluster_spec(j, "c.json", &fake_gpu); });
    INFO(path << " -> " << msg);
    CHECK(msg.find("c.json: " + path + ":") == 0);
  }
  auto j = small_cluster();
  j.erase("inter_node");
  CHECK_NOTHROW(parse_cluster_spec(j, "c.json", &fake_gpu));
  j["nodes"] = 2;  // more than one node needs an inter-node fabric
  CHECK(contains(error_of([&] { parse_cluster_spec(j, "c.json", &fake_gpu); }), "c.json: /nodes:"));

  const std::map<std::string, std::string> files{{"bad_cluster.json", "/gpu/hbm_gb"},
                                                 {"cluster_unknown_gpu.json", "/gpu"},
                                                 {"cluster_single_node.json", "/nodes"}};
  for (const auto& [file, path] : files) {
    const auto msg = error_of([&] { load_cluster(kData + "/bad/" + file); });
    INFO(msg);
    CHECK(msg.find(kData + "/bad/" + file + ": " + path + ":") == 0);
  }
  // The unknown GPU's message lists the GPUs that do exist.
  CHECK(contains(error_of([&] { load_cluster(kData + "/bad/cluster_unknown_gpu.json"); }), "h100-sxm-80gb"));
}

TEST_CASE("a job may use part of its last node: 128 GPUs on two 72-GPU NVL72 domains") {
  ConfigDirEnv env(kConfigs);
  nlohmann::json j = cluster_spec_to_json(load_cluster("gb200-nvl72"));
  j.erase("nodes");
  j["gpus"] = 128;
  const ClusterSpec c = parse_cluster_spec(j, "nvl.json", &load_gpu);
  CHECK(c.nodes == 2);
  CHECK(c.world_size() == 128);
  CHECK(parse_cluster_spec(cluster_spec_to_json(c), "rt", &load_gpu).world_size() == 128);
  j["nodes"] = 3;  // 128 GPUs fill only two nodes of 72
  CHECK(contains(error_of([&] { parse_cluster_spec(j, "nvl.json", &load_gpu); }), "nvl.json: /gpus"));
  j["nodes"] = 2;
  j["gpus"] = 0;
  CHECK(contains(error_of([&] { parse_cluster_spec(j, "nvl.json", &load_gpu); }), "/gpus"));
}

TEST_CASE("every shipped cluster loads by name with published fabric numbers") {
  ConfigDirEnv env(kConfigs);
  const auto names = list_configs("clusters");
  CHECK(names == std::vector<std::string>{"cpu", "dgx-a100-40gb", "dgx-a100-80gb", "dgx-h100", "dgx-h200",
                                          "gb200-nvl72", "grand-teton-h100", "hgx-b200"});
  for (const auto& name : names) {
    const ClusterSpec c = load_cluster(name);
    INFO(name);
    CHECK(c.name == name);
    CHECK(c.nodes == 1);
    CHECK((c.inter.nics_per_node > 0) == !c.host_threads);  // only the host cluster is single-node only
    CHECK(parse_cluster_spec(cluster_spec_to_json(c), "rt", &load_gpu).intra.latency_s == c.intra.latency_s);
  }
  // 8xH100 ring busbw ~370 GB/s (sjeaugey, NVIDIA/nccl-tests #212); NDR 400G ~48 GB/s (nccl-tests #267);
  // NCCL hwLat (NVIDIA/nccl src/graph/tuning.cc).
  const ClusterSpec h = load_cluster("dgx-h100");
  CHECK(h.intra.bus_bw_bytes_per_s == doctest::Approx(370e9));
  CHECK(h.intra.latency_s == doctest::Approx(3.4e-6));
  CHECK(h.inter.nics_per_node * h.inter.nic_bw_bytes_per_s == doctest::Approx(8 * 48e9));
  CHECK(h.inter.latency_s == doctest::Approx(14e-6));
  // DGX-A100 multi-node busbw 192 GB/s = 8 HDR NICs (AddyLaddy, nccl #1576).
  const ClusterSpec a = load_cluster("dgx-a100-80gb");
  CHECK(a.inter.nics_per_node * a.inter.nic_bw_bytes_per_s == doctest::Approx(192e9));
  CHECK(a.intra.bus_bw_bytes_per_s == doctest::Approx(235e9));
  CHECK(!a.intra.nvls);
  CHECK(load_cluster("gb200-nvl72").gpus_per_node == 72);
  // torchtitan's benchmark hosts: H100 with 96 GB HBM2e at 2.4 TB/s, power-limited to 500 W of 700.
  const ClusterSpec gt = load_cluster("grand-teton-h100");
  CHECK(gt.gpu.hbm_bw_bytes_per_s == doctest::Approx(2.4e12));
  CHECK(gt.gpu.power_limit_w == doctest::Approx(500));
  CHECK(gt.gpu.clock_factor() == doctest::Approx(std::cbrt(500.0 / 700.0)));
  CHECK(h.gpu.clock_factor() == 1.0);
  const ClusterSpec cpu = load_cluster("cpu");
  CHECK(cpu.host_threads);
  CHECK(cpu.gpu.name == "cpu-host");
}

TEST_CASE("resolve_config: paths as given, names searched, unknown names listed") {
  ConfigDirEnv env(kConfigs);
  CHECK(std::filesystem::equivalent(resolve_config("models", "llama3.1-8b"),
                                    kConfigs + "/models/llama3.1-8b.json"));
  const std::string hf = kData + "/hf/gpt2/config.json";
  CHECK(resolve_config("models", hf) == hf);
  // A Hugging Face model folder stands for its config.json.
  CHECK(load_model(kData + "/hf/gpt2").layers == 12);

  auto msg = error_of([] { resolve_config("models", "no/such/file.json"); });
  CHECK(msg == "no/such/file.json: cannot open file");
  CHECK(error_of([] { resolve_config("models", "missing.json"); }) == "missing.json: cannot open file");

  msg = error_of([] { resolve_config("models", "llama9"); });
  INFO(msg);
  CHECK(contains(msg, "unknown model \"llama9\""));
  CHECK(contains(msg, "llama3.1-8b"));
  CHECK(msg.find('\n') == std::string::npos);
}

TEST_CASE("$FSDPX_CONFIG_DIR comes first in the search order") {
  const auto dir = std::filesystem::temp_directory_path() / "fsdpx_test_config_dir";
  std::filesystem::create_directories(dir / "models");
  auto j = load_json_file(kConfigs + "/models/llama3.1-8b.json");
  j["layers"] = 1;
  std::ofstream(dir / "models" / "llama3.1-8b.json") << j.dump();
  {
    ConfigDirEnv env(dir.string());
    CHECK(load_model("llama3.1-8b").layers == 1);
    CHECK(load_model("gpt2-124m").layers == 12);  // other names still come from the later roots
  }
  std::filesystem::remove_all(dir);
}

}  // namespace fsdpx
