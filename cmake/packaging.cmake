# Installation and the Debian package (cpack -G DEB): nanscope and nanscope-run, a .desktop entry,
# the icon, man pages generated from each program's --help (help2man) and the docs.
#
# A build with the CUDA library links the CUDA runtime and cuBLAS from the toolkit (not Debian
# packages): the installed programs find them through an RPATH to the toolkit's library folder, and
# the package's description says so. A CPU-only build (-DNANSCOPE_CUDA=OFF) depends on Debian
# packages alone.
include(GNUInstallDirs)

if(NANSCOPE_HAVE_CUDA)
  set_target_properties(nanscope-run PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
  if(TARGET nanscope)
    set_target_properties(nanscope PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
  endif()
endif()

set(programs nanscope-run)
if(TARGET nanscope)
  list(APPEND programs nanscope)
endif()
install(TARGETS ${programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES resources/desktop/nanscope.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES resources/desktop/nanscope.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
install(FILES README.md docs/gui.md docs/files.md docs/config.md docs/slots.md docs/trainer.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

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
    "nanscope steps a distributional DQN trainer frame by frame, shows a live grid of NaN\nsentinel flags per buffer slot and per fold, names the buffer where the NaN entered, dumps\nthe offending buffers to HDF5 and replays that step offline (nanscope, nanscope-run).")
if(NANSCOPE_HAVE_CUDA)
  string(APPEND CPACK_DEBIAN_PACKAGE_DESCRIPTION
         "\n.\nThis build uses the CUDA runtime and cuBLAS of the CUDA ${CUDAToolkit_VERSION_MAJOR} toolkit in\n${CUDAToolkit_LIBRARY_DIR}, which must be installed.")
endif()
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Dependencies on Debian's libraries from the binaries; the toolkit's are looked up as private.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(NANSCOPE_HAVE_CUDA)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CUDAToolkit_LIBRARY_DIR}")
endif()
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
include(CPack)
