# FindCUDNN: the cuDNN headers and library as the imported target CUDNN::cudnn.
# Honours CUDNN_ROOT (a CMake or environment variable): an installed toolkit tree or the
# nvidia/cudnn folder of the nvidia-cudnn-cu13 wheel (include/, lib/libcudnn.so.9).
# Sets CUDNN_FOUND, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_VERSION.
include(FindPackageHandleStandardArgs)

set(_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT} /usr/local/cuda)
find_path(CUDNN_INCLUDE_DIR cudnn_version.h
  HINTS ${_cudnn_hints} PATH_SUFFIXES include NO_CACHE)
# The wheel ships only libcudnn.so.9, no unversioned link.
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 NAMES_PER_DIR
  HINTS ${_cudnn_hints} PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu NO_CACHE)

if(CUDNN_INCLUDE_DIR)
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_lines
       REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(_part MAJOR MINOR PATCHLEVEL)
    string(REGEX MATCH "CUDNN_${_part} +([0-9]+)" _m "${_cudnn_lines}")
    set(_cudnn_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(CUDNN_VERSION "${_cudnn_MAJOR}.${_cudnn_MINOR}.${_cudnn_PATCHLEVEL}")
endif()

find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR VERSION_VAR CUDNN_VERSION)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn SHARED IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
