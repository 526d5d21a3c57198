// executor/runtime/model_groups.cpp — names of the model's groups and of its collectives in profiles
// (see model_groups.h).
#include "executor/runtime/model_groups.h"

#include "program/parallel_comms.h"

namespace fsdpx {

const char* model_axis_name(ModelAxis a) { return group_kind_name(model_axis_group(a)); }

GroupKind model_axis_group(ModelAxis a) {
  switch (a) {
    case ModelAxis::tp: return GroupKind::tp;
    case ModelAxis::cp: return GroupKind::cp;
    case ModelAxis::ep: return GroupKind::ep;
  }
  return GroupKind::tp;
}

std::string collective_profile_name(ModelAxis axis, Collective kind, double bytes) {
  return serial_collective_name(model_axis_group(axis), kind, bytes);
}

}  // namespace fsdpx
