// executor/session/expert_state.h — where a rank's optimizer state lies in the full model under expert
// parallelism: its state is a dense shard (over dp_shard) then an expert shard (over efsdp) of its local
// layout (executor/model/expert_shards.h), and each element is one element of a unit of the full
// model (RuntimeProgram::full_flats), so checkpoints keep the full tensors per name and load into any ep
// degree. Leaves out replicas and context parallelism (the backend refuses them beside ep).
#pragma once

#include <cstdint>
#include <vector>

#include "executor/runtime/runtime_program.h"

namespace fsdpx {

// Per element of global rank `rank`'s state of unit u: its element of full_flats[u], or -1 (padding).
std::vector<std::int64_t> expert_state_full_elements(const RuntimeProgram& rp, std::size_t u, int rank);

}  // namespace fsdpx
