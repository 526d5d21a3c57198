// simulator/source_mfu.cpp — the peak a published run's MFU divides by (source_mfu.h has the sources).
#include "simulator/source_mfu.h"

namespace fsdpx {

DType source_mfu_peak_dtype(const std::string& framework, const Plan& plan) {
  if (framework == "llm-foundry" && plan.fp8 && plan.cluster.gpu.peak_flops_per_s.count(DType::fp8)) return DType::fp8;
  return DType::bf16;
}

double source_mfu(double simulated_mfu, const std::string& framework, const Plan& plan) {
  const GpuSpec& gpu = plan.cluster.gpu;
  return simulated_mfu * gpu.peak(plan.precision.param) / gpu.peak(source_mfu_peak_dtype(framework, plan));
}

}  // namespace fsdpx
