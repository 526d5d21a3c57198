// executor/runtime/model_groups.h — where one rank sits in the tensor-, context- and expert-parallel
// groups of its model, and the record of a collective the model issued there, which the interpreter checks
// against the step program's serial collectives (program/parallel_comms.h) and profiles name. The
// collectives themselves are the backend's (executor/model/model_parallel.h on the CPU). Leaves out
// pipeline stages.
#pragma once

#include <cstdint>
#include <string>

#include "core/collective.h"

namespace fsdpx {

struct ModelParallel {
  int tp = 1, tp_rank = 0;
  int cp = 1, cp_rank = 0;
  bool sequence_parallel = false;  // with tp > 1: norms and residuals on token shards
  int ep = 1, ep_rank = 0;  // expert parallelism: the MoE blocks' token exchange (executor/model/moe_exchange.h)
  bool sp() const { return sequence_parallel && tp > 1; }
  bool any() const { return tp > 1 || cp > 1; }
};

enum class ModelAxis : std::uint8_t { tp, cp, ep };
const char* model_axis_name(ModelAxis a);
enum class GroupKind : std::uint8_t;  // program/step_program.h
GroupKind model_axis_group(ModelAxis a);  // the step program's group kind of the axis

// One collective as the step program counts it: nccl-tests' S bytes (the all-gather output, the
// reduce-scatter input, the all-reduce buffer; for the ep group's variable-count all-to-all, the larger of
// the bytes the rank sent and received, its own chunk included).
struct IssuedCollective {
  ModelAxis axis = ModelAxis::tp;
  Collective kind = Collective::all_gather;
  double bytes = 0;
};

// The name a profile gives a collective of this group, kind and size, e.g. "tp.all_gather.16384B"
// (program/parallel_comms.h serial_collective_name: the simulator's calibration matches it).
std::string collective_profile_name(ModelAxis axis, Collective kind, double bytes);

}  // namespace fsdpx
