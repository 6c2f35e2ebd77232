# Decides whether the CUDA library is built. AUTO builds it when nvcc is found
# (CUDA 13.0 lives in /usr/local/cuda on our machines); ON insists; OFF skips.
set(NANSCOPE_HAVE_CUDA OFF)
if(NOT NANSCOPE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(NANSCOPE_HAVE_CUDA ON)
  elseif(NANSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "NANSCOPE_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  else()
    message(STATUS "nanscope: nvcc not found, building without the CUDA library")
  endif()
endif()
message(STATUS "nanscope: CUDA library ${NANSCOPE_HAVE_CUDA}")

# Where the programs look for the CUDA plugin, relative to their own folder: the build tree puts it
# in lib/nanscope beside cli/ and gui/, and the package in /usr/lib/nanscope beside /usr/bin.
set(NANSCOPE_PLUGIN_SUBDIR lib/nanscope)
set(NANSCOPE_PLUGIN_BUILD_DIR ${CMAKE_BINARY_DIR}/${NANSCOPE_PLUGIN_SUBDIR})
# The plugins (the CUDA backend's, and the tests' stand-ins) carry the engine: it is compiled
# position-independent, as the CUDA library is.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
