// executor/runtime/model_skeleton.h — the model ops of the rank skeleton, written once for every backend:
// per micro-batch in flight a model from the backend's pool (micro_batch_pool.h), a segment's forward,
// backward and zero bubble's input and weight passes over its modules with the units' live parameters
// and gradients, the memory tracker's bytes of each pass (what the forward saves, the backward's working
// buffers, what an input pass keeps for the weight pass), the head's loss, LoRA's adapter buffers and
// what a pipeline send carries. A backend (CpuRankBackend, CudaRankBackendT) supplies the device half:
// its model pool, the stream its passes run on (CUDA: the current op's), what starts a pass (CUDA: a
// received message delivered, the loss's device slot) and how a message reaches its peer. A segment's
// bytes are its model's (ModelDriver::saved_bytes, weight_pass_bytes, backward_working_bytes). Leaves out receives (the CPU hands a message to the model at once, CUDA at the op that reads it).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "executor/runtime/micro_batch_pool.h"
#include "executor/runtime/rank_skeleton.h"
#include "executor/runtime/segment_bytes.h"

namespace fsdpx {

// Model: one micro-batch's activations (Transformer, CudaModelT); Param: its parameters' element type.
template <class Unit, class Comm, class Model, class Param>
class ModelSkeleton : public RankSkeleton<Unit, Comm> {
  using Base = RankSkeleton<Unit, Comm>;

 public:
  using Params = std::vector<const Param*>;  // per module: its unit's live parameters or null
  using Grads = std::vector<float*>;         // per module: its unit's fp32 gradients or null
  using Stream = typename Model::Stream;     // the model's (ModelDriver::Stream; the CPU's is empty)

  ModelSkeleton(const RuntimeProgram& rp, std::unique_ptr<Comm> world) : Base(rp, std::move(world)) {}

  void forward(int segment, int mb) final {
    const Segment& seg = segment_at(segment);
    const int last = seg.first_module + seg.module_count - 1;
    const bool head = last == this->rp_.layout.head_index();
    Model& model = models().at(mb);
    enter_forward(model, seg, mb, head);
    if (float* g = this->adapter_grads()) model.set_lora_buffers(adapter_params(), g);
    const Params p = live_params();
    for (int m = seg.first_module; m <= last; ++m) model.forward_module(m, p, pass_stream());
    models().forward_done(mb);
    this->mem_.alloc(MemCategory::activations, segment_bytes(model, segment).saved);
    if (head) keep_loss(model);
  }
  void begin_backward(int mb, double dloss) final { models().at(mb).begin_backward(float(dloss)); }
  void backward(int segment, int unit, int mb) final {
    const Segment& seg = segment_at(segment);
    Model& model = models().at(mb);
    const SegmentBufferBytes bytes = start_backward(model, segment, mb);
    const Params p = live_params();
    const Grads g = grad_ptrs(unit);
    for (int m = seg.first_module + seg.module_count - 1; m >= seg.first_module; --m)
      model.backward_module(m, p, g, pass_stream());
    models().backward_done(mb);
    this->mem_.free(MemCategory::transient, bytes.working);
    this->mem_.free(MemCategory::activations, bytes.saved);
  }
  // Zero bubble's B: the activations W reads stay in the model, so they are counted until W.
  void backward_input(int segment, int mb) final {
    const Segment& seg = segment_at(segment);
    Model& model = models().at(mb);
    const SegmentBufferBytes bytes = start_backward(model, segment, mb);
    const Params p = live_params();
    for (int m = seg.first_module + seg.module_count - 1; m >= seg.first_module; --m)
      model.backward_input_module(m, p, pass_stream());
    this->mem_.free(MemCategory::transient, bytes.working);
    // Measured after the passes: the CPU model allocates what it keeps on first use.
    this->mem_.alloc(MemCategory::activations, segment_bytes(model, segment).weight_pass);
  }
  void backward_weight(int segment, int unit, int mb) final {
    const Segment& seg = segment_at(segment);
    Model& model = models().at(mb);
    const Grads g = grad_ptrs(unit);
    for (int m = seg.first_module + seg.module_count - 1; m >= seg.first_module; --m)
      model.backward_weight_module(m, g, pass_stream());
    models().backward_done(mb);
    const SegmentBufferBytes bytes = segment_bytes(model, segment);
    this->mem_.free(MemCategory::activations, bytes.saved + bytes.weight_pass);
  }
  // Activations leave after the segment's last module, their gradient w.r.t. its input. A finished
  // micro-batch's model stays readable for the send of its input gradient (micro_batch_pool.h).
  void send(Payload payload, int segment, int mb, int peer, int tag) final {
    const Segment& seg = segment_at(segment);
    const Model& model = models().get(mb);
    const int last = seg.first_module + seg.module_count - 1;
    post_send(payload == Payload::activations ? model.output(last) : model.input_grad(), payload, peer, tag);
  }

 protected:
  virtual MicroBatchPool<Model>& models() = 0;
  // Whether a backward counts its model's working buffers as transient while it runs (the CPU); CUDA
  // counts each model's whole working set once, when it makes the model.
  virtual bool counts_working_per_pass() const { return true; }
  // The stream the model's module passes run on, in order (CUDA: the current op's).
  virtual Stream pass_stream() const = 0;
  // Before a segment's forward (`head`: it ends with the LM head) or backward (or input pass).
  virtual void enter_forward(Model&, const Segment&, int /*mb*/, bool /*head*/) {}
  virtual void enter_backward(Model&, const Segment&, int /*mb*/) {}
  // After the head's forward: the micro-batch's loss is the next one take_losses returns.
  virtual void keep_loss(Model& model) = 0;
  // The adapters' parameters the model reads (LoRA only: adapter_grads() is not null).
  virtual const Param* adapter_params() = 0;
  // Sends the message at `data` (pipeline_message_numel values) to global rank `peer`.
  virtual void post_send(const Param* data, Payload payload, int peer, int tag) = 0;

  const Segment& segment_at(int segment) const { return this->rp_.program.segments[std::size_t(segment)]; }
  // The bytes segment `segment` holds in `model`, summed over its modules.
  SegmentBufferBytes segment_bytes(const Model& model, int segment) const {
    const Segment& seg = segment_at(segment);
    SegmentBufferBytes bytes;
    for (int m = seg.first_module; m < seg.first_module + seg.module_count; ++m) {
      bytes.saved += double(model.saved_bytes(m));
      bytes.weight_pass += double(model.weight_pass_bytes(m));
    }
    if (counts_working_per_pass())
      bytes.working = double(model.backward_working_bytes(seg.first_module, seg.module_count));
    return bytes;
  }
  Params live_params() const { return this->units_.live_params(this->rp_.layout.num_modules()); }
  // The gradients of `unit`'s modules (all null where the unit has none, e.g. a frozen base under LoRA).
  Grads grad_ptrs(int unit) const {
    return this->units_.unit_grads(this->rp_, unit, [](Unit& u, int k) { return u.module_grads(k); });
  }

 private:
  // Before a backward or input pass: a received gradient delivered, the working buffers counted.
  SegmentBufferBytes start_backward(Model& model, int segment, int mb) {
    enter_backward(model, segment_at(segment), mb);
    const SegmentBufferBytes bytes = segment_bytes(model, segment);
    this->mem_.alloc(MemCategory::transient, bytes.working);
    return bytes;
  }
};

}  // namespace fsdpx
