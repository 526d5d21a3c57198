// program/step_program.cpp — display names of the step program's enums (trace, summaries; the switches
// have no default so that -Wswitch flags a new enumerator without a name), an op's label in messages and
// the bytes a release frees.
#include "program/step_program.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

const char* stream_name(StreamKind s) {
  switch (s) {
    case StreamKind::compute: return "compute";
    case StreamKind::all_gather: return "all_gather";
    case StreamKind::reduce_scatter: return "reduce_scatter";
    case StreamKind::all_reduce: return "all_reduce";
    case StreamKind::send_activations: return "send_activations";
    case StreamKind::recv_activations: return "recv_activations";
    case StreamKind::send_grads: return "send_grads";
    case StreamKind::recv_grads: return "recv_grads";
  }
  FSDP_CHECK(false, "unknown StreamKind");
  return "";
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::all_gather: return "all_gather";
    case OpKind::forward: return "forward";
    case OpKind::backward: return "backward";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::optimizer: return "optimizer";
    case OpKind::free: return "free";
    case OpKind::backward_input: return "backward_input";
    case OpKind::backward_weight: return "backward_weight";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::unscale: return "unscale";
  }
  FSDP_CHECK(false, "unknown OpKind");
  return "";
}

std::string op_label(const Op& op, int id) {
  return op.name.empty() ? fmt::format("#{} ({})", id, op_kind_name(op.kind)) : op.name;
}

const char* payload_name(Payload p) {
  switch (p) {
    case Payload::none: return "none";
    case Payload::params: return "params";
    case Payload::grads: return "grads";
    case Payload::grad_shard: return "grad_shard";
    case Payload::grad_norm: return "grad_norm";
    case Payload::activations: return "activations";
    case Payload::activation_grads: return "activation_grads";
    case Payload::tied_grads: return "tied_grads";
    case Payload::adapter_grads: return "adapter_grads";
  }
  FSDP_CHECK(false, "unknown Payload");
  return "";
}

const char* mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::params: return "params";
    case MemCategory::grads: return "grads";
    case MemCategory::optimizer: return "optimizer";
    case MemCategory::activations: return "activations";
    case MemCategory::transient: return "transient";
    case MemCategory::other: return "other";
  }
  FSDP_CHECK(false, "unknown MemCategory");
  return "";
}

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::dp_shard: return "dp_shard";
    case GroupKind::dp_replicate: return "dp_replicate";
    case GroupKind::dp_all: return "dp_all";
    case GroupKind::tp: return "tp";
    case GroupKind::cp: return "cp";
    case GroupKind::efsdp: return "efsdp";
    case GroupKind::dp_shard_cp: return "dp_shard_cp";
    case GroupKind::reshard: return "reshard";
    case GroupKind::pp_pair: return "pp_pair";
    case GroupKind::pp_ends: return "pp_ends";
    case GroupKind::pp_all: return "pp_all";
    case GroupKind::dp_cp: return "dp_cp";
    case GroupKind::mesh_all: return "mesh_all";
    case GroupKind::ep: return "ep";
  }
  FSDP_CHECK(false, "unknown GroupKind");
  return "";
}

double released_param_bytes(const StepProgram& program, const Op& op) {
  if (!op.release_params) return 0;
  FSDP_CHECK(op.unit >= 0 && op.unit < int(program.units.size()), "a release names no unit of the program");
  return program.units[std::size_t(op.unit)].param_bytes;
}

}  // namespace fsdpx
