// executor/model/block_context.h — what a block's kernel-call sequence reads besides its tensors, written
// once for both backends: the model, the block's sizes, the profiler and module, the rank's tensor,
// context and expert parallel place with its model communicator, the shared scratch, the adapters and
// the MoE auxiliary loss's gradient. The model driver fills it (model_driver.h context_base); each
// backend's context adds its own (model/block.h BlockContext: the RoPE table, the query groups, cp
// positions, fp8; cuda_backend/cuda_block.h CudaBlockContext: the device RoPE tables, GEMM context,
// stream, cp row maps, attention kernel). Leaves out the kernels themselves.
#pragma once

#include "core/model_spec.h"
#include "executor/model/block_dims.h"
#include "executor/model/moe_dims.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/model_groups.h"

namespace fsdpx {

// Comm: the backend's model communicator; Scratch: its block scratch; Lora: its block adapters; S: the
// type of the MoE auxiliary loss's gradient (the backend's statistics).
template <class Comm, class Scratch, class Lora, class S>
struct BlockContextBase {
  const ModelSpec* spec = nullptr;  // the norms use spec->norm_eps
  BlockDims dims;
  OpProfiler* profiler = nullptr;   // null: no timing (CPU: each op's wall time; CUDA: event-timed kernels)
  int module = 0;                   // ParamLayout index reported with each time
  // Tensor parallelism (tp > 1): qkv and mlp_up column-parallel, attn_out and mlp_down row-parallel,
  // each half one region of tp_region.h over the model's collectives; cp > 1: attention over whole
  // sequences (context_parallel.h).
  ModelParallel par;
  Comm* comm = nullptr;             // null when tp = cp = 1
  Scratch* scratch = nullptr;       // the forward's `wide`, qkv and `kv_*` buffers
  // LoRA (tp = 1, GradPass::all): the base weights are frozen, so backward computes no weight gradients
  // for them (g is all null) and the adapters' gradients instead (layout null: no LoRA).
  Lora lora;
  MoeAuxGrad<S> moe_aux = {};       // MoE blocks: the load-balancing loss's gradient (moe_aux_loss.h)
};

}  // namespace fsdpx
