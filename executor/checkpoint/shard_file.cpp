// executor/checkpoint/shard_file.cpp — rank state encoding and whole-file reads.
#include "executor/checkpoint/shard_file.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "core/errors.h"
#include "core/input_file.h"

namespace fsdpx {

namespace {

static_assert(std::endian::native == std::endian::little, "checkpoint files are little-endian");
constexpr char kMagic[8] = {'F', 'S', 'D', 'P', 'X', 'C', 'K', 'P'};
constexpr std::uint32_t kVersion = 1;

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_floats(std::string& out, const std::vector<float>& v) {
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& where) : b_(bytes), where_(where) {}
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  std::vector<float> floats(std::int64_t n) {
    if (n < 0 || std::uint64_t(n) > left() / sizeof(float)) throw ConfigError(fmt::format("{}: truncated (array of {} floats at offset {}, {} bytes left)", where_, n, pos_, left()));
    const std::size_t count = static_cast<std::size_t>(n);
    const char* src = take(count * sizeof(float));  // checks the length before allocating
    std::vector<float> v(count);
    std::memcpy(v.data(), src, count * sizeof(float));
    return v;
  }
  std::size_t left() const { return b_.size() - pos_; }

 private:
  const char* take(std::size_t n) {
    if (n > left())
      throw ConfigError(fmt::format("{}: truncated (needs {} more bytes at offset {}, {} left)", where_, n, pos_,
                                    left()));
    const char* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::string_view b_;
  const std::string& where_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string encode_rank_state(const RankState& r) {
  std::string out(kMagic, sizeof kMagic);
  put<std::uint32_t>(out, kVersion);
  put<std::uint32_t>(out, std::uint32_t(r.rank));
  put<std::uint32_t>(out, std::uint32_t(r.units.size()));
  put<std::uint32_t>(out, 0);
  for (const UnitShardState& u : r.units) {
    FSDP_CHECK(u.exp_avg.size() == u.params.size() && u.exp_avg_sq.size() == u.params.size(),
               "encode_rank_state: shard arrays differ in length");
    put<std::int64_t>(out, u.unit_numel);
    put<std::int64_t>(out, u.shard_offset);
    put<std::int64_t>(out, std::int64_t(u.params.size()));
    put_floats(out, u.params);
    put_floats(out, u.exp_avg);
    put_floats(out, u.exp_avg_sq);
  }
  return out;
}

RankState decode_rank_state(std::string_view bytes, const std::string& where) {
  Reader in(bytes, where);
  const auto magic = in.get<std::uint64_t>();
  if (std::memcmp(&magic, kMagic, sizeof kMagic) != 0) throw ConfigError(where + ": not a fsdpx shard file");
  if (const auto v = in.get<std::uint32_t>(); v != kVersion)
    throw ConfigError(fmt::format("{}: shard file version {} (this fsdpx reads {})", where, v, kVersion));
  RankState r;
  r.rank = int(in.get<std::uint32_t>());
  const auto units = in.get<std::uint32_t>();
  in.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < units; ++i) {
    UnitShardState u;
    u.unit_numel = in.get<std::int64_t>();
    u.shard_offset = in.get<std::int64_t>();
    const auto n = in.get<std::int64_t>();
    u.params = in.floats(n);
    u.exp_avg = in.floats(n);
    u.exp_avg_sq = in.floats(n);
    r.units.push_back(std::move(u));
  }
  if (in.left() != 0) throw ConfigError(fmt::format("{}: {} unexpected bytes after the last unit", where, in.left()));
  return r;
}

std::string read_file_bytes(const std::string& path) {
  return read_input_file(path, "weights or checkpoint file", kMaxWeightsFileBytes);
}

}  // namespace fsdpx
