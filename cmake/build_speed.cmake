# How the build is made faster without changing what it builds (docs/building.md, "How long the
# test command takes"): ccache when it is installed, and unity builds of the tests, the GUI and the
# CLI. Precompiled headers were measured and left out: they saved nothing on the engine (75 s
# against 68 s) and little on the GUI tests, whose time goes into instantiating and optimising
# templates rather than parsing.

option(NANSCOPE_CCACHE "Compile through ccache when it is installed (never required)" ON)
option(NANSCOPE_UNITY "Compile the tests, the GUI and the CLI as one object per target" ON)

if(NANSCOPE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(NANSCOPE_CCACHE_PROGRAM ccache)
  if(NANSCOPE_CCACHE_PROGRAM)
    set(CMAKE_C_COMPILER_LAUNCHER ${NANSCOPE_CCACHE_PROGRAM})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${NANSCOPE_CCACHE_PROGRAM})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${NANSCOPE_CCACHE_PROGRAM})
    message(STATUS "nanscope: compiling through ${NANSCOPE_CCACHE_PROGRAM}")
  endif()
endif()

# nanscope_unity(TARGET...): compiles each TARGET's C++ sources as one object (a unity build). Where
# the time of many small files goes into instantiating and optimising the same templates (GoogleTest,
# QTest, Qt's containers) once per file, one object does it once: the GUI tests went from 130 s to
# 21 s. For the tests and the thin Qt and CLI layers only; the engine and the CUDA code, the numerics,
# keep an object per file. File-local helpers sit in anonymous namespaces under names of their own:
# two files' helpers of one name would be a compile error here.
function(nanscope_unity)
  if(NOT NANSCOPE_UNITY)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH UNITY_BUILD_BATCH_SIZE 0)
    # GCC takes a .cpp included by the unity file for a header, and warns of a test class whose
    # base sits in an anonymous namespace, which is right in a .cpp.
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
  endforeach()
endfunction()
