// executor/checkpoint/param_tensors.cpp — slot <-> tensor mapping (see param_tensors.h). A slot is a
// vector exactly when it is initialised to a constant (norm scales 1, shifts and biases 0): those are
// the 1-D parameters of the torch modules the layout mirrors.
#include "executor/checkpoint/param_tensors.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"
#include "core/json_reader.h"

namespace fsdpx {

std::string param_tensor_name(const ModuleLayout& module, const TensorSlot& slot) {
  if (slot.name.rfind(module.name + ".", 0) == 0) return slot.name;
  return module.name + "." + slot.name;
}

std::vector<std::int64_t> param_tensor_shape(const TensorSlot& slot) {
  if (slot.init == InitKind::ones || slot.init == InitKind::zeros) return {slot.numel()};
  return {slot.rows, slot.cols};
}

SafetensorsFile params_to_safetensors(const ParamLayout& layout, std::span<const float> full,
                                      std::map<std::string, std::string> metadata) {
  FSDP_CHECK(std::int64_t(full.size()) == layout.total, "params_to_safetensors: need layout.total parameters");
  SafetensorsFile f;
  f.metadata = std::move(metadata);
  for (const ModuleLayout& m : layout.modules)
    for (const TensorSlot& t : m.tensors)
      f.tensors.push_back(st_floats(param_tensor_name(m, t), StDType::f32, param_tensor_shape(t),
                                    full.subspan(std::size_t(m.offset + t.offset), std::size_t(t.numel()))));
  return f;
}

std::vector<float> params_from_safetensors(const ParamLayout& layout, const SafetensorsFile& f,
                                           const std::string& file) {
  std::vector<float> full(std::size_t(layout.total));
  std::set<std::string> expected;
  for (const ModuleLayout& m : layout.modules)
    for (const TensorSlot& t : m.tensors) {
      const std::string name = param_tensor_name(m, t);
      expected.insert(name);
      const std::vector<std::int64_t> shape = param_tensor_shape(t);
      const StTensor* st = f.find(name);
      if (!st)
        throw_config_error(file, "/" + name, fmt::format("missing (this model needs F32 [{}])", fmt::join(shape, ", ")));
      if (st->shape != shape)
        throw_config_error(file, "/" + name + "/shape",
                           fmt::format("[{}] expected, got [{}]", fmt::join(shape, ", "), fmt::join(st->shape, ", ")));
      if (st->dtype != StDType::f32)
        throw_config_error(file, "/" + name + "/dtype", fmt::format("F32 expected, got {}", st_dtype_name(st->dtype)));
      const std::vector<float> v = st_to_floats(*st);
      std::copy(v.begin(), v.end(), full.begin() + m.offset + t.offset);
    }
  for (const StTensor& t : f.tensors)
    if (!expected.contains(t.name)) throw_config_error(file, "/" + t.name, "not a parameter of this model");
  return full;
}

}  // namespace fsdpx
