// executor/model/vector_index.h — at(i): a signed element index or count (the executor's std::int64_t
// sizes) as a std::vector's std::size_t, for the host model files that index vectors by those sizes.
// Leaves out range checks (the sizes are the models' own).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fsdpx {

inline std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

}  // namespace fsdpx
