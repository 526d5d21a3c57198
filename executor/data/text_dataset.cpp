// executor/data/text_dataset.cpp — windows of a token array, chosen by a counter-based hash.
#include "executor/data/text_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/errors.h"
#include "core/input_file.h"
#include "executor/data/byte_tokenizer.h"

#ifndef FSDPX_SOURCE_DATA_DIR
#define FSDPX_SOURCE_DATA_DIR ""
#endif

namespace fsdpx {

namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultText = "kjv-genesis.txt";

// Plain text has no NUL byte: a file with one in its first 64 KiB is binary (a token array without
// --data-dtype, an archive, /dev/zero's bytes), refused before its tokens are built.
void check_plain_text(const std::string& path, const std::string& text) {
  const std::size_t head = std::min<std::size_t>(text.size(), 64 << 10);
  if (const auto at = text.find('\0'); at != std::string::npos && at < head)
    throw ConfigError(fmt::format("{}: not plain text (a NUL byte at offset {}): pass a FSDPXTOK token file, or "
                                  "--data-dtype uint16|uint32 for a raw token array", path, at));
}

std::string read_text(const std::string& path) {
  std::string text = read_input_file(path, "data file", kMaxDataFileBytes);
  check_plain_text(path, text);
  return text;
}

}  // namespace

std::uint64_t splitmix64(std::uint64_t x) {
  // Constants of SplitMix64 (Steele et al. 2014; also java.util.SplittableRandom).
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

TokenDataset::TokenDataset(std::vector<std::int32_t> tokens, std::uint64_t seed, std::int64_t vocab,
                           std::string origin)
    : tokens_(std::move(tokens)), seed_(seed), origin_(std::move(origin)) {
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    if (tokens_[i] < 0 || tokens_[i] >= vocab)
      throw ConfigError(fmt::format("{}: token {} at index {} is outside the model's vocabulary [0, {})", origin_,
                                    tokens_[i], i, vocab));
}

std::int64_t TokenDataset::sample_offset(std::uint64_t index, std::int64_t seq) const {
  const std::int64_t windows = size() - seq;  // start offsets o with o + seq + 1 <= n
  FSDP_CHECK(windows >= 1, "sample_offset: data shorter than one sample");
  // Hash the seed first so that seeds s and s+1 do not give shifted copies of one sequence.
  return std::int64_t(splitmix64(splitmix64(seed_) ^ index) % std::uint64_t(windows));
}

void TokenDataset::global_batch(const DataPosition& position, std::int64_t global_batch, std::int64_t seq,
                                std::vector<std::int32_t>& tokens) {
  if (size() < seq + 1)
    throw ConfigError(fmt::format("{}: {} tokens, fewer than one sample of seq + 1 = {} tokens", origin_, size(),
                                  seq + 1));
  const std::size_t sample = std::size_t(seq + 1);
  tokens.resize(std::size_t(global_batch) * sample);
  for (std::int64_t b = 0; b < global_batch; ++b) {
    const std::int64_t off = sample_offset(position.next_sample + std::uint64_t(b), seq);
    std::copy_n(tokens_.begin() + off, sample, tokens.begin() + std::ptrdiff_t(std::size_t(b) * sample));
  }
}

std::string TokenDataset::describe() const {
  return fmt::format("{} ({} tokens, random windows, seed {})", origin_, size(), seed_);
}

std::shared_ptr<TokenDataset> open_dataset(const DataOptions& o) {
  const std::string path = o.path.empty() ? default_text_path() : o.path;
  if (is_token_file(path) || o.raw_dtype)
    return std::make_shared<TokenDataset>(read_token_file(path, o.raw_dtype), o.seed, o.vocab, path);
  check_byte_vocab(o.vocab, path);
  return std::make_shared<TokenDataset>(byte_tokens(read_text(path)), o.seed, o.vocab, path + " (text, bytes)");
}

std::string default_text_path() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("FSDPX_DATA_DIR"); env != nullptr && *env != '\0') dirs.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path() / ".." / "share" / "fsdpx" / "data");
    dirs.push_back(exe.parent_path() / "data");
  }
  if (*FSDPX_SOURCE_DATA_DIR != '\0') dirs.emplace_back(FSDPX_SOURCE_DATA_DIR);
  std::vector<std::string> searched;
  for (const auto& d : dirs) {
    const fs::path p = (d / kDefaultText).lexically_normal();
    if (fs::is_regular_file(p, ec)) return p.string();
    searched.push_back(p.string());
  }
  throw ConfigError(fmt::format("no --data given and the default text {} was not found (searched {}); pass "
                                "--data FILE (plain text or a FSDPXTOK token file)",
                                kDefaultText, fmt::join(searched, ", ")));
}

}  // namespace fsdpx
