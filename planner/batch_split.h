// planner/batch_split.h — why no shape of the target splits the global batch over the data-parallel
// ranks, read from the target's space (space.h effective_space: the tensor, context and pipeline degrees
// the target runs on this cluster and model), so that the message follows the target's capabilities:
// the degrees it allows, the data-parallel degrees they leave, and what would split the batch (another
// target, the nearest global batches, a smaller world size). Splitting is all it checks: memory is the
// search's question.
#pragma once

#include <string>

#include "planner/planner.h"

namespace fsdpx {

// One line, without the "command line: --global-batch: " prefix.
std::string batch_split_message(const PlanRequest& r);

}  // namespace fsdpx
