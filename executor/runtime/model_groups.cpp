// executor/runtime/model_groups.cpp — names of the model's groups and of its collectives in profiles
// (see model_groups.h).
#include "executor/runtime/model_groups.h"

#include "program/parallel_comms.h"

namespace fsdpx {

const char* model_axis_name(ModelAxis a) { return a == ModelAxis::tp ? "tp" : "cp"; }

std::string collective_profile_name(ModelAxis axis, Collective kind, double bytes) {
  return serial_collective_name(axis == ModelAxis::tp ? GroupKind::tp : GroupKind::cp, kind, bytes);
}

}  // namespace fsdpx
