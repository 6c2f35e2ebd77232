# Installation and the Debian packages, two from one cpack run (cpack -G DEB):
#   nanscope       the programs (nanscope, nanscope-run), a .desktop entry, the icon, man pages
#                  generated from each program's --help (help2man) and the docs; Debian packages only
#   nanscope-cuda  the CUDA backend plugin (lib/nanscope/libnanscope-cuda.so), which the programs
#                  load when it is there; it links the CUDA runtime statically and depends on NVIDIA's
#                  cuBLAS package (docs/building.md, "The CUDA plugin")
include(GNUInstallDirs)
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME main)

set(programs nanscope-run)
if(TARGET nanscope)
  list(APPEND programs nanscope)
endif()
install(TARGETS ${programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The SDK (docs/sdk.md): libnanscope, its C header, a CMake package (find_package(nanscope):
# nanscope::nanscope) and a pkg-config file.
include(CMakePackageConfigHelpers)
install(TARGETS nanscope_sdk EXPORT nanscopeTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/nanscope/nanscope.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nanscope)
set(sdk_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/nanscope)
install(EXPORT nanscopeTargets NAMESPACE nanscope:: DESTINATION ${sdk_cmake_dir})
# The same package from the build tree: find_package(nanscope) with nanscope_DIR=<build>/sdk.
export(EXPORT nanscopeTargets NAMESPACE nanscope:: FILE ${CMAKE_BINARY_DIR}/sdk/nanscopeTargets.cmake)
configure_package_config_file(cmake/sdk/nanscopeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/sdk/nanscopeConfig.cmake INSTALL_DESTINATION ${sdk_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/sdk/nanscopeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/sdk/nanscopeConfig.cmake
              ${CMAKE_BINARY_DIR}/sdk/nanscopeConfigVersion.cmake DESTINATION ${sdk_cmake_dir})
configure_file(cmake/sdk/nanscope.pc.in ${CMAKE_BINARY_DIR}/sdk/nanscope.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/sdk/nanscope.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# nanscope's Python package (python/nanscope: nanscope.sdk) for the system's Python 3.
install(DIRECTORY python/nanscope DESTINATION lib/python3/dist-packages
        PATTERN __pycache__ EXCLUDE)
install(DIRECTORY examples/c_mlp examples/python examples/rust
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        PATTERN target EXCLUDE PATTERN Cargo.lock EXCLUDE PATTERN __pycache__ EXCLUDE)
if(TARGET nanscope_cuda_plugin)
  install(TARGETS nanscope_cuda_plugin LIBRARY DESTINATION ${NANSCOPE_PLUGIN_SUBDIR} COMPONENT cuda)
endif()
install(FILES resources/desktop/nanscope.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES resources/desktop/nanscope.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
install(FILES README.md docs/gui.md docs/files.md docs/config.md docs/slots.md docs/trainer.md docs/sdk.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian's copyright file, in each package's doc directory.
install(FILES resources/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
if(TARGET nanscope_cuda_plugin)
  install(FILES resources/debian/copyright DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/nanscope-cuda
          COMPONENT cuda)
endif()

# Man pages from --help (both programs print it without a display or a GPU).
find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(pages)
  set(summary_nanscope "workbench for hunting NaNs in a deep-RL trainer")
  set(summary_nanscope-run "headless runs, replays and listings of the nanscope trainer")
  foreach(program ${programs})
    set(page ${CMAKE_BINARY_DIR}/man/${program}.1)
    add_custom_command(OUTPUT ${page}.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
              ${HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
              "--name=${summary_${program}}" --output=${page} $<TARGET_FILE:${program}>
      COMMAND gzip -9nf ${page}
      DEPENDS ${program}
      COMMENT "man page of ${program}")
    list(APPEND pages ${page}.gz)
  endforeach()
  add_custom_target(man_pages ALL DEPENDS ${pages})
  install(FILES ${pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: no man pages (apt install help2man)")
endif()

set(CPACK_PACKAGE_NAME nanscope)
set(CPACK_PACKAGE_VENDOR "nanscope")
set(CPACK_PACKAGE_CONTACT "nanscope developers <nanscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Workbench for hunting NaNs in a deep-RL trainer")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "nanscope steps a distributional DQN trainer frame by frame, shows a live grid of NaN\nsentinel flags per buffer slot and per fold, names the buffer where the NaN entered, dumps\nthe offending buffers to HDF5 and replays that step offline (nanscope, nanscope-run).\n.\nThe trainer runs on the CPU reference backend; install nanscope-cuda for the CUDA one.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_MAIN_PACKAGE_NAME nanscope)
set(CPACK_COMPONENTS_ALL main)
# Dependencies on Debian's libraries from the binaries.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(TARGET nanscope_cuda_plugin)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
  set(cuda_version "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
  set(CPACK_DEBIAN_CUDA_PACKAGE_NAME nanscope-cuda)
  set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION devel)
  set(CPACK_DEBIAN_CUDA_DESCRIPTION
      "CUDA backend of nanscope\nThe trainer's step on an NVIDIA GPU (float32, cuBLAS), with the sentinel checks on\nthe device: a plugin that nanscope and nanscope-run load when it is installed.\n.\nIt carries the CUDA ${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR} runtime (linked statically) and uses cuBLAS from\nNVIDIA's libcublas-${cuda_version} package and the NVIDIA driver.")
  # cuBLAS is NVIDIA's package, not Debian's: named here, looked up by dpkg-shlibdeps as private.
  set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "nanscope (= ${PROJECT_VERSION}), libcublas-${cuda_version}")
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CUDAToolkit_LIBRARY_DIR}")
endif()
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
include(CPack)
