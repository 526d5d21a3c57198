// executor/model/module_driver.h — the device-neutral half of a model driver, written once for the CPU
// reference Transformer (model/transformer.h) and the CUDA model (cuda_backend/cuda_model.h): the module
// order (embedding, blocks, final norm, head), the protocol of one micro-batch (forward in order, backward
// in reverse, pipeline resumes, zero bubble's input pass before its weight pass), which blocks recompute,
// and the per-module parameter and gradient pointer lookups. It runs no kernel: each backend's model asks
// it which module m is and whether the call is allowed, then runs its own kernels (llm.c's one readable
// step, with the device calls left to the backend). Leaves out activations, which each backend owns.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/plan_settings.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

// Module m of a ParamLayout: 0 embedding, 1..L blocks, L+1 final norm, L+2 head. program/parallel_comms.h
// names the same split ModuleKind from a Plan (core/plan.h, which the executor's model does not include).
enum class ModulePart { embedding, block, final_norm, head };

// P: the element type of parameter buffers, G: of gradient buffers (the CPU model: both Real; the CUDA
// model: its 16-bit T and fp32).
template <class P, class G>
class ModuleDriver {
 public:
  // who: the model's name in check messages; recompute: one mode per block, or empty (none anywhere).
  ModuleDriver(std::string who, ParamLayout layout, std::vector<RecomputeMode> recompute)
      : who_(std::move(who)), layout_(std::move(layout)), recompute_(std::move(recompute)) {
    FSDP_CHECK(recompute_.empty() || std::int64_t(recompute_.size()) == layout_.layers,
               who_ + ": need one recompute mode per block");
    weight_pending_.assign(std::size_t(layout_.num_modules()), 0);
  }

  const ParamLayout& layout() const { return layout_; }
  const std::string& who() const { return who_; }
  int num_modules() const { return layout_.num_modules(); }
  ModulePart part(int m) const {
    if (m == ParamLayout::embedding_index()) return ModulePart::embedding;
    if (m == layout_.final_norm_index()) return ModulePart::final_norm;
    if (m == layout_.head_index()) return ModulePart::head;
    return ModulePart::block;
  }
  // Full recompute keeps only the block input and re-runs its forward in backward; selective is treated
  // as none by both backends (see ModelOptionsT::recompute, model_options.h).
  bool recomputes(std::int64_t block) const {
    return !recompute_.empty() && recompute_[std::size_t(block)] == RecomputeMode::full;
  }

  // Module m's buffer (checked present) and one of its tensors by name (null when the module lacks it).
  const P* module_base(std::span<const P* const> params, int m) const { return base(params, m, "buffer"); }
  G* module_base(std::span<G* const> grads, int m) const { return base(grads, m, "gradient buffer"); }
  const P* tensor(std::span<const P* const> params, int m, const char* name) const {
    return at(module_base(params, m), m, name);
  }
  G* tensor(std::span<G* const> grads, int m, const char* name) const { return at(module_base(grads, m), m, name); }

  // Protocol of one micro-batch: each call checks that module m may run now and records that it did.
  void start_batch() { next_forward_ = 0, next_backward_ = -1; }
  void enter_forward(int m) {
    FSDP_CHECK(m == next_forward_, fmt::format("{}: forward of module {} out of order", who_, m));
    next_forward_ = m + 1;
  }
  void begin_backward() {
    FSDP_CHECK(next_forward_ == num_modules(), who_ + ": begin_backward before the forward finished");
    next_backward_ = layout_.head_index();
  }
  void enter_backward(int m) {
    FSDP_CHECK(m == next_backward_, fmt::format("{}: backward of module {} out of order", who_, m));
    next_backward_ = m - 1;
  }
  void enter_input_pass(int m) { enter_backward(m), weight_pending_[std::size_t(m)] = 1; }
  void enter_weight_pass(int m) {
    FSDP_CHECK(m >= 0 && m < num_modules() && weight_pending_[std::size_t(m)],
               fmt::format("{}: weight pass of module {} without its input pass", who_, m));
    weight_pending_[std::size_t(m)] = 0;
  }
  // Pipeline stages: the forward resumes at module m (a block or the final norm) from the previous
  // stage's output; module m's output goes on; the backward resumes at m from the next stage's gradient.
  void resume_forward(int m) {
    FSDP_CHECK(m > 0 && m <= layout_.final_norm_index(), fmt::format("{}: no stage starts at module {}", who_, m));
    next_forward_ = m;
  }
  void check_output(int m) const {
    FSDP_CHECK(m >= 0 && m < layout_.final_norm_index() && m < next_forward_,
               fmt::format("{}: module {} has no output to hand on", who_, m));
  }
  void resume_backward(int m) {
    FSDP_CHECK(m >= 0 && m < layout_.final_norm_index() && m < next_forward_,
               fmt::format("{}: no stage's backward starts at module {}", who_, m));
    next_backward_ = m;
  }

 private:
  template <class E>
  E* base(std::span<E* const> ptrs, int m, const char* what) const {
    FSDP_CHECK(std::int64_t(ptrs.size()) == num_modules(), who_ + ": need one pointer per module");
    E* b = ptrs[std::size_t(m)];
    FSDP_CHECK(b != nullptr,
               fmt::format("{}: {} of module {} not provided", who_, what, layout_.modules[std::size_t(m)].name));
    return b;
  }
  template <class E>
  E* at(E* base, int m, const char* name) const {
    const TensorSlot* t = layout_.modules[std::size_t(m)].find(name);
    return t ? base + t->offset : nullptr;
  }

  std::string who_;
  ParamLayout layout_;
  std::vector<RecomputeMode> recompute_;
  std::vector<char> weight_pending_;            // per module: input pass ran, weight pass not yet
  int next_forward_ = -1, next_backward_ = -1;  // -1: not allowed
};

}  // namespace fsdpx
