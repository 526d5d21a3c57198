// simulator/op_timing.cpp — op durations from the cost models: compute ops from their kernels (plus
// the FSDP implementation's copies around the collectives they consume or feed, on the compute stream,
// Apex's distributed optimizer's gradient copies into its fp32 buckets, and their TP/CP collectives,
// serial or hidden behind a GEMM by Transformer Engine's userbuffers),
// collectives from the NCCL model with their fabric loads and the SMs their kernels hold, each distinct
// (collective, bytes, group) timed once per program.
#include "simulator/op_timing.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "cost_models/communication.h"
#include "cost_models/compute.h"
#include "cost_models/stack_costs.h"
#include "cost_models/tp_overlap.h"

namespace fsdpx {

namespace {

double serial_comm_s(const WorkSet& w, const StepProgram& p, const ClusterSpec& c) {
  double t = 0;
  for (const auto& sc : w.serial_comms)
    t += sc.count * collective_time_s(sc.kind, sc.bytes, p.groups[std::size_t(sc.group)].shape, c);
  return t;
}

// TE's userbuffers need sequence parallelism (Megatron-LM asserts it for --tp-comm-overlap) and come
// with Transformer Engine: Megatron runs from before it (the unfused attention path, case_plan.cpp)
// have neither.
bool te_userbuffers(const Plan& plan) {
  return stack_costs(plan.framework, plan.compiled).te_tp_overlap && plan.parallelism.tp > 1 &&
         plan.parallelism.sequence_parallel && plan.attention_kernel != AttentionKernel::unfused;
}

// The distributed optimizer of the pre-2023 Megatron / NeMo stacks (the unfused attention path above
// marks them) is Apex's DistributedFusedAdam, which NeMo 1.11 builds with its defaults
// (nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py @v1.11.0 setup_optimization):
// gradients and parameters are synchronised in buckets of bucket_cap_mb = 100 MB of fp32 gradient
// (NVIDIA/apex apex/contrib/optimizers/distributed_fused_adam.py @98661600, bucket_size =
// 1024*1024*bucket_cap_mb / grad dtype size), one NCCL reduce-scatter or all-gather per bucket, each on the
// process group's one NCCL stream. So a unit's data-parallel collective is params / bucket calls, and every
// call after the first pays the collective's latency again.
double apex_bucket_calls(const Op& op, const Plan& plan) {
  constexpr double kBucketElems = 100.0 * 1024 * 1024 / 4;  // bucket_cap_mb = 100 of fp32 gradient
  const DType d = op.collective == Collective::all_gather ? plan.precision.param : plan.precision.reduce;
  return std::max(1.0, op.comm_bytes / dtype_bytes(d) / kBucketElems);
}

// Time TE's overlap saves on one GEMM `k` and the collective `sc` it hides. Ring-exchange and pipeline
// GEMMs run in chunks along the tokens on up to three streams at once (TE's _NUM_MAX_UB_STREAMS), so
// the chunks fill the GPU as the whole GEMM does: each takes the whole GEMM's time over the chunk count.
double pair_saving_s(const KernelWork& k, const SerialCollective& sc, const TpOverlap& o, const GroupShape& g,
                     const Plan& plan) {
  const ClusterSpec& c = plan.cluster;
  const int chunks = o.method == TpOverlapMethod::ring_exchange ? g.ranks
                     : o.method == TpOverlapMethod::pipeline    ? o.splits : 1;
  const double gemm_s = kernel_time_s(k, c.gpu, plan.precision.param);
  const double comm_s = collective_time_s(sc.kind, sc.bytes, g, c);
  const double comm_chunk_s = o.method == TpOverlapMethod::ring_exchange ? comm_s / (g.ranks - 1)
                              : o.method == TpOverlapMethod::pipeline
                                  ? collective_time_s(sc.kind, sc.bytes / chunks, g, c) : comm_s;
  const int sms = c.gpu.sm_count;
  const double share = sms > 1 ? std::min(o.comm_sms, sms - 1) / double(sms) : 0.0;
  return gemm_s + comm_s - overlapped_pair_time_s(o.method, gemm_s / chunks, comm_chunk_s, chunks, share);
}

// Time TE's overlap saves in one work set: each block GEMM with a default overlap takes one of the work
// set's sequence-parallel exchanges ([tokens, hidden] all-gathers and reduce-scatters in the tp group)
// and runs beside it (tp_overlap.h).
double te_overlap_saving_s(const WorkSet& w, const StepProgram& p, const Plan& plan) {
  const double tokens = double(plan.training.micro_batch) * double(plan.training.seq) / plan.parallelism.cp;
  const double exchange_bytes = tokens * double(plan.model.hidden) * dtype_bytes(plan.precision.param);
  std::vector<int> left;  // per serial collective: exchanges not yet hidden behind a GEMM
  for (const SerialCollective& sc : w.serial_comms) {
    const bool exchange = p.groups[std::size_t(sc.group)].kind == GroupKind::tp && sc.bytes == exchange_bytes &&
                          (sc.kind == Collective::all_gather || sc.kind == Collective::reduce_scatter);
    left.push_back(exchange ? sc.count : 0);
  }
  double saved_s = 0;
  for (const KernelWork& k : w.kernels) {
    for (std::size_t i = 0; i < left.size(); ++i) {
      const SerialCollective& sc = w.serial_comms[i];
      const std::optional<TpOverlap> o = left[i] > 0 ? te_default_overlap(k.name, sc.kind) : std::nullopt;
      if (!o) continue;
      --left[i];
      saved_s += pair_saving_s(k, sc, *o, p.groups[std::size_t(sc.group)].shape, plan);
      break;
    }
  }
  return saved_s;
}

// Share of each fabric a collective of group g uses alone (communication.h's ring rule): inside a node
// all of NVLink; across nodes the ring runs at min(NVLink, NIC share) and so loads each by that rate
// over its capacity. A group with one rank per node sends straight to its NIC. {NVLink, NIC}.
std::array<double, 2> fabric_loads(const GroupShape& g, const ClusterSpec& cluster) {
  if (g.nodes() == 1) return {1.0, 0.0};
  const double ring_bw = group_bus_bw_bytes_per_s(g, cluster);
  const double nic_bw = cluster.inter.nics_per_node * cluster.inter.nic_bw_bytes_per_s / cluster.gpus_per_node *
                        g.fewest_ranks_per_node();
  return {g.ranks_per_node > 1 ? std::min(1.0, ring_bw / cluster.intra.bus_bw_bytes_per_s) : 0.0,
          std::min(1.0, ring_bw / nic_bw)};
}

// One memory-bound copy pass of `bytes` of HBM traffic.
double copy_time_s(double bytes, const GpuSpec& gpu, DType dtype) {
  if (bytes <= 0) return 0;
  KernelWork copy;
  copy.name = "fsdp_copy";
  copy.bytes = bytes;
  return kernel_time_s(copy, gpu, dtype);
}

// FSDP2 copies a unit's gathered buffer out into per-parameter tensors on the compute stream before the
// unit's first compute op, and copies (widening) its unsharded gradients into the reduce-scatter input
// after the backward that produced them; FSDP1 handles its FlatParameter's gradient likewise
// (stack_costs.h). Each is GPU time on the compute stream, so it is added to that compute op: the first
// compute op that depends on an all-gather, and the compute op each reduce-scatter depends on.
void add_fsdp_copies(RoleProgram& role, const StepProgram& program, const Plan& plan, const StackCosts& stack) {
  if (stack.fsdp == FsdpImpl::flat) return;
  const double pb = dtype_bytes(plan.precision.param), rb = dtype_bytes(plan.precision.reduce);
  constexpr double kMasterBytes = 4;  // FSDP keeps the sharded parameter in fp32
  std::vector<char> charged(role.ops.size(), 0);
  for (Op& op : role.ops) {
    if (op.kind != OpKind::forward && op.kind != OpKind::backward) continue;
    for (int d : op.deps) {
      const Op& ag = role.ops[std::size_t(d)];
      if (ag.kind != OpKind::all_gather || charged[std::size_t(d)]) continue;
      charged[std::size_t(d)] = 1;
      const int shards = program.groups[std::size_t(ag.group)].shape.ranks;
      op.duration_s += copy_time_s(ag.comm_bytes / pb * fsdp_gather_copy_bytes(stack.fsdp, pb, kMasterBytes, shards),
                                   plan.cluster.gpu, plan.precision.param);
    }
  }
  for (const Op& rs : role.ops) {
    if (rs.kind != OpKind::reduce_scatter || rs.deps.empty()) continue;
    Op& producer = role.ops[std::size_t(rs.deps.front())];
    const int shards = program.groups[std::size_t(rs.group)].shape.ranks;
    producer.duration_s += copy_time_s(rs.comm_bytes / rb * fsdp_reduce_copy_bytes(stack.fsdp, pb, rb, shards),
                                       plan.cluster.gpu, plan.precision.param);
  }
}

// Apex's DistributedFusedAdam copies every parameter's gradient into its fp32 bucket buffer from a
// backward hook (NVIDIA/apex apex/contrib/optimizers/distributed_fused_adam.py @98661600 `_grad_copy`:
// `grad_out.add_(grad_in)`, then `param.grad = None`), on every micro-batch: NeMo 1.11 runs the micro-batches
// of a pipeline-free model under `no_sync(greedy_grad_copy=True)` (megatron_gpt_model.py @v1.11.0
// training_step), and its `_validate_config` turns gradient_accumulation_fusion off without pipeline
// parallelism (megatron_base_model.py @v1.11.0), so no gradient lands in the buffer directly. Each copy reads
// the fp32 bucket and the low-precision gradient and writes the bucket back; `zero_grad` zeroes the whole
// buffer once per step (a write of 4 bytes per parameter). Both are memory-bound passes on the compute
// stream, added to the backward op that produces the unit's gradients (the zeroing to micro-batch 0's).
// With pipeline parallelism the launcher's yaml keeps gradient_accumulation_fusion on: the linear layers'
// weight gradients accumulate in place in the buffer (NeMo's MegatronDistributedFusedAdam sets
// `param.main_grad = grad_buffer_view(param)`, nemo/core/optim/optimizers.py @v1.11.0) and `_grad_copy`
// skips them; the norms and biases left are not counted.
void add_apex_grad_copies(RoleProgram& role, const StepProgram& program, const Plan& plan) {
  if (!apex_distributed_adam(plan) || plan.parallelism.pp > 1) return;
  constexpr double kBucketBytes = 4;  // the grad buffer's dtype: fp32
  const double gb = dtype_bytes(plan.precision.param);
  std::vector<std::vector<char>> charged(program.units.size());
  for (Op& op : role.ops) {
    if (op.kind != OpKind::backward || op.unit < 0 || op.micro_batch < 0) continue;
    const ProgramUnit& u = program.units[std::size_t(op.unit)];
    if (u.frozen) continue;
    std::vector<char>& seen = charged[std::size_t(op.unit)];
    if (seen.size() <= std::size_t(op.micro_batch)) seen.resize(std::size_t(op.micro_batch) + 1, 0);
    if (seen[std::size_t(op.micro_batch)]) continue;
    seen[std::size_t(op.micro_batch)] = 1;
    const double params = u.param_bytes / gb;
    const double bytes = params * (kBucketBytes + gb + kBucketBytes) + (op.micro_batch == 0 ? params * kBucketBytes : 0);
    op.duration_s += copy_time_s(bytes, plan.cluster.gpu, plan.precision.param);
  }
}

// A collective's time, latency, fabric loads and SM share: pure functions of (collective, bytes, group)
// on one cluster. A program repeats the same collective per micro-batch, unit and stage, so time_program
// computes each distinct one once (the same values: a memo of the same calls).
struct CollectiveTiming {
  double duration_s = 0, latency_s = 0, nvlink_load = 1, nic_load = 0, sm_share = 0;
};

CollectiveTiming collective_timing(const Op& op, const GroupShape& g, const ClusterSpec& cluster) {
  CollectiveTiming t;
  t.duration_s = collective_time_s(op.collective, op.comm_bytes, g, cluster);
  t.latency_s = std::min(t.duration_s, op.comm_bytes > 0 && g.ranks > 1
                                           ? collective_latency_s(op.collective, g, cluster) : 0.0);
  const std::array<double, 2> loads = fabric_loads(g, cluster);
  t.nvlink_load = loads[0];
  t.nic_load = loads[1];
  const int sms = cluster.gpu.sm_count;
  t.sm_share = sms > 0 ? std::min(1.0, collective_channels(op.collective, op.comm_bytes, g, cluster) / double(sms)) : 0.0;
  return t;
}

}  // namespace

bool apex_distributed_adam(const Plan& plan) {
  return plan.framework == Framework::megatron && plan.attention_kernel == AttentionKernel::unfused &&
         plan.parallelism.data_parallel == DataParallel::distributed_optimizer;
}

void time_program(StepProgram& program, const Plan& plan) {
  const ClusterSpec& cluster = plan.cluster;
  const DType compute_dtype = plan.precision.param;
  std::vector<double> kernel_s(program.work_sets.size()), comm_s(program.work_sets.size());
  for (std::size_t i = 0; i < program.work_sets.size(); ++i) {
    kernel_s[i] = kernels_time_s(program.work_sets[i].kernels, cluster.gpu, compute_dtype);
    comm_s[i] = serial_comm_s(program.work_sets[i], program, cluster);
    if (te_userbuffers(plan))
      comm_s[i] = std::max(0.0, comm_s[i] - te_overlap_saving_s(program.work_sets[i], program, plan));
  }
  using CollectiveKey = std::tuple<Collective, double, int>;
  std::map<CollectiveKey, CollectiveTiming> collectives;
  // Neighbouring ops often repeat a collective (a pipeline send and the next one): the last one looked up.
  const CollectiveTiming* last = nullptr;
  CollectiveKey last_key;
  for (auto& role : program.roles) {
    for (auto& op : role.ops) {
      if (op.work_set >= 0) {
        op.serial_comm_time_s = comm_s[std::size_t(op.work_set)];
        op.duration_s = kernel_s[std::size_t(op.work_set)] + op.serial_comm_time_s;
      } else if (op.group >= 0) {
        const auto key = std::make_tuple(op.collective, op.comm_bytes, op.group);
        if (last == nullptr || key != last_key) {
          auto it = collectives.find(key);
          if (it == collectives.end())
            it = collectives.emplace(key, collective_timing(op, program.groups[std::size_t(op.group)].shape, cluster)).first;
          last = &it->second;  // std::map keeps its elements in place
          last_key = key;
        }
        const CollectiveTiming& t = *last;
        op.duration_s = t.duration_s;
        op.latency_s = t.latency_s;
        const bool dp_sync = op.payload == Payload::params || op.payload == Payload::grads;
        if (dp_sync && apex_distributed_adam(plan) && op.latency_s > 0) {
          const double extra_s = (apex_bucket_calls(op, plan) - 1) * op.latency_s;
          op.duration_s += extra_s;
          op.latency_s += extra_s;
        }
        op.nvlink_load = t.nvlink_load;
        op.nic_load = t.nic_load;
        op.sm_share = t.sm_share;
      }
    }
    add_fsdp_copies(role, program, plan, stack_costs(plan.framework, plan.compiled));
    add_apex_grad_copies(role, program, plan);
  }
}

}  // namespace fsdpx
