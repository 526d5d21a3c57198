// core/gpu_spec.h — one accelerator: dense peak FLOP/s per dtype, HBM size and bandwidth, NVLink
// bandwidth per GPU, SM count, achievable-efficiency curves for matrix and memory-bound work, and the
// board power the peaks are rated at with the limit the GPU runs under, and the GEMM rate sustained at
// that power. Leaves out clocks other than through the power limit and the sustained GEMM rate, thermal
// throttling and sparsity.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.h"

namespace fsdpx {

// Efficiency as a function of work size: points (size, efficiency) sorted by size; interpolated
// linearly in log(size) and clamped at both ends. Size is FLOPs for matrix work, bytes for memory.
struct EfficiencyCurve {
  std::vector<std::pair<double, double>> points;
  double at(double size) const;
};

struct GpuSpec {
  std::string name;
  std::map<DType, double> peak_flops_per_s;  // dense, tensor cores where they apply
  double vector_flops_per_s = 0;             // non-tensor fp32 (norms, softmax, optimizer)
  double hbm_bytes = 0;
  double hbm_bw_bytes_per_s = 0;
  double nvlink_bw_bytes_per_s = 0;  // one direction, per GPU
  int sm_count = 0;
  EfficiencyCurve matmul_efficiency;  // by FLOPs per GEMM
  EfficiencyCurve memory_efficiency;  // by bytes moved per kernel
  EfficiencyCurve attention_efficiency;           // fused (flash) attention forward, by sequence length
  EfficiencyCurve attention_backward_efficiency;  // its backward kernel
  // cuDNN's fused attention (Transformer Engine's FusedAttention on Hopper), forward and backward by
  // sequence length; empty where no figure is shipped (the stacks then run FlashAttention-2's curves).
  EfficiencyCurve cudnn_attention_efficiency;
  EfficiencyCurve cudnn_attention_backward_efficiency;
  // The smallest GEMM dimension at which a GEMM reaches half its size-limited efficiency (tile edge
  // effects; cost_models/compute.h gemm_shape_factor).
  double matmul_half_efficiency_dim = 0;
  // FP8 GEMMs' Maximum Achievable Matmul FLOPS over the fp8 peak (ml-engineering's MAMF table); the fp8
  // GEMMs take matmul_efficiency scaled by this over its top (the bf16 MAMF fraction). 0: not measured,
  // the bf16 fractions apply to fp8 unchanged.
  double fp8_matmul_max_efficiency = 0;
  // Maximum Sustainable Matmul FLOPS over the peak, bf16 and fp8: the best GEMM once the GPU draws its
  // rated power and the SM clock has settled below the boost clock (ml-engineering's MSMF). GEMMs take
  // matmul_efficiency scaled by this over its top (the boost-clock MAMF fraction). 0: not measured, the
  // burst fractions apply. Without an fp8 figure fp8 GEMMs take the bf16 ratio on top of their own.
  double matmul_sustained_efficiency = 0;
  double fp8_matmul_sustained_efficiency = 0;
  // Measured per kernel name (fsdpx calibrate: simulator/calibration.h): a kernel of that name reads its own
  // curve instead of its class's, in the class's units (matmul: FLOPs per GEMM; memory: bytes per kernel;
  // attention: sequence length, forward and backward by name). Empty for a GPU of configs/gpus.
  std::map<std::string, EfficiencyCurve> matmul_by_kernel, memory_by_kernel, attention_by_kernel;
  double rated_power_w = 0;  // board power the peaks are rated at (0: not known, limits are ignored)
  double power_limit_w = 0;  // limit the GPU runs under (0: the rated power)
  std::map<std::string, std::string> sources;  // figure name -> where it comes from

  double peak(DType t) const;  // throws FSDP_CHECK if the dtype has no peak
  // Share of the rated SM clock, and so of tensor and vector throughput, left under power_limit_w:
  // (limit / rated)^(1/3), 1 without a lower limit (gpu_spec.cpp has the model and its source).
  double clock_factor() const;
};

GpuSpec parse_gpu_spec(const nlohmann::json& j, const std::string& file);
// Optional overrides of a cluster's "gpu" object beyond HBM and peaks: "vector_tflops" and the four
// efficiency curves, in the GPU file's units (what `fsdpx calibrate` measures). Marks each as read.
class JsonObject;
void parse_gpu_calibration_overrides(JsonObject& o, GpuSpec& g);
nlohmann::json gpu_spec_to_json(const GpuSpec& g);

}  // namespace fsdpx
