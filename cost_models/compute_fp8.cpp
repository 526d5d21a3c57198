// cost_models/compute_fp8.cpp — fp8 linear layers as torchao.float8 and Transformer Engine run them
// (compute_fp8.h). Per linear Y = X·Wᵀ with X [T×k], W [n×k], dY [T×n]: the three GEMMs of the layer
// (Y, dX = dY·W, dW = dYᵀ·X) take fp8 operands and write bf16. Hopper's fp8 tensor cores take both
// operands K-major ("TN" only: cuBLASLt's fp8 layout requirement), so every operand is also needed in
// the transposed layout of the pass that contracts over its other dimension. Sources per recipe:
//  - torchao tensorwise (torchao/float8/float8_linear.py, float8_scaling_utils.py, float8_utils.py):
//    dynamic scale = max / amax(|x|) over the tensor, then the cast; input and weight e4m3, grad_output
//    e5m2. Under torch.compile the amax is one reduction pass and the cast one pass writing both
//    layouts; eager PyTorch runs abs, max, the fp32 multiply, clamp and the dtype cast as kernels.
//    With fp8 all-gather (torchao/float8/fsdp_utils.py) the weight arrives in fp8 with a scale
//    precomputed once per step for all weights (precompute_float8_dynamic_scale_for_fsdp).
//  - torchao rowwise ("all_axiswise", torchao/float8/config.py): scales per row, so the amax is a row
//    reduction inside the cast kernel (one pass), but each operand is cast again along its other axis
//    for the backward GEMM that contracts over it (X and dY for dW, W for dX); the backward GEMMs' outputs
//    are rescaled by a kernel of their own (add_rowwise_rescale).
//  - Transformer Engine delayed scaling (transformer_engine/pytorch/module/linear.py, cast_transpose):
//    one cast_transpose kernel per operand writes both layouts and records the amax; the scale comes
//    from the amax history, so no amax pass. Current scaling (Float8CurrentScaling) adds the amax pass.
//    Weights are cast once per step and reused by later micro-batches (is_first_microbatch).
#include "cost_models/compute_fp8.h"

#include <array>
#include <string>
#include <utility>

#include "core/errors.h"
#include "cost_models/compute_internal.h"

namespace fsdpx {

namespace {

using compute_detail::vector_kernel;

constexpr double kFp8Bytes = 1;
constexpr double kFp32Bytes = 4;

// The layer a GEMM kernel belongs to and its pass, from its name ("wq_dx" -> "wq", input_grad).
std::string layer_of(const std::string& name) {
  for (const char* suffix : {"_dx", "_dw"})
    if (name.size() > 3 && name.compare(name.size() - 3, 3, suffix) == 0) return name.substr(0, name.size() - 3);
  return name;
}

// GEMMs that share an input tensor (one cast serves them under torch.compile's CSE and in Transformer
// Engine's fused modules): the attention projections, and the MLP's gate and up projections.
std::string input_group(const std::string& layer) {
  if (layer == "wq" || layer == "wk" || layer == "wv" || layer == "qkv") return "attn_in";
  if (layer == "w1" || layer == "w3" || layer == "mlp_up") return "mlp_in";
  return layer;
}

// Whether the tensorwise amax of an activation or output gradient is computed by the kernel that produces
// the tensor: under torch.compile the amax reduction is fused into its pointwise producer (the norm, the
// SwiGLU product, RoPE's backward, the residual's gradient; Inductor fuses a pointwise producer into a
// consuming reduction and stores its output from the same kernel), so the amax costs no pass of its own.
// torchao's own roofline counts it so (pytorch/ao torchao/testing/float8/roofline_utils.py,
// get_tensor_memory_traffic_ovhd_s: fuse_with_prev for the input and grad_output roles, never for the
// weight, which arrives from FSDP's all-gather and has no producer in the compiled graph).
bool amax_in_producer(const LayerShape& s) {
  return s.fp8_fused_casts && s.fp8->scaling == Fp8Scaling::tensorwise;
}

// Casting `elems` bf16 elements to fp8 (`layouts` outputs: 2 when the transposed copy is written by the
// same kernel), with the recipe's amax: a separate reduction pass (tensorwise, current scaling) unless
// `amax_fused` (computed by the producer, above), inside the cast (rowwise, delayed scaling). Eager
// torchao (float8_utils.py tensor_to_amax, to_fp8_saturated): abs, max, .to(float32) * scale, clamp,
// .to(float8), each a kernel.
void add_cast(std::vector<KernelWork>& out, const std::string& name, double elems, int layouts,
              const LayerShape& s, bool amax_fused = false) {
  const double e = dtype_bytes(s.act_dtype);
  const Fp8Scaling sc = s.fp8->scaling;
  if (!s.fp8_fused_casts) {
    out.push_back(vector_kernel(name + "_abs", elems, elems * e, elems * e));
    out.push_back(vector_kernel(name + "_amax", elems, elems * e, 0));
    out.push_back(vector_kernel(name + "_scale", elems, elems * e, elems * kFp32Bytes));
    out.push_back(vector_kernel(name + "_clamp", 2 * elems, elems * kFp32Bytes, elems * kFp32Bytes));
    out.push_back(vector_kernel(name + "_cast", elems, elems * kFp32Bytes, elems * kFp8Bytes * layouts));
    return;
  }
  if ((sc == Fp8Scaling::tensorwise || sc == Fp8Scaling::current) && !amax_fused)
    out.push_back(vector_kernel(name + "_amax", 2 * elems, elems * e, 0));
  out.push_back(vector_kernel(name + "_cast", 2 * elems, elems * e, elems * kFp8Bytes * layouts));
}

// A fp8 copy re-laid out (transpose of an fp8 tensor already cast): read and write one byte each.
KernelWork fp8_transpose(const std::string& name, double elems) {
  return vector_kernel(name, 0, elems * kFp8Bytes, elems * kFp8Bytes);
}

// The GEMM with fp8 operands: A [a_elems] and B [b_elems] at one byte, the output at the activation size.
KernelWork fp8_gemm(KernelWork k, double a_elems, double b_elems, double out_elems, double e) {
  k.fp8 = true;
  k.bytes = (a_elems + b_elems) * kFp8Bytes + out_elems * e;
  return k;
}

bool te(const LayerShape& s) { return !fp8_is_torchao(s.fp8->scaling); }
bool rowwise(const LayerShape& s) { return s.fp8->scaling == Fp8Scaling::rowwise; }

// Whether a cast writes both layouts at once: Transformer Engine's cast_transpose and torch.compile's
// fused tensorwise casts; rowwise scales differ per axis, so each layout is its own cast.
int cast_layouts(const LayerShape& s) { return (te(s) || (s.fp8_fused_casts && !rowwise(s))) ? 2 : 1; }

// Whether the input of a GEMM group arrives in fp8 from the norm before it: Transformer Engine's
// LayerNormLinear passes its input quantizer to the norm (transformer_engine/pytorch/module/
// layernorm_linear.py, with_quantized_norm), and the norm kernel writes fp8 directly for delayed
// scaling, while current scaling runs the norm in bf16, then an amax pass and the cast
// (transformer_engine/pytorch/csrc/extensions/normalization.cpp rmsnorm_fwd, force_unfused_kernel).
bool norm_writes_fp8(const std::string& group, const LayerShape& s) {
  return s.stack.te_layernorm_linear && s.fp8->scaling == Fp8Scaling::delayed &&
         (group == "attn_in" || group == "mlp_in");
}

void forward_casts(std::vector<KernelWork>& out, const KernelWork& g, bool first_of_group, const LayerShape& s) {
  const double x = g.rows * g.in_features, w = g.out_features * g.in_features;
  const std::string layer = layer_of(g.name);
  const std::string group = input_group(layer);
  if (first_of_group && norm_writes_fp8(group, s)) {
    out.push_back(fp8_transpose("fp8_" + group + "_t", x));  // the column-wise copy for the weight gradient
  } else if (first_of_group) {
    add_cast(out, "fp8_cast_" + group, x, cast_layouts(s), s, amax_in_producer(s));
  }
  if (s.fp8->all_gather) return;  // gathered in fp8 with a precomputed scale
  const double share = te(s) ? s.fp8_weight_casts_per_micro_batch : 1.0;
  std::vector<KernelWork> w_casts;
  add_cast(w_casts, "fp8_cast_" + layer + "_weight", w, cast_layouts(s), s);
  for (KernelWork& k : w_casts) {
    k.flops *= share;
    k.bytes *= share;
    out.push_back(std::move(k));
  }
}

void input_grad_casts(std::vector<KernelWork>& out, const KernelWork& g, const LayerShape& s) {
  const double dy = g.rows * g.out_features, w = g.out_features * g.in_features;
  const std::string layer = layer_of(g.name);
  add_cast(out, "fp8_cast_" + layer + "_grad_out", dy, cast_layouts(s), s, amax_in_producer(s));
  if (rowwise(s)) {
    add_cast(out, "fp8_cast_" + layer + "_weight_t", w, 1, s);  // scaled along the other axis
  } else if (s.fp8->all_gather || cast_layouts(s) == 1) {
    out.push_back(fp8_transpose("fp8_" + layer + "_weight_t", w));  // the gathered fp8 weight, transposed
  }
}

void weight_grad_casts(std::vector<KernelWork>& out, const KernelWork& g, bool first_of_group, const LayerShape& s) {
  const double x = g.rows * g.in_features, dy = g.rows * g.out_features;
  const std::string layer = layer_of(g.name);
  if (rowwise(s)) {  // both operands scaled along the token axis: new casts from bf16
    add_cast(out, "fp8_cast_" + layer + "_grad_out_t", dy, 1, s);
    if (first_of_group) add_cast(out, "fp8_cast_" + input_group(layer) + "_t", x, 1, s);
  } else if (cast_layouts(s) == 1) {  // eager: transposed copies of the fp8 tensors
    out.push_back(fp8_transpose("fp8_" + layer + "_grad_out_t", dy));
    if (first_of_group) out.push_back(fp8_transpose("fp8_" + input_group(layer) + "_t", x));
  }
}

// torchao's rowwise recipe runs its backward GEMMs with slow accumulation (Float8LinearConfig's
// gemm_config_grad_input and gemm_config_grad_weight, use_fast_accum=False), for which PyTorch's rowwise
// CUTLASS kernel is so slow that torchao calls the tensorwise cuBLAS kernel with unit scales and multiplies
// the output by the row and column scales afterwards (pytorch/ao torchao/float8/float8_ops.py,
// addmm_float8_unwrapped, since pytorch/ao#1325); under torch.compile that is an extra kernel per GEMM
// (pytorch/ao#2184): it reads and writes the bf16 output.
void add_rowwise_rescale(std::vector<KernelWork>& out, const KernelWork& g, double out_elems, double e) {
  out.push_back(vector_kernel(g.name + "_fp8_rescale", out_elems, out_elems * e, out_elems * e));
}

}  // namespace

bool is_linear_gemm(const KernelWork& k) {
  static const std::array<const char*, 9> kLayers{"wq", "wk", "wv", "qkv", "attn_out", "w1", "w3", "mlp_up", "mlp_down"};
  if (!k.matmul || k.attention_seq > 0) return false;
  const std::string layer = layer_of(k.name);
  for (const char* l : kLayers)
    if (layer == l) return true;
  return false;
}

std::vector<KernelWork> apply_fp8_recipe(std::vector<KernelWork> ks, const LayerShape& s, Pass p) {
  if (!s.fp8) return ks;
  const double e = dtype_bytes(s.act_dtype);
  std::vector<KernelWork> out;
  std::string last_group;
  for (KernelWork& k : ks) {
    if (!is_linear_gemm(k)) {
      out.push_back(std::move(k));
      last_group.clear();
      continue;
    }
    FSDP_CHECK(k.rows > 0 && k.out_features > 0 && k.in_features > 0, "apply_fp8_recipe: GEMM without its shape");
    const std::string group = input_group(layer_of(k.name));
    const bool first = group != last_group;
    last_group = group;
    const double x = k.rows * k.in_features, w = k.out_features * k.in_features, dy = k.rows * k.out_features;
    switch (p) {
      case Pass::forward: forward_casts(out, k, first, s); out.push_back(fp8_gemm(std::move(k), x, w, dy, e)); break;
      case Pass::input_grad: input_grad_casts(out, k, s); out.push_back(fp8_gemm(std::move(k), dy, w, x, e)); break;
      case Pass::weight_grad: weight_grad_casts(out, k, first, s); out.push_back(fp8_gemm(std::move(k), dy, x, w, e)); break;
    }
    if (rowwise(s) && p != Pass::forward) add_rowwise_rescale(out, out.back(), p == Pass::input_grad ? x : w, e);
  }
  return out;
}

double fp8_linear_params_per_block(const ModelSpec& m) {
  const double h = double(m.hidden), q = double(m.q_dim()), kv = double(m.kv_heads * m.head_dim);
  const double mlp_matrices = m.ffn_kind == FfnKind::swiglu ? 3 : 2;
  return h * (q + 2 * kv) + q * h + mlp_matrices * h * double(m.ffn_hidden);
}

KernelWork fp8_weight_amax_kernel(double elems) {
  return vector_kernel("fp8_weight_amax", 2 * elems, elems * kFp32Bytes, 0);
}

double fp8_linear_gather_bytes(const std::optional<Fp8Settings>& fp8, double param_bytes) {
  return fp8 && fp8->all_gather ? kFp8Bytes : param_bytes;
}

}  // namespace fsdpx
