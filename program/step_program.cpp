// program/step_program.cpp — display names of the step program's enums (trace, summaries). The
// switches have no default so that -Wswitch flags a new enumerator without a name.
#include "program/step_program.h"

#include "core/errors.h"

namespace fsdpx {

const char* stream_name(StreamKind s) {
  switch (s) {
    case StreamKind::compute: return "compute";
    case StreamKind::all_gather: return "all_gather";
    case StreamKind::reduce_scatter: return "reduce_scatter";
    case StreamKind::all_reduce: return "all_reduce";
    case StreamKind::p2p: return "p2p";
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
  }
  FSDP_CHECK(false, "unknown OpKind");
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

}  // namespace fsdpx
