// executor/cpu_backend/host_unit_device.h — the CPU's device policy of an FSDP unit (model/fsdp_unit.h):
// host vectors, host communicators, fp32 everywhere. The fp32 master shard is the all-gather input (no
// 16-bit copy); under an fp16 plan the unit rounds its unsharded parameters and gradients to fp16 values
// (FSDP's MixedPrecision(param_dtype=float16) as the CPU emulates it). Leaves out a bf16 gradient
// reduction: the CPU reduces in fp32 (kReduceBf16 false), and everything is synchronous.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "executor/comm/communicator.h"
#include "executor/cpu/fp16.h"
#include "executor/runtime/adamw.h"
#include "executor/runtime/train_state.h"

namespace fsdpx {

struct HostUnitDevice {
  using Param = float;
  using Comm = Communicator;
  using Bf16 = std::uint16_t;  // unused: no bf16 reduction here
  template <class E>
  using Array = std::vector<E>;
  static constexpr bool kParamCopy = false;   // the fp32 master is the all-gather input
  static constexpr bool kReduceBf16 = false;  // gradients reduce in fp32
  static constexpr const char* kName = "FsdpUnit";
  static constexpr double param_bytes = 4.0;  // counted per unsharded parameter element
  struct Event {};                            // synchronous: a write is done when its call returns

  bool fp16 = false;  // fp16 plans: unsharded values rounded through _Float16

  template <class E>
  Array<E> alloc(std::int64_t n) const { return Array<E>(std::size_t(n)); }
  template <class E>
  void free(Array<E>& a) const { Array<E>().swap(a); }
  void record(Event&) const {}
  void wait(Event&) const {}
  void zero(float* p, std::int64_t n) const { std::fill(p, p + n, 0.0f); }
  template <class E>
  void copy(E* dst, const E* src, std::int64_t n) const { std::copy(src, src + n, dst); }

  void all_gather(Comm& c, const float* in, float* out, std::int64_t n) const { c.all_gather(in, out, n); }
  void reduce_scatter(Comm& c, const float* in, float* out, std::int64_t n) const { c.reduce_scatter(in, out, n); }
  void all_reduce(Comm& c, float* buf, std::int64_t n) const { c.all_reduce(buf, n); }
  void round_fp16(float* p, std::int64_t n) const {
    if (fp16) cpu::round_to_fp16(p, n);
  }
  // acc [n] += add [n]; *non_finite = 1 when an element of `add` is a NaN or an infinity.
  void accumulate_check_finite(float* acc, const float* add, std::int64_t n, int* non_finite) const {
    bool finite = true;
    for (std::int64_t i = 0; i < n; ++i) {
      finite = finite && std::isfinite(add[i]);
      acc[i] += add[i];
    }
    if (!finite) *non_finite = 1;
  }
  // fp32 AdamW (runtime/adamw.h); no parameter copy to write.
  void adamw(const OptimizerSettings& o, const AdamWStep& s, float* master, float* exp_avg, float* exp_avg_sq,
             const float* grad, Param*, std::int64_t n) const {
    adamw_update(o, s, master, exp_avg, exp_avg_sq, grad, n);
  }

  // The host state in and out (an empty moment loads as zeros, a fresh start); no parameter copy here.
  void upload(const UnitShardState& s, float* master, float* exp_avg, float* exp_avg_sq, Param*, std::int64_t) const {
    std::copy(s.params.begin(), s.params.end(), master);
    const auto load = [&](const std::vector<float>& v, float* d) {
      if (v.empty()) std::fill(d, d + s.params.size(), 0.0f);
      else std::copy(v.begin(), v.end(), d);
    };
    load(s.exp_avg, exp_avg);
    load(s.exp_avg_sq, exp_avg_sq);
  }
  void download(const float* master, const float* exp_avg, const float* exp_avg_sq, std::int64_t n,
                UnitShardState& s) const {
    s.params.assign(master, master + n);
    s.exp_avg.assign(exp_avg, exp_avg + n);
    s.exp_avg_sq.assign(exp_avg_sq, exp_avg_sq + n);
  }
};

}  // namespace fsdpx
