// executor/model/op_profiler.h — per-op timing hooks of the CPU model. Op names are the simulator's
// kernel names (cost_models/compute.h: "attn_norm", "qkv", "rope", "attn_core", "attn_out", "mlp_up",
// "mlp_act", "mlp_down", "embed", "final_norm", "lm_head", "loss", and the "_dx"/"_dw"/"_bwd" backward
// names) so measured profiles line up with simulated ops; TP/CP collectives inside a module under
// model_parallel.h's names. Leaves out aggregation: the sink decides.
#pragma once

#include <chrono>
#include <string_view>

namespace fsdpx {

class OpProfiler {
 public:
  virtual ~OpProfiler() = default;
  // One op of module `module` (ParamLayout index) took `time_s` wall seconds.
  virtual void record(std::string_view op, int module, double time_s) = 0;
  // One tensor- or context-parallel collective inside a module (named by model_parallel.h) took
  // `time_s` wall seconds.
  virtual void record_collective(std::string_view /*name*/, double /*time_s*/) {}
};

// Times its scope and reports it to `profiler` once, when it ends; costs nothing but a branch when profiler
// is null. An op may be timed in pieces (paused around a collective it waits for, which the profile times
// on its own): it then reports their sum.
class PausableOp {
 public:
  PausableOp(OpProfiler* profiler, std::string_view op, int module) : profiler_(profiler), op_(op), module_(module) {
    resume();
  }
  ~PausableOp() {
    pause();
    if (profiler_) profiler_->record(op_, module_, total_s_);
  }
  PausableOp(const PausableOp&) = delete;
  PausableOp& operator=(const PausableOp&) = delete;
  void pause() {
    if (!profiler_ || !running_) return;
    total_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    running_ = false;
  }
  void resume() {
    if (!profiler_ || running_) return;
    start_ = std::chrono::steady_clock::now();
    running_ = true;
  }

 private:
  OpProfiler* profiler_;
  std::string_view op_;
  int module_;
  std::chrono::steady_clock::time_point start_;
  double total_s_ = 0;
  bool running_ = false;
};

// A scope timed whole: the same timer, never paused.
using ScopedOp = PausableOp;

}  // namespace fsdpx
