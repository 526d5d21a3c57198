// program/lower_pipeline.cpp — one pipeline rank's passes in schedule order (pipeline_schedule.h),
// each over the segments of one model chunk, with the point-to-point ops between neighbouring virtual
// stages: a chunk's forward waits for the receive of its input activations and sends its output to the
// next stage; its backward waits for the receive of the output gradient and sends the input gradient
// to the previous stage (Megatron-LM's p2p_communication.py; torch.distributed.pipelining's
// get_fwd_send_ops / get_bwd_recv_ops). Sends are asynchronous: a send waits for its data, never for
// the receiver's progress beyond posting the receive. Leaves out Megatron's scatter-gather all-gather
// on NVLink after a receive without sequence parallelism (Narayanan et al. 2021 §4.1).
#include <fmt/compile.h>  // FMT_COMPILE: op and module names, formatted per op
#include <fmt/format.h>

#include "core/errors.h"
#include "program/lowering.h"

namespace fsdpx::lowering {

void Lowerer::run_pass(const PipeAction& a) {
  const int stage = chunk_stage(a.chunk, role_, plan_.parallelism.pp);
  switch (a.pass) {
    case PipePass::forward: forward_chunk(stage, a.micro_batch); return;
    case PipePass::backward: backward_chunk(stage, a.micro_batch, false); return;
    case PipePass::backward_input: backward_chunk(stage, a.micro_batch, true); return;
    case PipePass::backward_weight: weight_chunk(stage, a.micro_batch); return;
  }
}

void Lowerer::forward_chunk(int stage, int mb) {
  int input = stage > 0 ? recv(0, stage, mb) : -1;
  int out = -1;
  for (int s : stage_segments_[std::size_t(stage)]) {
    out = forward_segment(s, mb, input);
    input = -1;
  }
  if (stage + 1 < stages_) send(0, stage, mb, out);
}

void Lowerer::backward_chunk(int stage, int mb, bool split) {
  int input = stage + 1 < stages_ ? recv(1, stage, mb) : -1;
  const std::vector<int>& segs = stage_segments_[std::size_t(stage)];
  int out = -1;
  for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
    out = backward_segment(*it, mb, input, split);
    input = -1;
  }
  if (stage > 0) send(1, stage, mb, out);
}

void Lowerer::weight_chunk(int stage, int mb) {
  const std::vector<int>& segs = stage_segments_[std::size_t(stage)];
  for (auto it = segs.rbegin(); it != segs.rend(); ++it) weight_segment(*it, mb);
}

// A send or receive of virtual stage `stage` in `direction` (0: activations to the next stage, 1:
// activation gradients to the previous one). The message is the micro-batch's hidden states,
// [micro_batch, seq / cp, hidden] in the parameter dtype, sharded over TP: along the sequence with
// sequence parallelism (Megatron-LM's tensor_shape[0] //= tp), split by Megatron-LM's scatter-gather
// optimisation without it (Narayanan et al. 2021 §4.1).
Op Lowerer::p2p_op(OpKind kind, int direction, int stage, int mb) const {
  const bool activations = direction == 0, sending = kind == OpKind::send;
  const int peer_stage = activations == sending ? stage + 1 : stage - 1;
  const std::vector<int>& segs = stage_segments_[std::size_t(stage)];
  const auto& t = plan_.training;
  Op op;
  op.name = op_name(FMT_COMPILE("{}.{}.v{}.mb{}"), sending ? "send" : "recv", activations ? "act" : "grad", stage, mb);
  op.kind = kind;
  op.stream = sending ? (activations ? StreamKind::send_activations : StreamKind::send_grads)
                      : (activations ? StreamKind::recv_activations : StreamKind::recv_grads);
  op.collective = Collective::send_recv;
  op.payload = activations ? Payload::activations : Payload::activation_grads;
  op.micro_batch = mb;
  op.stage = stage;
  op.peer_role = stage_rank(peer_stage, plan_.parallelism.pp);
  op.segment = activations == sending ? segs.back() : segs.front();
  op.comm_bytes = double(t.micro_batch) * double(t.seq) / plan_.parallelism.cp * double(plan_.model.hidden) * pb_ /
                  plan_.parallelism.tp;
  op.group = pp_pair_group_;
  return op;
}

bool Lowerer::record_link(std::vector<OpRef>& links, int& count, const LinkKey& key, OpRef ref) {
  FSDP_CHECK(key.direction >= 0 && key.direction < 2 && key.sender >= 0 && key.sender < stages_ &&
                 key.micro_batch >= 0 && key.micro_batch < micro_batches_,
             "a pipeline message outside the step's stages or micro-batches");
  if (links.empty()) links.assign(std::size_t(2) * std::size_t(stages_) * std::size_t(micro_batches_), OpRef{-1, -1});
  OpRef& slot = links[(std::size_t(key.direction) * std::size_t(stages_) + std::size_t(key.sender)) *
                          std::size_t(micro_batches_) + std::size_t(key.micro_batch)];
  if (slot.role >= 0) return false;
  slot = ref;
  ++count;
  return true;
}

int Lowerer::recv(int direction, int stage, int mb) {
  const int id = add_op(p2p_op(OpKind::recv, direction, stage, mb));
  const int sender = direction == 0 ? stage - 1 : stage + 1;
  const bool fresh = record_link(recvs_, recv_count_, LinkKey{direction, sender, mb}, OpRef{role_, id});
  FSDP_CHECK(fresh, "a pipeline message received twice");
  return id;
}

void Lowerer::send(int direction, int stage, int mb, int after_op) {
  Op op = p2p_op(OpKind::send, direction, stage, mb);
  op.deps.push_back(after_op);
  const int id = add_op(std::move(op));
  const bool fresh = record_link(sends_, send_count_, LinkKey{direction, stage, mb}, OpRef{role_, id});
  FSDP_CHECK(fresh, "a pipeline message sent twice");
}

}  // namespace fsdpx::lowering
