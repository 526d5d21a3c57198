// executor/checkpoint/adapter_file.cpp — the adapters file of a LoRA checkpoint (see adapter_file.h).
#include "executor/checkpoint/adapter_file.h"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/checkpoint/safetensors.h"

namespace fsdpx {

namespace {

using Field = std::pair<const char*, std::vector<float> AdapterState::*>;
constexpr std::array<Field, 3> kFields{Field{"params", &AdapterState::params}, Field{"exp_avg", &AdapterState::exp_avg},
                                       Field{"exp_avg_sq", &AdapterState::exp_avg_sq}};

}  // namespace

std::string encode_adapter_state(const AdapterState& s) {
  SafetensorsFile f;
  for (const auto& [name, field] : kFields) {
    const std::vector<float>& v = s.*field;
    f.tensors.push_back(st_floats(name, StDType::f32, {std::int64_t(v.size())}, v));
  }
  f.metadata = {{"format", "fsdpx-adapters/1"}};
  return encode_safetensors(f);
}

AdapterState decode_adapter_state(std::string_view bytes, std::int64_t numel, const std::string& where) {
  const SafetensorsFile f = decode_safetensors(bytes, where);
  if (f.tensors.size() != kFields.size())
    throw ConfigError(fmt::format("{}: {} tensors, expected params, exp_avg and exp_avg_sq", where, f.tensors.size()));
  AdapterState s;
  for (const auto& [name, field] : kFields) {
    const StTensor* t = f.find(name);
    if (!t) throw ConfigError(fmt::format("{}: /{}: missing", where, name));
    if (t->dtype != StDType::f32 || t->shape != std::vector<std::int64_t>{numel})
      throw ConfigError(fmt::format("{}: /{}: expected F32 [{}] (the manifest's adapters numel)", where, name, numel));
    s.*field = st_to_floats(*t);
  }
  return s;
}

}  // namespace fsdpx
