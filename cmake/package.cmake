# The CMake package `horde`: an outside project does find_package(horde) and links
# horde::torch. setup.py installs with the Python package folder horde/ as the prefix,
# so the package lives in the Python package: headers in include/, this config in
# lib/cmake/horde/, the libraries in torch/ where the Python extension loads them from.
include(CMakePackageConfigHelpers)

set_target_properties(horde_core PROPERTIES EXPORT_NAME core)
set_target_properties(horde_mpi_ops PROPERTIES EXPORT_NAME mpi_ops)
set_target_properties(horde_gpu_ops PROPERTIES EXPORT_NAME gpu_ops)
# The libraries go where the Python extension loads them from, for Python and C++ alike.
install(TARGETS horde_torch horde_gpu_ops horde_mpi_ops horde_core EXPORT hordeTargets
  LIBRARY DESTINATION torch COMPONENT development)
install(EXPORT hordeTargets NAMESPACE horde::
  DESTINATION lib/cmake/horde COMPONENT development)

configure_package_config_file(cmake/hordeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/hordeConfig.cmake
  INSTALL_DESTINATION lib/cmake/horde)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/hordeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/hordeConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/hordeConfigVersion.cmake
  DESTINATION lib/cmake/horde COMPONENT development)
