// tools/cmd_sample.cpp — `fsdpx sample --checkpoint DIR [--prompt TEXT] [--tokens N] [--temperature T]
// [--seed S] [--format text|json]`: generates text from a model trained by `fsdpx run --checkpoint-dir
// DIR` (its newest good checkpoint, or the step directory given). Tokens are bytes, as in the shipped
// text dataset (executor/data/byte_tokenizer.h); temperature 0 is greedy. The context window is the
// plan's training sequence length. Leaves out BPE tokenizers and batched generation.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "executor/data/byte_tokenizer.h"
#include "executor/model/sampler.h"
#include "executor/session/checkpoint_plan.h"
#include "executor/session/full_weights.h"
#include "tools/cli_names.h"
#include "tools/cmd_sample.h"
#include "tools/main_output.h"

namespace fsdpx {
void run_sample(const SampleCliOptions& o) {
  if (o.prompt.empty()) throw ConfigError("command line: --prompt: must not be empty");
  TrainedWeights w = load_trained_weights(o.checkpoint);
  merge_trained_adapters(w);  // a LoRA run samples its adapted model
  check_byte_vocab(w.plan.model.vocab, o.checkpoint + "/" + kCheckpointPlanFile);
  SampleOptions s = o.sample;
  s.window = w.plan.training.seq;
  s.vocab_limit = kByteVocab;  // the model never saw other ids
  const std::vector<std::int32_t> prompt = byte_tokens(o.prompt);
  std::vector<float> probs;
  const std::vector<std::int32_t> out = sample_tokens(w.plan.model, w.params, prompt, s, &probs);
  if (o.format == OutputFormat::json) {
    const nlohmann::json j{{"checkpoint", w.checkpoint},       {"step", w.step},
                           {"model", w.plan.model.name},       {"temperature", s.temperature},
                           {"seed", s.seed},                   {"prompt_tokens", prompt},
                           {"tokens", out},                    {"token_probs", probs},
                           {"text", bytes_from_tokens(out)}};
    emit_main_output(o.out, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    return;
  }
  emit_main_output(o.out, o.prompt + bytes_from_tokens(out) + "\n");
}

}  // namespace fsdpx
