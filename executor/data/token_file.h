// executor/data/token_file.h — pre-tokenized training data on disk. Format "FSDPXTOK": an 8-byte
// magic "FSDPXTOK", uint32 version (1), uint32 bytes per token (2 or 4), uint64 token count, then the
// tokens, all little-endian (the llm.c .bin idea with a self-describing header). Raw files without
// the header are read when the caller names the dtype (--data-dtype). Leaves out memory mapping and
// files larger than memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsdpx {

enum class TokenDType { u16, u32 };

const char* token_dtype_name(TokenDType t);  // "uint16", "uint32"
int token_dtype_bytes(TokenDType t);

inline constexpr char kTokenFileMagic[8] = {'F', 'S', 'D', 'P', 'X', 'T', 'O', 'K'};
inline constexpr std::uint32_t kTokenFileVersion = 1;
inline constexpr std::size_t kTokenFileHeaderBytes = 24;

// True when the file starts with the FSDPXTOK magic.
bool is_token_file(const std::string& path);

// Reads a FSDPXTOK file, or a raw little-endian token array when `raw_dtype` is given and the file
// has no header. Throws ConfigError naming the file on a bad header, a size that does not match the
// count, or a raw file whose size is not a multiple of the token size.
std::vector<std::int32_t> read_token_file(const std::string& path, std::optional<TokenDType> raw_dtype);

// Writes tokens with the FSDPXTOK header; every token must fit the dtype.
void write_token_file(const std::string& path, const std::vector<std::int32_t>& tokens, TokenDType dtype);

}  // namespace fsdpx
