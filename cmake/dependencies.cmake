# Finds the dependencies: Debian packages on developer and CI machines, or a carried folder of
# header-only copies (FSDPX_DEPS_DIR) on machines without them. OpenBLAS, Google Benchmark and CUDA
# are optional.
if(FSDPX_DEPS_DIR)
  list(PREPEND CMAKE_PREFIX_PATH "${FSDPX_DEPS_DIR}")
endif()

find_package(nlohmann_json 3.10 QUIET)
if(NOT nlohmann_json_FOUND)
  find_path(FSDPX_NLOHMANN_INCLUDE nlohmann/json.hpp HINTS "${FSDPX_DEPS_DIR}/include" REQUIRED)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  target_include_directories(nlohmann_json::nlohmann_json INTERFACE "${FSDPX_NLOHMANN_INCLUDE}")
endif()

find_package(CLI11 QUIET)
if(NOT CLI11_FOUND)
  find_path(FSDPX_CLI11_INCLUDE CLI/CLI.hpp HINTS "${FSDPX_DEPS_DIR}/include" REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE "${FSDPX_CLI11_INCLUDE}")
endif()

find_package(fmt QUIET)
if(NOT fmt_FOUND)
  # Header-only fmt: FMT_HEADER_ONLY compiles the library into each user.
  find_path(FSDPX_FMT_INCLUDE fmt/format.h HINTS "${FSDPX_DEPS_DIR}/include" REQUIRED)
  add_library(fmt::fmt INTERFACE IMPORTED)
  target_include_directories(fmt::fmt INTERFACE "${FSDPX_FMT_INCLUDE}")
  target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY)
endif()

if(FSDPX_BUILD_TESTS)
  find_package(doctest QUIET)
  if(NOT doctest_FOUND)
    find_path(FSDPX_DOCTEST_INCLUDE doctest/doctest.h HINTS "${FSDPX_DEPS_DIR}/include" REQUIRED)
    add_library(doctest::doctest INTERFACE IMPORTED)
    target_include_directories(doctest::doctest INTERFACE "${FSDPX_DOCTEST_INCLUDE}")
  endif()
endif()

if(FSDPX_BUILD_BENCH)
  find_package(benchmark QUIET)
endif()
