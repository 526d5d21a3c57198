// executor/data/byte_tokenizer.cpp — UTF-8 bytes to tokens and back.
#include "executor/data/byte_tokenizer.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

std::vector<std::int32_t> byte_tokens(std::string_view text) {
  std::vector<std::int32_t> tokens;
  tokens.reserve(text.size());
  for (char c : text) tokens.push_back(static_cast<std::int32_t>(static_cast<unsigned char>(c)));
  return tokens;
}

std::string bytes_from_tokens(const std::vector<std::int32_t>& tokens) {
  std::string text;
  text.reserve(tokens.size());
  for (std::int32_t t : tokens) {
    FSDP_CHECK(t >= 0 && t < kByteVocab, "bytes_from_tokens: token is not a byte");
    text.push_back(static_cast<char>(static_cast<unsigned char>(t)));
  }
  return text;
}

void check_byte_vocab(std::int64_t vocab, const std::string& file) {
  if (vocab < kByteVocab)
    throw ConfigError(fmt::format("{}: plain text is read with the byte tokenizer (tokens 0..255), but the "
                                  "model's vocabulary is {}; use a model with vocab >= 256 or a token file",
                                  file, vocab));
}

}  // namespace fsdpx
