// executor/cpu/simd_level.h — the instruction set fsdpx's CPU kernels were compiled for
// (cmake/cpu_simd.cmake) and whether this CPU runs it, so that a binary moved to an older CPU stops
// with a message instead of an illegal instruction. Compiled for the baseline target itself.
#pragma once

#include <string>

namespace fsdpx::cpu {

// "x86-64-v3" (AVX2 + FMA) or "none" (the compiler's default target).
std::string kernel_simd_level();

// Throws std::runtime_error naming the missing extensions when this CPU cannot run the kernels.
void check_kernel_simd_support();

}  // namespace fsdpx::cpu
