// tools/cmd_export_hf.cpp — `fsdpx export-hf --checkpoint DIR -o OUTDIR`: writes the trained weights of a
// checkpoint root (newest good step) or step directory as a Hugging Face checkpoint, OUTDIR/config.json
// and OUTDIR/model.safetensors (a LoRA run's merged model), which transformers' AutoModelForCausalLM loads
// (executor/checkpoint/hf_export.h; tools/check_hf_export.py checks it). Leaves out tokenizer files.
#include <cstdio>
#include <memory>
#include <string>

#include "executor/checkpoint/hf_export.h"
#include "executor/session/checkpoint_plan.h"
#include "executor/session/full_weights.h"
#include "tools/cmd_export_hf.h"

namespace fsdpx {
void run_export_hf(const ExportHfOptions& o) {
  TrainedWeights w = load_trained_weights(o.checkpoint);
  merge_trained_adapters(w);  // a LoRA run exports W + (alpha / r) B A
  const HfCheckpoint hf = to_hugging_face(w.plan.model, w.params);
  write_hugging_face(o.output, hf);
  std::printf("%s (step %lld): %zu tensors as %s, written to %s/config.json and %s/model.safetensors\n",
              w.checkpoint.c_str(), static_cast<long long>(w.step), hf.weights.tensors.size(),
              hf.config["architectures"][0].get<std::string>().c_str(), o.output.c_str(), o.output.c_str());
}

}  // namespace fsdpx
