// core/pipeline.h — pipeline stages of a plan. A plan names the virtual stage (model chunk) of every
// unit; stage v runs on pipeline rank v mod pp as that rank's chunk v div pp (Megatron-LM's interleaved
// placement, and torch.distributed.pipelining's "loop" style: pytorch/torchtitan
// torchtitan/distributed/pipeline_parallel.py, pipeline_module_split). The balancing helper splits the
// blocks over the stages counting the embedding as `input_weight` blocks on the first stage and the
// final norm, head and loss as `output_weight` blocks on the last (torchtitan's
// generate_llm_fqn_per_model_part; Megatron-LM's account_for_embedding_in_pipeline_split /
// account_for_loss_in_pipeline_split with weights 1, its default split with weights 0). Leaves out
// V-shaped placements (ZB-V, DualPipe).
#pragma once

#include <string>
#include <vector>

namespace fsdpx {

struct Parallelism;

inline int virtual_stages(int pp, int vpp) { return pp * vpp; }
inline int stage_rank(int stage, int pp) { return stage % pp; }    // pipeline rank that runs a virtual stage
inline int stage_chunk(int stage, int pp) { return stage / pp; }   // its model chunk on that rank
inline int chunk_stage(int chunk, int rank, int pp) { return chunk * pp + rank; }

// What the first and last stage count besides their blocks, in blocks (may be fractional: the planner
// weighs the embedding and the head by their compute time).
struct StageAccounting {
  double input_weight = 0;   // embedding
  double output_weight = 0;  // final norm + head + loss
};

// Blocks of each of `stages` contiguous stages, in forward order, so that the loads (blocks, plus the
// weights on the first and last stage) are as even as the weights allow: with integer weights the
// (layers + input_weight + output_weight) "effective layers" are split evenly and the remainder goes to
// the first stages, torchtitan's rule; with fractional weights each boundary is rounded to the nearest
// block. Throws ConfigError (message without a file) when a stage would hold nothing: a middle stage
// with no block, or weights larger than a stage's share.
std::vector<int> balance_stage_blocks(int layers, int stages, StageAccounting accounting);

}  // namespace fsdpx
