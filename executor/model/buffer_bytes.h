// executor/model/buffer_bytes.h — the bytes the CPU model (transformer.h) holds for one segment of the
// step program, measured on its allocated buffers: what it keeps from the segment's forward to its
// backward, and what the segment's backward works in besides. The CPU backend's memory tracker counts
// these (a measurement of the model, compared with the program's own memory effects by the tests).
// Leaves out buffers that live the whole run regardless of the schedule (the RoPE table, the batch).
#pragma once

#include <vector>

#include "executor/model/model_parallel.h"
#include "executor/runtime/param_layout.h"
#include "executor/runtime/runtime_program.h"
#include "executor/runtime/segment_bytes.h"

namespace fsdpx {

// Per segment of the program (program order), for the run's model, micro-batch and seq and the program's
// recompute. `layout` and `par`: the rank's tensor-parallel slices and place (sizes of its buffers).
std::vector<SegmentBufferBytes> cpu_segment_buffer_bytes(const RuntimeProgram& rp, const ParamLayout& layout,
                                                          const ModelParallel& par = {});

}  // namespace fsdpx
