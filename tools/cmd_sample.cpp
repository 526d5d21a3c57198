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
#include "tools/cli_options.h"
#include "tools/commands.h"
#include "tools/main_output.h"

namespace fsdpx {
namespace {

struct SampleCliOptions {
  std::string checkpoint;
  std::string prompt = "In the beginning";
  SampleOptions sample;
  OutputFormat format = OutputFormat::text;
  std::string out;  // -o
};

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

}  // namespace

void setup_sample(CLI::App& app) {
  auto o = std::make_shared<SampleCliOptions>();
  CLI::App* sub = app.add_subcommand("sample", "Generate text from a CPU-trained checkpoint (byte tokens)");
  sub->add_option("--checkpoint", o->checkpoint, "Checkpoint root of fsdpx run --checkpoint-dir, or one step-NNNNNN")
      ->required();
  sub->add_option("--prompt", o->prompt, "Text to continue (default \"In the beginning\")");
  sub->add_option("--tokens", o->sample.tokens, "Bytes to generate (default 200)")->check(kPositive);
  sub->add_option("--temperature", o->sample.temperature, "0: greedy; else softmax(logits / T) (default 0.8)")
      ->check(kNonNegative);
  sub->add_option("--seed", o->sample.seed, "Seed of the sampling generator (default 0)");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json (tokens and text)");
  add_main_output_option(sub, o->out);
  sub->callback([o] { run_sample(*o); });
}

}  // namespace fsdpx
