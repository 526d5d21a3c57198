// cost_models/caching_allocator.h — what PyTorch's CUDA caching allocator reserves beyond the bytes that
// tensors hold (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp): block rounding, one pool per stream
// (a block freed on one stream is never reused by another), expandable segments mapped in 20 MiB
// (large pool) pages, and the hole a freed tensor leaves when the next request is larger. Leaves out
// the non-expandable allocator's segment splitting, empty_cache, the CUDA context and NCCL's buffers.
#pragma once

#include <vector>

namespace fsdpx {

// Bytes the allocator hands out for a request: at least 512 B and a multiple of 512 B (round_size);
// requests of 10 MiB and more are rounded up to 2 MiB (kMinLargeAlloc, kRoundLarge).
double allocator_block_bytes(double request_bytes);

// Bytes an expandable segment maps to hold `bytes` of blocks: whole 20 MiB pages (kLargeBuffer, the
// large pool's segment_size in get_expandable_segment).
double expandable_mapped_bytes(double bytes);

// Peak reserved bytes of a step split by stream pool (each a per-stream expandable segment): the
// compute stream's high-water mark (its allocated peak plus the holes below it), the all-gather
// copy-in stream's and the reduce-scatter stream's.
struct StreamPoolBytes {
  double compute_allocated = 0;  // live on the compute stream at its peak
  double compute_holes = 0;      // freed blocks below the peak that the peak's requests could not use
  double all_gather = 0;         // high-water mark of the all-gather copy-in stream
  double reduce_scatter = 0;     // high-water mark of the reduce-scatter stream
};
double reserved_bytes(const StreamPoolBytes& pools);

// FSDP2's all-gather outputs live on the copy-in stream, and a unit's output is kept until the next
// unit's copy-in (pytorch/pytorch torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py
// foreach_all_gather; _fsdp_param_group.py: comm_ctx.all_gather_state frees the previous result in the
// next unshard, instead of record_stream): the pool's high-water mark is the largest sum of two units
// all-gathered one after the other. `gather_bytes`: each unit's unsharded bytes in forward order.
double fsdp2_all_gather_pool_bytes(const std::vector<double>& gather_bytes);

}  // namespace fsdpx
