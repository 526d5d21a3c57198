// executor/checkpoint/safetensors.h — the safetensors file format (huggingface/safetensors): an 8-byte
// little-endian header size N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end)},
// optional "__metadata__": {str: str}} padded with spaces to a multiple of 8, then the raw little-endian
// tensor bytes, offsets relative to the end of the header. Reading is strict (every byte accounted for,
// errors name the file and the JSON path); writing matches the reference writer byte for byte and is
// atomic. Leaves out dtypes other than F32, BF16 and I32, and memory mapping.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fsdpx {

enum class StDType { bf16, i32, f32 };  // the reference's order (its writer sorts by it)

const char* st_dtype_name(StDType d);  // "BF16", "I32", "F32"
std::int64_t st_dtype_bytes(StDType d);

struct StTensor {
  std::string name;
  StDType dtype = StDType::f32;
  std::vector<std::int64_t> shape;  // row-major; [] is a scalar
  std::string bytes;                // numel · st_dtype_bytes, little-endian
  std::int64_t numel() const;
};

struct SafetensorsFile {
  std::vector<StTensor> tensors;               // in file (data offset) order after reading
  std::map<std::string, std::string> metadata;  // "__metadata__"; empty: omitted
  const StTensor* find(std::string_view name) const;  // nullptr when absent
};

// Typed construction and access. The float helpers convert BF16 exactly (bf16 -> f32) or with
// round-to-nearest-even (f32 -> bf16); ints() requires I32.
StTensor st_floats(std::string name, StDType dtype, std::vector<std::int64_t> shape, std::span<const float> values);
StTensor st_ints(std::string name, std::vector<std::int64_t> shape, std::span<const std::int32_t> values);
std::vector<float> st_to_floats(const StTensor& t);
std::vector<std::int32_t> st_to_ints(const StTensor& t);

// The file's bytes: tensors sorted as the reference writer sorts them (dtype, larger first, then name),
// compact JSON with "__metadata__" first and keys dtype, shape, data_offsets.
std::string encode_safetensors(const SafetensorsFile& f);
// Throws ConfigError "<file>: <json path>: <what>" for a truncated file, a header that is not a JSON
// object, an unknown dtype, a bad shape, offsets out of range, overlapping or leaving gaps, and a byte
// count that does not match the shape.
SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& file);

SafetensorsFile read_safetensors(const std::string& path);
// Writes the file whole or not at all (core/output_file.h): readers never see a partial file.
void write_safetensors(const std::string& path, const SafetensorsFile& f);

}  // namespace fsdpx
