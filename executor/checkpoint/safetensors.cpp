// executor/checkpoint/safetensors.cpp — encoding and strict decoding of safetensors files. The writer
// follows the reference (safetensors/src/tensor.rs `prepare`): tensors sorted by dtype, larger enum
// value first, then by name; compact JSON; spaces pad the header to 8 bytes. The reader accepts what
// the reference's `validate` accepts: offsets in order, contiguous, covering the data exactly.
#include "executor/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_reader.h"
#include "core/output_file.h"
#include "executor/checkpoint/shard_file.h"

namespace fsdpx {

namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

// The reference rejects headers over 100 MB (safetensors MAX_HEADER_SIZE) before parsing them.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

// JSON pointer token for a tensor name (RFC 6901: '~' -> "~0", '/' -> "~1").
std::string pointer(std::string_view name) {
  std::string out = "/";
  for (char c : name) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

StDType dtype_from_name(const std::string& s) {
  for (StDType d : {StDType::bf16, StDType::i32, StDType::f32})
    if (s == st_dtype_name(d)) return d;
  FSDP_CHECK(false, "dtype name was validated by JsonObject::choice: " + s);
  return StDType::f32;
}

std::int64_t shape_numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

// One header entry, checked against itself (offsets against the others come later).
struct Entry {
  StTensor tensor;  // bytes not yet filled
  std::uint64_t begin = 0, end = 0;
};

std::vector<std::int64_t> read_shape(JsonObject& o) {
  std::vector<std::int64_t> shape;
  std::uint64_t numel = 1;
  for (const auto& [v, path] : o.array("shape")) {
    if (!v->is_number_unsigned()) throw_config_error(o.file(), path, "expected an integer >= 0");
    const std::uint64_t d = v->get<std::uint64_t>();
    if (d != 0 && numel > (std::uint64_t(1) << 62) / d)
      throw_config_error(o.file(), path, "the shape has more than 2^62 elements");
    numel *= d;
    shape.push_back(std::int64_t(d));
  }
  return shape;
}

Entry read_entry(const nlohmann::json& j, const std::string& file, const std::string& name) {
  JsonObject o(j, file, pointer(name));
  Entry e;
  e.tensor.name = name;
  e.tensor.dtype = dtype_from_name(o.choice("dtype", {"BF16", "I32", "F32"}));
  e.tensor.shape = read_shape(o);
  const auto offsets = o.array("data_offsets");
  if (offsets.size() != 2) o.fail("data_offsets", fmt::format("expected [begin, end], got {} numbers", offsets.size()));
  for (const auto& [v, path] : offsets)
    if (!v->is_number_unsigned()) throw_config_error(file, path, "expected an integer >= 0");
  e.begin = offsets[0].first->get<std::uint64_t>();
  e.end = offsets[1].first->get<std::uint64_t>();
  o.finish();
  const std::uint64_t want = std::uint64_t(shape_numel(e.tensor.shape) * st_dtype_bytes(e.tensor.dtype));
  if (e.end < e.begin || e.end - e.begin != want)
    o.fail("data_offsets", fmt::format("[{}, {}) holds {} bytes; shape [{}] of {} needs {}", e.begin, e.end,
                                       e.end < e.begin ? 0 : e.end - e.begin, fmt::join(e.tensor.shape, ", "),
                                       st_dtype_name(e.tensor.dtype), want));
  return e;
}

std::map<std::string, std::string> read_metadata(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object()) throw_config_error(file, pointer(kMetadataKey), "expected an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string())
      throw_config_error(file, pointer(kMetadataKey) + pointer(k), "expected a string, got " + json_type_name(v));
    out[k] = v.get<std::string>();
  }
  return out;
}

// Offsets sorted by begin must tile [0, data_bytes) exactly.
void check_tiling(std::vector<Entry>& entries, std::uint64_t data_bytes, const std::string& file) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  for (const Entry& e : entries) {
    const std::string path = pointer(e.tensor.name) + "/data_offsets";
    if (e.begin < at)
      throw_config_error(file, path, fmt::format("[{}, {}) overlaps the tensor before it (which ends at {})", e.begin,
                                                 e.end, at));
    if (e.begin > at)
      throw_config_error(file, path, fmt::format("[{}, {}) leaves bytes [{}, {}) of the data unused", e.begin, e.end,
                                                 at, e.begin));
    if (e.end > data_bytes)
      throw_config_error(file, path, fmt::format("[{}, {}) is out of range: the file has {} data bytes", e.begin,
                                                 e.end, data_bytes));
    at = e.end;
  }
  if (at != data_bytes)
    throw_config_error(file, "/", fmt::format("data bytes [{}, {}) belong to no tensor", at, data_bytes));
}

}  // namespace

const char* st_dtype_name(StDType d) {
  switch (d) {
    case StDType::bf16: return "BF16";
    case StDType::i32: return "I32";
    case StDType::f32: return "F32";
  }
  return "?";
}

std::int64_t st_dtype_bytes(StDType d) { return d == StDType::bf16 ? 2 : 4; }

std::int64_t StTensor::numel() const { return shape_numel(shape); }

const StTensor* SafetensorsFile::find(std::string_view name) const {
  for (const StTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

StTensor st_floats(std::string name, StDType dtype, std::vector<std::int64_t> shape, std::span<const float> values) {
  FSDP_CHECK(dtype != StDType::i32, "st_floats: " + name + " needs a float dtype");
  StTensor t{std::move(name), dtype, std::move(shape), {}};
  FSDP_CHECK(t.numel() == std::int64_t(values.size()), "st_floats: shape does not match the values of " + t.name);
  if (dtype == StDType::f32) {
    t.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size_bytes());
    return t;
  }
  t.bytes.resize(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto bits = std::bit_cast<std::uint32_t>(values[i]);
    // Round to nearest even on the 16 dropped bits; NaN stays a (quiet) NaN.
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    const auto hi = std::uint16_t(nan ? (bits >> 16) | 0x40u : (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
    std::memcpy(t.bytes.data() + 2 * i, &hi, 2);
  }
  return t;
}

StTensor st_ints(std::string name, std::vector<std::int64_t> shape, std::span<const std::int32_t> values) {
  StTensor t{std::move(name), StDType::i32, std::move(shape), {}};
  FSDP_CHECK(t.numel() == std::int64_t(values.size()), "st_ints: shape does not match the values of " + t.name);
  t.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  return t;
}

std::vector<float> st_to_floats(const StTensor& t) {
  FSDP_CHECK(t.dtype != StDType::i32, "st_to_floats: " + t.name + " holds integers");
  std::vector<float> out(std::size_t(t.numel()));
  if (t.dtype == StDType::f32) {
    std::memcpy(out.data(), t.bytes.data(), out.size() * sizeof(float));
    return out;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint16_t hi;
    std::memcpy(&hi, t.bytes.data() + 2 * i, 2);
    out[i] = std::bit_cast<float>(std::uint32_t(hi) << 16);
  }
  return out;
}

std::vector<std::int32_t> st_to_ints(const StTensor& t) {
  FSDP_CHECK(t.dtype == StDType::i32, "st_to_ints: " + t.name + " is not I32");
  std::vector<std::int32_t> out(std::size_t(t.numel()));
  std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
  return out;
}

std::string encode_safetensors(const SafetensorsFile& f) {
  std::vector<const StTensor*> order;
  for (const StTensor& t : f.tensors) {
    FSDP_CHECK(std::int64_t(t.bytes.size()) == t.numel() * st_dtype_bytes(t.dtype),
               "encode_safetensors: byte count does not match the shape of " + t.name);
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const StTensor* a, const StTensor* b) {
    return a->dtype != b->dtype ? a->dtype > b->dtype : a->name < b->name;
  });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!f.metadata.empty()) header[kMetadataKey] = f.metadata;
  std::uint64_t at = 0;
  for (const StTensor* t : order) {
    FSDP_CHECK(t->name != kMetadataKey && !header.contains(t->name), "encode_safetensors: duplicate name " + t->name);
    const std::uint64_t end = at + t->bytes.size();
    header[t->name] = {{"dtype", st_dtype_name(t->dtype)}, {"shape", t->shape}, {"data_offsets", {at, end}}};
    at = end;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);
  out += json;
  for (const StTensor* t : order) out += t->bytes;
  return out;
}

SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& file) {
  if (bytes.size() < 8)
    throw_config_error(file, "/",
                       fmt::format("truncated: {} bytes, shorter than the 8-byte header size", bytes.size()));
  std::uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kMaxHeaderBytes || n > bytes.size() - 8)
    throw_config_error(file, "/",
                       fmt::format("truncated or not safetensors: a {}-byte header is declared, {} bytes follow", n,
                                   bytes.size() - 8));
  const nlohmann::json header = parse_json_text(bytes.substr(8, n), file);
  if (!header.is_object()) throw_config_error(file, "/", "the header is not a JSON object");
  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) out.metadata = read_metadata(value, file);
    else entries.push_back(read_entry(value, file, name));
  }
  const std::string_view data = bytes.substr(8 + n);
  check_tiling(entries, data.size(), file);
  for (Entry& e : entries) {
    e.tensor.bytes.assign(data.substr(e.begin, e.end - e.begin));
    out.tensors.push_back(std::move(e.tensor));
  }
  return out;
}

SafetensorsFile read_safetensors(const std::string& path) { return decode_safetensors(read_file_bytes(path), path); }

void write_safetensors(const std::string& path, const SafetensorsFile& f) {
  write_output_file(path, encode_safetensors(f));
}

}  // namespace fsdpx
