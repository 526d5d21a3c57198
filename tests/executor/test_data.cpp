// tests/executor/test_data.cpp — token files, the byte tokenizer and the sampled dataset: round trips,
// truncation and size errors naming the file, and determinism in (seed, position) only, so that any
// split of a global batch across ranks sees the same samples.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "executor/data/byte_tokenizer.h"
#include "executor/data/text_dataset.h"
#include "executor/data/token_file.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("fsdpx-test-data-" + std::to_string(::getpid()) + "-" + name);
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::int32_t> ramp(int n, int mod) {
  std::vector<std::int32_t> t(std::size_t(n), 0);
  for (int i = 0; i < n; ++i) t[std::size_t(i)] = (i * 7 + 3) % mod;
  return t;
}

TEST_CASE("token file round trip in uint16 and uint32, with the header laid out as documented") {
  for (TokenDType dt : {TokenDType::u16, TokenDType::u32}) {
    const fs::path p = temp_path(std::string(token_dtype_name(dt)) + ".tok");
    const auto tokens = ramp(1000, dt == TokenDType::u16 ? 65536 : 100000);
    write_token_file(p.string(), tokens, dt);
    // 24-byte header + count x bytes per token, independent of the reader.
    CHECK(fs::file_size(p) == 24 + 1000 * std::uintmax_t(token_dtype_bytes(dt)));
    CHECK(is_token_file(p.string()));
    CHECK(read_token_file(p.string(), std::nullopt) == tokens);
    fs::resize_file(p, fs::file_size(p) - 1);
    const std::string msg = error_of([&] { read_token_file(p.string(), std::nullopt); });
    INFO(msg);
    CHECK(msg.find(p.string()) != std::string::npos);
    CHECK(msg.find("1000 tokens") != std::string::npos);
    fs::remove(p);
  }
}

TEST_CASE("raw token files need a dtype and a whole number of tokens") {
  const fs::path p = temp_path("raw.bin");
  {
    std::ofstream f(p, std::ios::binary);
    const unsigned char bytes[] = {0x01, 0x00, 0x02, 0x01, 0xff, 0xff};  // 1, 258, 65535 as uint16 LE
    f.write(reinterpret_cast<const char*>(bytes), sizeof bytes);
  }
  CHECK(error_of([&] { read_token_file(p.string(), std::nullopt); }).find("--data-dtype") != std::string::npos);
  CHECK(read_token_file(p.string(), TokenDType::u16) == std::vector<std::int32_t>{1, 258, 65535});
  CHECK(error_of([&] { read_token_file(p.string(), TokenDType::u32); }).find("whole number") != std::string::npos);
  fs::remove(p);
}

TEST_CASE("byte tokenizer: UTF-8 bytes, round trip, vocabulary check names the file") {
  // "é" is U+00E9, encoded in UTF-8 as 0xC3 0xA9 (RFC 3629).
  CHECK(byte_tokens("a\xc3\xa9") == std::vector<std::int32_t>{97, 0xC3, 0xA9});
  const std::string text = "In the beginning\n\xe2\x82\xac";
  CHECK(bytes_from_tokens(byte_tokens(text)) == text);
  CHECK_NOTHROW(check_byte_vocab(256, "x.txt"));
  const std::string msg = error_of([] { check_byte_vocab(255, "corpus.txt"); });
  CHECK(msg.find("corpus.txt") != std::string::npos);
  CHECK(msg.find("255") != std::string::npos);
}

TEST_CASE("splitmix64 matches the published first output for seed 0") {
  // SplitMix64 seeded with 0: first output 0xe220a8397b1dcdaf (reference C code by Vigna, prng.di.unimi.it).
  CHECK(splitmix64(0) == 0xe220a8397b1dcdafULL);
}

TEST_CASE("dataset samples are windows of the source, deterministic in (seed, position) only") {
  const auto src = ramp(5000, 256);
  TokenDataset a(src, 7, 256, "ramp"), b(src, 7, 256, "ramp"), c(src, 8, 256, "ramp");
  const std::int64_t seq = 32;
  std::vector<std::int32_t> ba, bb, bc, half1, half2;
  a.global_batch({40}, 8, seq, ba);
  b.global_batch({40}, 8, seq, bb);
  c.global_batch({40}, 8, seq, bc);
  CHECK(ba == bb);
  CHECK(ba != bc);
  // Any split of the global batch (1 rank: 8 samples; 2 ranks: 4 + 4) yields the same samples.
  a.global_batch({40}, 4, seq, half1);
  a.global_batch({44}, 4, seq, half2);
  half1.insert(half1.end(), half2.begin(), half2.end());
  CHECK(half1 == ba);
  for (int s = 0; s < 8; ++s) {
    const std::int64_t off = a.sample_offset(40 + std::uint64_t(s), seq);
    REQUIRE(off >= 0);
    REQUIRE(off + seq + 1 <= a.size());
    for (std::int64_t k = 0; k <= seq; ++k)
      REQUIRE(ba[std::size_t(s * (seq + 1) + k)] == src[std::size_t(off + k)]);
  }
}

TEST_CASE("sample offsets spread over the whole token range") {
  TokenDataset d(ramp(10000, 256), 0, 256, "ramp");
  const std::int64_t seq = 64, windows = d.size() - seq;
  double sum = 0;
  std::int64_t lo = windows, hi = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const std::int64_t off = d.sample_offset(std::uint64_t(i), seq);
    sum += double(off);
    lo = std::min(lo, off), hi = std::max(hi, off);
  }
  // Uniform on [0, windows): mean (windows-1)/2, standard error windows/sqrt(12 n) ≈ 20; allow 5 sigma.
  const double mean = sum / n, expected = (double(windows) - 1) / 2;
  INFO("mean " << mean << " expected " << expected);
  CHECK(std::abs(mean - expected) < 5 * double(windows) / std::sqrt(12.0 * n));
  CHECK(lo < windows / 100);
  CHECK(hi > windows - windows / 100);
}

TEST_CASE("datasets reject out-of-vocabulary tokens and data shorter than one sample") {
  CHECK(error_of([] { TokenDataset({1, 2, 300}, 0, 256, "big.tok"); }).find("big.tok") != std::string::npos);
  TokenDataset tiny({1, 2, 3}, 0, 256, "tiny.txt");
  std::vector<std::int32_t> out;
  const std::string msg = error_of([&] { tiny.global_batch({0}, 1, 8, out); });
  CHECK(msg.find("tiny.txt") != std::string::npos);
  CHECK(msg.find("9 tokens") != std::string::npos);
}

TEST_CASE("open_dataset reads text as bytes and token files by their header; default text exists") {
  const fs::path txt = temp_path("t.txt");
  std::ofstream(txt) << "hello world, hello fsdpx";
  const auto d = open_dataset({txt.string(), std::nullopt, 1, 256});
  CHECK(d->size() == 24);
  CHECK(error_of([&] { open_dataset({txt.string(), std::nullopt, 1, 100}); }).find(txt.string()) != std::string::npos);
  const fs::path tok = temp_path("t.tok");
  write_token_file(tok.string(), ramp(100, 50), TokenDType::u16);
  CHECK(open_dataset({tok.string(), std::nullopt, 1, 50})->size() == 100);
  fs::remove(txt), fs::remove(tok);
  const std::string def = default_text_path();
  CHECK(fs::file_size(def) > 100000);
  CHECK(open_dataset({"", std::nullopt, 0, 256})->size() == std::int64_t(fs::file_size(def)));
}

}  // namespace
}  // namespace fsdpx
