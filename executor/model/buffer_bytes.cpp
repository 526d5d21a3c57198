// executor/model/buffer_bytes.cpp — the CPU model's buffer bytes per segment (see buffer_bytes.h).
#include "executor/model/buffer_bytes.h"

#include <cstdint>

#include "executor/model/block.h"

namespace fsdpx {

namespace {

template <class T>
double vec_bytes(const std::vector<T>& v) {
  return double(v.size()) * double(sizeof(T));
}

// Bytes of the CPU model's per-block buffers (block.h), measured on allocated buffers.
struct BlockBufferBytes {
  double acts = 0, scratch = 0;
  double kept = 0, kept_acts = 0;  // split backward: the input pass's output gradients; a recomputing block's acts
};
BlockBufferBytes block_buffer_bytes(const BlockDims& d, const ModelParallel& par) {
  BlockActs<float> a;
  a.allocate(d);
  BlockScratch<float> s;
  s.allocate(d, par);
  BlockBufferBytes b;
  for (const auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.att, &a.atty, &a.x_mid, &a.ln2, &a.ln2_mean,
                        &a.ln2_rstd, &a.fc, &a.fc_act})
    b.acts += vec_bytes(*v);
  for (const auto* v : {&s.dln, &s.datty, &s.dqkv, &s.dfc, &s.dfc_act, &s.wide, &s.qkv_part, &s.qkv_all})
    b.scratch += vec_bytes(*v);
  BlockWeightInputs<float> w;
  w.allocate(d);
  for (const auto* v : {&w.d_out, &w.d_mid, &w.dfc, &w.dqkv, &w.dln2, &w.dln1}) b.kept += vec_bytes(*v);
  for (const auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.atty, &a.x_mid, &a.ln2, &a.ln2_mean, &a.ln2_rstd,
                        &a.fc_act})
    b.kept_acts += vec_bytes(*v);  // what Transformer keeps of a recomputing block for its weight pass
  return b;
}

}  // namespace

// Transformer's buffers, each counted with the module whose backward uses it last (the simulator's
// attribution, cost_models/activations.cpp): token ids and targets (int32 each) with the embedding; each
// block's input (resid_[i]) plus its BlockActs (only the input when it recomputes); the final norm's
// input, output and statistics; probabilities [N, V]. Backward works in the block scratch, the
// residual-gradient pair and, for recomputing blocks, the shared BlockActs and a discarded output.
// Under zero-bubble's split the input pass keeps each block's BlockWeightInputs (and a recomputing
// block's activations that its weight pass reads) and the embedding output's gradient.
std::vector<SegmentBufferBytes> cpu_segment_buffer_bytes(const RuntimeProgram& rp, const ParamLayout& layout,
                                                          const ModelParallel& par) {
  const RunSettings& run = rp.settings;
  const BlockDims d = make_block_dims(run.model, run.training.micro_batch, run.training.seq, par);
  const BlockBufferBytes bb = block_buffer_bytes(d, par);
  const double f32 = 4, nc = double(d.n * d.c) * f32, nlc = double(d.n_local * d.c) * f32;
  const double ids = 2.0 * double(d.n) * double(sizeof(std::int32_t));  // Transformer's tokens_, targets_
  const double norm_stats = (d.layernorm ? 2.0 : 1.0) * double(d.n_local) * f32;
  std::vector<SegmentBufferBytes> out;
  for (const Segment& s : rp.program.segments) {
    SegmentBufferBytes b{0, nlc + nc, 0};  // working: dres [N_local, C], dlnf [N, C]
    bool block = false, recompute = false;
    for (int m = s.first_module; m < s.first_module + s.module_count; ++m) {
      if (m == 0) b.saved += ids, b.weight_pass += nc;
      else if (m == layout.final_norm_index()) b.saved += nlc + nc + norm_stats;
      else if (m == layout.head_index()) b.saved += double(d.n * (run.model.vocab / par.tp)) * f32;
      else {
        const bool rc = rp.program.recompute[std::size_t(m - 1)] == RecomputeMode::full;
        b.saved += nlc + (rc ? 0.0 : bb.acts);
        b.weight_pass += bb.kept + (rc ? bb.kept_acts : 0.0);
        block = true;
        recompute = recompute || rc;
      }
    }
    if (block) b.working += bb.scratch;
    if (recompute) b.working += bb.acts + nlc;
    out.push_back(b);
  }
  return out;
}

}  // namespace fsdpx
