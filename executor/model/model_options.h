// executor/model/model_options.h — the run-time choices of a backend's model (the CPU Transformer,
// model/transformer.h; the CUDA CudaModelT, cuda_backend/cuda_model.h), one struct for both over the
// backend's model communicator (ModelComm, CudaModelComm), and the one builder that reads them from the
// step program and the run settings for a rank's pipeline rank. The RoPE base and the norm epsilon are
// the model's (ModelSpec::rope_theta, ModelSpec::norm_eps), not options. A field one backend does not
// run is refused by its model (fp8 on CUDA) or has no effect there (the CPU allocates every module and
// always supports the split backward; its attention core is its own).
#pragma once

#include <cstddef>
#include <vector>

#include "core/plan_settings.h"
#include "executor/model/lora_layout.h"
#include "executor/model/op_profiler.h"
#include "executor/runtime/model_groups.h"
#include "executor/runtime/runtime_program.h"

namespace fsdpx {

template <class Comm>
struct ModelOptionsT {
  // One per block (empty = none everywhere). full keeps only the block input and re-runs the block's
  // forward in backward; selective (and selective_op) is treated as none by both backends (the CPU
  // reference keeps the attention scores a GPU would recompute), so all modes give the same gradients.
  std::vector<RecomputeMode> recompute;
  // Null: nothing is timed. The CPU reports each op's wall time; CUDA each kernel group's GPU time (a
  // CUDA event pair, each call then waits for its kernels: cuda_backend/cuda_op_timer.h).
  OpProfiler* profiler = nullptr;
  // Tensor / context / expert parallelism: this rank's place and its model communicator (needed when tp
  // or cp > 1). With cp > 1 the loss is the rank's share of the micro-batch mean: the cp ranks' sum.
  ModelParallel parallel;
  Comm* comm = nullptr;
  // LoRA (lora_layout.h; must outlive the model): base weights frozen (backward writes no gradient into
  // the base's buffers, which may be null), adapters in the buffers given to set_lora_buffers.
  const LoraLayout* lora = nullptr;
  // The modules this model runs (empty = all): a CUDA pipeline rank allocates activations for its
  // stages' modules only. The CPU allocates every module.
  std::vector<bool> modules;
  // Zero bubble: keep what each module's weight pass needs (CUDA allocates the keeps only then; the CPU
  // keeps on demand).
  bool split_backward = false;
  // CUDA: the attention core on tensor cores (cuda/attention_tc.h; the plan says `tensor_core`), else on
  // CUDA cores. Context parallelism runs the CUDA-core context kernels either way.
  bool tensor_core_attention = false;
  // fp8 training (CPU only): the blocks' linear GEMMs with torchao's tensorwise recipe emulated
  // (fp8_linear.h); the head, attention and norms stay in fp32. tp = 1, no LoRA.
  bool fp8 = false;
};

// The options of the model of pipeline rank `role`: the modules of its units, the split backward where
// its ops have zero bubble's input passes, the program's recompute, the run's fp8 and attention kernel.
template <class Comm>
ModelOptionsT<Comm> model_options(const RuntimeProgram& rp, int role, const ModelParallel& par, Comm* comm,
                                  OpProfiler* profiler, const LoraLayout* lora) {
  ModelOptionsT<Comm> o;
  o.recompute = rp.program.recompute;
  o.profiler = profiler;
  o.parallel = par;
  o.comm = comm;
  o.lora = lora;
  o.modules.assign(std::size_t(rp.layout.num_modules()), false);
  for (std::size_t u = 0; u < rp.flats.size(); ++u)
    if (unit_role(rp, int(u)) == role)
      for (int m : rp.flats[u].modules) o.modules[std::size_t(m)] = true;
  for (const Op& op : rp.program.roles[std::size_t(role)].ops)
    if (op.kind == OpKind::backward_input) o.split_backward = true;
  o.tensor_core_attention = rp.settings.attention_kernel == AttentionKernel::tensor_core;
  o.fp8 = rp.settings.fp8.has_value();
  return o;
}

}  // namespace fsdpx
