// cost_models/memory.cpp — per-GPU model state (params, grads, Adam state) for DDP, ZeRO-1/2/3 and
// HSDP under a precision policy, and the fixed overheads (CUDA context, NCCL buffers, allocator
// headroom). Activations live in activations.cpp. Leaves out CPU offload, FSDP's transient unsharded
// units (the caller sizes them from the unit's parameters) and Megatron's extra fp32 main-grad copy.
#include "cost_models/memory.h"

#include "core/errors.h"

namespace fsdpx {
namespace {

constexpr double kAdamStateBytes = 8;   // fp32 m and v (ZeRO paper, "K = 12" with the master copy)
constexpr double kFp32MasterBytes = 4;  // fp32 master copy of a 16-bit parameter

// CUDA context plus lazily loaded kernel modules (CUDA_MODULE_LOADING=LAZY, default since CUDA
// 12.2): assumed 0.5 GiB on Hopper, the usual nvidia-smi footprint of a process that only created
// its context and cuBLAS handle. An assumption, not a measurement from the sources.
constexpr double kCudaContextBytes = 0.5 * 1024 * 1024 * 1024;
// NCCL buffers per active communicator: 1.0 GB, between the footprints measured in NVIDIA/nccl
// issues #964 (544-688 MB per group on A100) and #864 (~1.6 GB for one all-reducing communicator
// including its channels' buffers).
constexpr double kNcclBytesPerCommunicator = 1.0e9;
// Caching-allocator reserve: 10% of the bytes a step allocates and frees, the middle of the 5-15%
// for a steady-state dense job (GMLake, arXiv:2401.08156: fragmentation ~15% on average without
// defragmentation, from splitting freed blocks; torchtitan runs with expandable_segments:True). State
// allocated once in exact sizes (c10/cuda/CUDACachingAllocator.cpp rounds large blocks to 2 MiB)
// is never split and adds none.
constexpr double kAllocatorHeadroomFraction = 0.10;

}  // namespace

const char* sharding_mode_name(ShardingMode m) {
  switch (m) {
    case ShardingMode::ddp: return "ddp";
    case ShardingMode::zero1: return "zero1";
    case ShardingMode::zero2: return "zero2";
    case ShardingMode::zero3: return "zero3";
    case ShardingMode::hsdp: return "hsdp";
  }
  return "?";
}

ShardingMode sharding_mode(const DataPlacement& p) {
  if (!is_sharded(p.params)) return is_sharded(p.grads) ? ShardingMode::zero1 : ShardingMode::ddp;
  if (!p.reshard_after_forward) return ShardingMode::zero2;
  return p.params == Placement::sharded_replicated ? ShardingMode::hsdp : ShardingMode::zero3;
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::selective_op: return "selective_op";
  }
  return "?";
}

// ZeRO accounting (Rajbhandari et al. SC20 §3.1): 16-bit params 2 + grads 2 + optimizer 12 (fp32
// master 4, m 4, v 4) = 16 bytes. An fp32 parameter is its own master, so it adds no copy
// (Megatron dist_optimizer.md: fp32 params + fp32 grads = 16 bytes).
StateBytesPerParam state_bytes_per_param(const PrecisionPolicy& p) {
  StateBytesPerParam b;
  b.params = dtype_bytes(p.param);
  b.grads = dtype_bytes(p.reduce);
  const bool needs_master = p.fp32_master && dtype_bytes(p.param) < 4;
  b.optimizer = kAdamStateBytes + (needs_master ? kFp32MasterBytes : 0);
  return b;
}

// Which states are divided by the dp_shard degree N (ZeRO paper Fig. 1): stage 1 the optimizer,
// stage 2 also gradients, stage 3 (FSDP, HSDP within its shard group) also parameters.
StateBytes model_state_bytes(double params, ShardingMode mode, int shard_ranks, const PrecisionPolicy& p) {
  FSDP_CHECK(params >= 0, "negative parameter count");
  FSDP_CHECK(mode == ShardingMode::ddp || shard_ranks >= 1, "shard_ranks must be >= 1");
  const StateBytesPerParam per = state_bytes_per_param(p);
  const double n = mode == ShardingMode::ddp ? 1.0 : shard_ranks;
  const bool shard_grads =
      mode == ShardingMode::zero2 || mode == ShardingMode::zero3 || mode == ShardingMode::hsdp;
  const bool shard_params = mode == ShardingMode::zero3 || mode == ShardingMode::hsdp;
  StateBytes s;
  s.params = params * per.params / (shard_params ? n : 1.0);
  s.grads = params * per.grads / (shard_grads ? n : 1.0);
  s.optimizer = params * per.optimizer / n;
  return s;
}

StateBytes fsdp2_state_bytes(double params, int shard_ranks, const PrecisionPolicy& p) {
  FSDP_CHECK(params >= 0 && shard_ranks >= 1, "fsdp2_state_bytes needs params >= 0 and shard_ranks >= 1");
  if (!p.fp32_master || p.param == DType::fp32) return model_state_bytes(params, ShardingMode::zero3, shard_ranks, p);
  // FSDP2 stores the sharded parameter in fp32 (it is the master copy) and accumulates sharded
  // gradients in that dtype; the low-precision copy exists only unsharded, as a transient.
  const double n = shard_ranks;
  StateBytes s;
  s.params = params * 4 / n;
  s.grads = params * 4 / n;
  s.optimizer = params * 8 / n;  // Adam m and v in fp32
  return s;
}

double allocator_headroom_bytes(double churn_bytes) {
  FSDP_CHECK(churn_bytes >= 0, "allocator_headroom_bytes: negative bytes");
  return kAllocatorHeadroomFraction * churn_bytes;
}

OverheadBytes overhead_bytes(int communicators, double churn_bytes) {
  FSDP_CHECK(communicators >= 0 && churn_bytes >= 0, "overheads need non-negative inputs");
  OverheadBytes o;
  o.cuda_context = kCudaContextBytes;
  o.nccl_buffers = communicators * kNcclBytesPerCommunicator;
  o.allocator_headroom = allocator_headroom_bytes(churn_bytes);
  return o;
}

}  // namespace fsdpx
