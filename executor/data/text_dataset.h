// executor/data/text_dataset.h — the training data source: a token array (from a FSDPXTOK/raw token
// file, or plain text through the byte tokenizer) sampled as windows of seq+1 tokens. Sample i starts
// at splitmix64(seed, i) mod (n - seq), so a batch depends only on (seed, position): 1 rank and N
// ranks see the same samples, and a saved position resumes bit-identically. Leaves out epochs without
// replacement, document boundaries and packing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "executor/data/token_file.h"
#include "executor/runtime/train_state.h"

namespace fsdpx {

class TokenDataset final : public DataSource {
 public:
  // `origin` names the file in messages; `vocab` bounds the tokens (ConfigError naming the file).
  TokenDataset(std::vector<std::int32_t> tokens, std::uint64_t seed, std::int64_t vocab, std::string origin);

  void global_batch(const DataPosition& position, std::int64_t global_batch, std::int64_t seq,
                    std::vector<std::int32_t>& tokens) override;
  std::string describe() const override;

  // First token of sample `index` for sequences of `seq` tokens (+1 target).
  std::int64_t sample_offset(std::uint64_t index, std::int64_t seq) const;
  std::int64_t size() const { return std::int64_t(tokens_.size()); }

 private:
  std::vector<std::int32_t> tokens_;
  std::uint64_t seed_;
  std::string origin_;
  std::string kind_;
};

struct DataOptions {
  std::string path;                     // empty: the shipped text (default_text_path)
  std::optional<TokenDType> raw_dtype;  // a header-less token file of this dtype
  std::uint64_t seed = 0;
  std::int64_t vocab = 0;  // the model's vocabulary
};

// FSDPXTOK file -> tokens; raw_dtype -> raw tokens; anything else -> text through the byte tokenizer.
std::shared_ptr<TokenDataset> open_dataset(const DataOptions& o);

// The shipped public-domain text (data/kjv-genesis.txt), searched in $FSDPX_DATA_DIR,
// <binary>/../share/fsdpx/data, <binary>/data and the source tree; ConfigError when absent.
std::string default_text_path();

// SplitMix64 (Steele, Lea, Flood 2014, "Fast Splittable Pseudorandom Number Generators", OOPSLA).
std::uint64_t splitmix64(std::uint64_t x);

}  // namespace fsdpx
