// executor/model/replicated_grads.h — under sequence parallelism each tp rank sees its token shard, so the
// gradients of the tensors every tp rank holds whole (norm scales: TensorSlot::tp_replicated) are
// partial: one module's part of a micro-batch is summed over tp in one all-reduce (Megatron-LM,
// megatron/core/distributed/finalize_model_grads.py, _allreduce_layernorm_grads). Before the module's
// backward the accumulated gradients are set aside and zeroed; after it the sum is added back. Written
// once over the device's ops (the CPU Transformer's host vectors, transformer.h; the CUDA model's device
// buffers on its stream, cuda_backend/cuda_replicated_grads.h). Leaves out bucketing several modules' sums.
//
// Ops: Elem (the gradient's element), Buf (a buffer of them), Ctx, and static resize(Buf&, n), bytes(Buf),
// data(Buf&), copy(ctx, dst, src, n), zero(ctx, p, n), add(ctx, dst, src, n) (dst += src) and
// sum_over_tp(ctx, p, n) (an all-reduce over the tp group).
#pragma once

#include <algorithm>
#include <cstdint>

#include "executor/runtime/param_layout.h"

namespace fsdpx {

template <class Ops>
class ReplicatedGradSum {
 public:
  using E = typename Ops::Elem;
  // Room for the largest module's replicated tensors (none: nothing to do).
  void allocate(const ParamLayout& layout) {
    std::int64_t most = 0;
    for (const ModuleLayout& m : layout.modules) most = std::max(most, elems(m));
    Ops::resize(keep_, most), Ops::resize(part_, most);
  }
  std::int64_t bytes() const { return Ops::bytes(keep_) + Ops::bytes(part_); }

  // grads: the module's gradient buffer. Sets the replicated tensors' gradients aside and zeroes them.
  void before(const ModuleLayout& m, E* grads, const typename Ops::Ctx& ctx) {
    for_each(m, [&](const TensorSlot& t, std::int64_t at) {
      Ops::copy(ctx, Ops::data(keep_) + at, grads + t.offset, t.numel());
      Ops::zero(ctx, grads + t.offset, t.numel());
    });
  }
  // Sums the module's new partial gradients over tp and adds back what was set aside.
  void after(const ModuleLayout& m, E* grads, const typename Ops::Ctx& ctx) {
    const std::int64_t n = elems(m);
    if (n == 0) return;
    E* part = Ops::data(part_);
    for_each(m, [&](const TensorSlot& t, std::int64_t at) { Ops::copy(ctx, part + at, grads + t.offset, t.numel()); });
    Ops::sum_over_tp(ctx, part, n);
    for_each(m, [&](const TensorSlot& t, std::int64_t at) {
      Ops::copy(ctx, grads + t.offset, part + at, t.numel());
      Ops::add(ctx, grads + t.offset, Ops::data(keep_) + at, t.numel());
    });
  }

 private:
  static std::int64_t elems(const ModuleLayout& m) {
    std::int64_t n = 0;
    for (const TensorSlot& t : m.tensors) n += t.tp_replicated ? t.numel() : 0;
    return n;
  }
  // f(slot, offset of the slot in the packed buffers) over the replicated tensors in layout order.
  template <class F>
  static void for_each(const ModuleLayout& m, F f) {
    std::int64_t at = 0;
    for (const TensorSlot& t : m.tensors)
      if (t.tp_replicated) f(t, at), at += t.numel();
  }

  typename Ops::Buf keep_, part_;  // [replicated elements of the largest module]
};

}  // namespace fsdpx
