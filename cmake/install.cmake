# `cmake --install`: the fsdpx binary (tools/), its configs and data, bash completion, and the planning
# libraries as a CMake package: find_package(fsdpx) gives fsdpx::core, fsdpx::cost_models,
# fsdpx::program, fsdpx::simulator and fsdpx::planner (static libraries, headers under include/fsdpx so
# that #include "planner/planner.h" works as in the tree). Leaves out the executor's libraries (they link
# OpenBLAS, OpenMP and optionally CUDA/NCCL found per machine): a program that trains runs `fsdpx run`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FSDPX_EXPORTED_LIBRARIES fsdp_core fsdp_cost_models fsdp_program fsdp_simulator fsdp_planner)
foreach(lib ${FSDPX_EXPORTED_LIBRARIES})
  string(REPLACE "fsdp_" "" short ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})
  add_library(fsdpx::${short} ALIAS ${lib})
endforeach()

# Users of the installed headers need C++20 (the tree sets it globally, so only the install interface says it).
target_compile_features(fsdp_core INTERFACE $<INSTALL_INTERFACE:cxx_std_20>)

set(FSDPX_INSTALL_INCLUDE_DIR ${CMAKE_INSTALL_INCLUDEDIR}/fsdpx)
set(FSDPX_INSTALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fsdpx)
set(FSDPX_INSTALL_CONFIG_DIR ${CMAKE_INSTALL_DATADIR}/fsdpx/configs)

install(TARGETS ${FSDPX_EXPORTED_LIBRARIES} EXPORT fsdpxTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${FSDPX_INSTALL_INCLUDE_DIR})
foreach(dir core cost_models program simulator planner)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${FSDPX_INSTALL_INCLUDE_DIR}/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(EXPORT fsdpxTargets NAMESPACE fsdpx:: DESTINATION ${FSDPX_INSTALL_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fsdpxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fsdpxConfig.cmake
  INSTALL_DESTINATION ${FSDPX_INSTALL_CMAKE_DIR}
  PATH_VARS FSDPX_INSTALL_CONFIG_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fsdpxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fsdpxConfig.cmake ${PROJECT_BINARY_DIR}/fsdpxConfigVersion.cmake
        DESTINATION ${FSDPX_INSTALL_CMAKE_DIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${FSDPX_INSTALL_CONFIG_DIR})
install(FILES ${PROJECT_BINARY_DIR}/fsdpx.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME fsdpx)
# Where Debian's zsh (fpath) and fish look for completions that packages install.
install(FILES ${PROJECT_BINARY_DIR}/_fsdpx DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${PROJECT_BINARY_DIR}/fsdpx.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/fsdpx)
