// executor/cpu/simd_level.cpp — the kernels' instruction set (see simd_level.h).
#include "executor/cpu/simd_level.h"

#include <stdexcept>

#ifndef FSDPX_CPU_SIMD_LEVEL
#define FSDPX_CPU_SIMD_LEVEL "none"
#endif

namespace fsdpx::cpu {

std::string kernel_simd_level() { return FSDPX_CPU_SIMD_LEVEL; }

void check_kernel_simd_support() {
#if defined(__x86_64__) || defined(__i386__)
  if (kernel_simd_level() != "x86-64-v3") return;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    throw std::runtime_error(
        "this fsdpx's CPU kernels were built for x86-64-v3 (AVX2 and FMA), which this CPU lacks: rebuild with "
        "cmake -DFSDPX_CPU_SIMD=none");
#endif
}

}  // namespace fsdpx::cpu
