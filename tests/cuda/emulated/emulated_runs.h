// tests/cuda/emulated/emulated_runs.h — what the emulated-runtime tests share: the CUDA backend's ranks
// as CudaRankBackendT<float> (the float model only the emulated build instantiates) on the in-process device
// communicator, a plan's CPU and CUDA forms, and loss trajectories of both backends. Why float: the CUDA
// backend computes in bf16, whose rounding (2^-9) the CPU backend cannot reproduce step for step; with T =
// float every kernel computes what the CPU kernel computes, so 1e-5 separates a right orchestration from a
// wrong one (a stale buffer, a missed wait, a wrong group moves the loss by far more). Leaves out bf16.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/attention_kernel.h"
#include "core/dtype.h"
#include "executor/cuda/device_thread_communicator.h"
#include "executor/cuda_backend/cuda_rank_backend.h"
#include "executor/session/trainer.h"
#if defined(FSDPX_HAVE_NCCL)
#include "executor/cuda/nccl_communicator.h"
#endif

namespace fsdpx::cuda::emu {
// Launches of the tensor-core attention kernels (forward and backward) so far, on every emulated rank.
std::int64_t tc_attention_launches();
}  // namespace fsdpx::cuda::emu

namespace fsdpx::emulated_test {

constexpr int kSteps = 10;
constexpr double kLossTol = 1e-5;  // absolute, on losses of about 4

// Every rank of the plan as a thread on the emulated device, each a CudaRankBackendT<float>.
inline RankBackendFactory float_cuda_backends() {
  return [](const RuntimeProgram& rp, OpProfiler* rank0_profiler) {
    std::vector<std::unique_ptr<RankBackend>> out;
    for (auto& c : cuda::make_device_thread_communicators(rp.settings.parallelism.world_size(), 0)) {
      OpProfiler* profiler = c->rank() == 0 ? rank0_profiler : nullptr;
      out.push_back(std::make_unique<cuda::CudaRankBackendT<float>>(rp, std::move(c), 0, profiler));
    }
    return out;
  };
}

// The plan as each runtime accepts it: the CPU's fp32 and unfused attention; CUDA's flash kernel (CUDA-core
// unless asked) and a 16-bit parameter dtype (the runtime's check; the float model computes in fp32 regardless).
inline Plan on_cpu(Plan p) {
  p.precision.param = DType::fp32;
  p.attention_kernel = AttentionKernel::unfused;
  return p;
}
inline Plan on_cuda(Plan p, AttentionKernel kernel = AttentionKernel::cuda_core) {
  p.precision.param = DType::bf16;
  p.precision.reduce = DType::fp32;
  p.attention_kernel = kernel;
  return p;
}

// 10 steps on the CPU backend, or on the CUDA backend's ranks that `cuda_ranks` makes (default: the
// in-process device communicator's).
inline std::vector<double> losses(const Plan& plan, std::shared_ptr<DataSource> data, bool cuda,
                                  RankBackendFactory cuda_ranks = float_cuda_backends(),
                                  AttentionKernel cuda_kernel = AttentionKernel::cuda_core) {
  TrainerOptions o;
  o.cuda = cuda;
  auto trainer = cuda ? std::make_unique<Trainer>(on_cuda(plan, cuda_kernel), data, o, std::move(cuda_ranks))
                      : std::make_unique<Trainer>(on_cpu(plan), data, o);
  std::vector<double> out;
  for (int s = 0; s < kSteps; ++s) out.push_back(trainer->step().loss);
  return out;
}

// max |got − ref| over the steps; infinite when a loss is not finite or a step is missing (never NaN).
inline double max_abs_diff(const std::vector<double>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return INFINITY;
  double d = 0;
  for (std::size_t s = 0; s < ref.size(); ++s) {
    const double x = std::abs(got[s] - ref[s]);
    d = std::isfinite(x) ? std::max(d, x) : INFINITY;
  }
  return d;
}

// The largest change of the loss from the first step's (fresh batches and updated parameters).
inline double moved(const std::vector<double>& l) {
  double d = 0;
  for (double x : l) d = std::max(d, std::abs(x - l.front()));
  return d;
}

}  // namespace fsdpx::emulated_test
