// executor/data/byte_tokenizer.h — the byte-level tokenizer: each UTF-8 byte of a text is one token
// 0..255 (as in ByT5, Xue et al. 2022, arXiv:2105.13626, minus its special-token offset), so any model
// with a vocabulary of at least 256 can train on plain text with no vocabulary file. Leaves out BPE.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fsdpx {

inline constexpr std::int64_t kByteVocab = 256;

std::vector<std::int32_t> byte_tokens(std::string_view text);
// Inverse of byte_tokens; FSDP_CHECKs that every token is a byte.
std::string bytes_from_tokens(const std::vector<std::int32_t>& tokens);
// Throws ConfigError "<file>: ..." when a model's vocabulary cannot hold byte tokens.
void check_byte_vocab(std::int64_t vocab, const std::string& file);

}  // namespace fsdpx
