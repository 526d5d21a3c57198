# The instruction set of fsdpx's own CPU kernels (executor/cpu/*), chosen at configure time, never
# -march=native: a kernel's sums are grouped by its vector width, so the width is a fixed part of the
# build and the kernels compute the same bits on every machine that runs the binary (OpenBLAS still
# picks its GEMM kernel per CPU; docs/executor.md, "Threads and vectorisation"). FSDPX_CPU_SIMD:
#   auto       x86-64-v3 on x86-64 when the compiler takes it and this machine runs it, else none
#   x86-64-v3  AVX2 + FMA (x86-64 servers since Haswell, 2013, and Zen, 2017): 8 fp32 lanes
#   none       the compiler's default target (SSE2 on x86-64)
# Every kernel also gets -fno-trapping-math (no FP traps are used; lets g++ turn the kernels' selects
# into vector blends), -ffp-contract=fast (a·b + c may be one FMA: fixed per binary) and
# -fopenmp-simd (the `omp simd` reductions vectorise even without OpenMP).
include(CheckCXXCompilerFlag)
include(CheckCXXSourceRuns)

set(FSDPX_CPU_SIMD "auto" CACHE STRING "Instruction set of the CPU kernels: auto, x86-64-v3 or none")
set_property(CACHE FSDPX_CPU_SIMD PROPERTY STRINGS auto x86-64-v3 none)

set(FSDPX_CPU_SIMD_LEVEL "none")
if(FSDPX_CPU_SIMD STREQUAL "x86-64-v3")
  set(FSDPX_CPU_SIMD_LEVEL "x86-64-v3")
elseif(FSDPX_CPU_SIMD STREQUAL "auto" AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  check_cxx_compiler_flag(-march=x86-64-v3 FSDPX_CXX_HAS_X86_64_V3)
  if(FSDPX_CXX_HAS_X86_64_V3)
    set(CMAKE_REQUIRED_FLAGS -march=x86-64-v3)
    check_cxx_source_runs("int main() { __builtin_cpu_init(); return __builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\") ? 0 : 1; }"
                          FSDPX_HOST_RUNS_X86_64_V3)
    unset(CMAKE_REQUIRED_FLAGS)
    if(FSDPX_HOST_RUNS_X86_64_V3)
      set(FSDPX_CPU_SIMD_LEVEL "x86-64-v3")
    endif()
  endif()
elseif(NOT FSDPX_CPU_SIMD MATCHES "^(auto|none)$")
  message(FATAL_ERROR "FSDPX_CPU_SIMD=${FSDPX_CPU_SIMD}: expected auto, x86-64-v3 or none")
endif()
message(STATUS "fsdpx CPU kernels: SIMD ${FSDPX_CPU_SIMD_LEVEL} (FSDPX_CPU_SIMD=${FSDPX_CPU_SIMD})")

# Compiles `sources` (the kernels) of `target` for FSDPX_CPU_SIMD_LEVEL; the target learns the level
# (executor/cpu/simd_level.h).
function(fsdpx_cpu_kernel_sources target)
  set(flags -fno-trapping-math -ffp-contract=fast -fopenmp-simd)
  if(FSDPX_CPU_SIMD_LEVEL STREQUAL "x86-64-v3")
    list(APPEND flags -march=x86-64-v3)
  endif()
  set_source_files_properties(${ARGN} TARGET_DIRECTORY ${target} PROPERTIES COMPILE_OPTIONS "${flags}")
  target_compile_definitions(${target} PRIVATE FSDPX_CPU_SIMD_LEVEL="${FSDPX_CPU_SIMD_LEVEL}")
endfunction()
