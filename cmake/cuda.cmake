# Optional CUDA build: the executor's CUDA kernels (fsdp_cuda) and their GPU tests. FSDPX_CUDA is AUTO
# (on when check_language finds nvcc), ON (fail without nvcc) or OFF. Without CUDA nothing CUDA is
# built and everything else works. NCCL is optional inside a CUDA build: FSDPX_HAVE_NCCL says if found.
# Leaves out architectures other than the one given (default 90, Hopper: .library/device/HOPPER.md).
set(FSDPX_CUDA AUTO CACHE STRING "Build the CUDA executor kernels: AUTO, ON or OFF")
set_property(CACHE FSDPX_CUDA PROPERTY STRINGS AUTO ON OFF)
set(FSDPX_HAVE_CUDA OFF)
set(FSDPX_HAVE_NCCL OFF)

if(NOT FSDPX_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS "/usr/local/cuda/bin/nvcc")
    set(CMAKE_CUDA_COMPILER "/usr/local/cuda/bin/nvcc")  # nvcc is often off PATH (Debian CUDA installs)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(FSDPX_HAVE_CUDA ON)
  elseif(FSDPX_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FSDPX_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or CUDACXX)")
  endif()
endif()

if(FSDPX_HAVE_CUDA)
  # One architecture keeps CI compiles short; sm_90 (not 90a): plain Hopper code, no wgmma.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  if(NOT TARGET CUDA::cublasLt OR NOT TARGET CUDA::cublas)
    # A toolkit without cuBLAS (e.g. nvcc alone): no CUDA kernels rather than a broken configure.
    if(FSDPX_CUDA STREQUAL "ON")
      message(FATAL_ERROR "FSDPX_CUDA=ON but cuBLAS/cuBLASLt were not found in ${CUDAToolkit_LIBRARY_DIR}")
    endif()
    message(WARNING "CUDA: nvcc found but cuBLAS/cuBLASLt missing; the CUDA kernels are not built")
    set(FSDPX_HAVE_CUDA OFF)
  endif()
endif()

if(FSDPX_HAVE_CUDA)
  # The top-level warning and sanitizer flags are g++ flags that nvcc rejects: keep them C++-only.
  get_property(_fsdpx_opts DIRECTORY PROPERTY COMPILE_OPTIONS)
  set(_fsdpx_cxx_opts "")
  foreach(_opt IN LISTS _fsdpx_opts)
    list(APPEND _fsdpx_cxx_opts "$<$<COMPILE_LANGUAGE:CXX>:${_opt}>")
  endforeach()
  set_property(DIRECTORY PROPERTY COMPILE_OPTIONS "${_fsdpx_cxx_opts}")

  # NCCL: header and library under NCCL_ROOT / NCCL_HOME / CUDA_HOME / the toolkit, or a pip wheel's
  # nvidia/nccl folder (which ships libnccl.so.2 without the unversioned link).
  set(_fsdpx_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} $ENV{CUDA_HOME} "${CUDAToolkit_LIBRARY_ROOT}"
      /usr/local/cuda)
  find_path(FSDPX_NCCL_INCLUDE nccl.h HINTS ${_fsdpx_nccl_hints} "${CUDAToolkit_INCLUDE_DIRS}" PATH_SUFFIXES include)
  find_library(FSDPX_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_fsdpx_nccl_hints} "${CUDAToolkit_LIBRARY_DIR}"
               PATH_SUFFIXES lib lib64)
  if(FSDPX_NCCL_INCLUDE AND FSDPX_NCCL_LIBRARY)
    set(FSDPX_HAVE_NCCL ON)
    add_library(fsdpx_nccl INTERFACE IMPORTED)
    target_include_directories(fsdpx_nccl SYSTEM INTERFACE "${FSDPX_NCCL_INCLUDE}")
    target_link_libraries(fsdpx_nccl INTERFACE "${FSDPX_NCCL_LIBRARY}")
  endif()
  message(STATUS "CUDA: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, "
                 "NCCL=${FSDPX_HAVE_NCCL} (${FSDPX_NCCL_LIBRARY})")
else()
  message(STATUS "CUDA: off (FSDPX_CUDA=${FSDPX_CUDA}); the CUDA kernels and GPU tests are not built")
endif()
