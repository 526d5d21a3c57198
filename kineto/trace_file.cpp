// kineto/trace_file.cpp — reads a trace whole, through zlib when it starts with gzip's magic bytes
// (RFC 1952 section 2.3.1: 0x1f 0x8b). A truncated gzip stream is an error, not a short trace: zlib reports
// Z_BUF_ERROR ("unexpected end of file") when the stream ends before its trailer. Leaves out streaming.
#include "kineto/trace_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <zlib.h>

#include "core/errors.h"

namespace fsdpx {

namespace {

bool starts_with_gzip_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

std::string gunzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw ConfigError(fmt::format("{}: cannot open the trace", path));
  std::string text;
  char buffer[1 << 16];
  int got = 0;
  while ((got = gzread(f, buffer, sizeof buffer)) > 0) {
    text.append(buffer, std::size_t(got));
    if (text.size() > kMaxTraceBytes) break;
  }
  int errnum = Z_OK;
  const std::string message = gzerror(f, &errnum);
  gzclose_r(f);
  if (got < 0 || (errnum != Z_OK && errnum != Z_STREAM_END))
    throw ConfigError(fmt::format("{}: not a whole gzip stream ({}): truncated or corrupt trace", path, message));
  if (text.size() > kMaxTraceBytes)
    throw ConfigError(fmt::format("{}: more than {} GiB of trace once decompressed", path, kMaxTraceBytes >> 30));
  return text;
}

std::string plain_file(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot read the trace ({})", path, ec.message()));
  if (bytes > kMaxTraceBytes)
    throw ConfigError(fmt::format("{}: more than {} GiB of trace", path, kMaxTraceBytes >> 30));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open the trace", path));
  std::string text(bytes, '\0');
  in.read(text.data(), std::streamsize(bytes));
  if (std::uint64_t(in.gcount()) != bytes) throw ConfigError(fmt::format("{}: short read", path));
  return text;
}

bool is_trace_name(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz");
}

}  // namespace

std::string read_trace_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ConfigError(fmt::format("{}: no such trace file", path));
  return starts_with_gzip_magic(path) ? gunzip_file(path) : plain_file(path);
}

std::vector<std::string> trace_files(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return {path};
  if (!std::filesystem::is_directory(path, ec))
    throw ConfigError(fmt::format("{}: neither a trace file nor a directory of traces", path));
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec))
    if (entry.is_regular_file() && is_trace_name(entry.path().filename().string())) files.push_back(entry.path().string());
  if (ec) throw ConfigError(fmt::format("{}: cannot list the directory ({})", path, ec.message()));
  if (files.empty()) throw ConfigError(fmt::format("{}: no .json or .json.gz trace files in the directory", path));
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace fsdpx
