# FindCUDNN: the cuDNN headers as the imported target CUDNN::headers (all dnngraph itself needs:
# it opens libcudnn.so.9 at run time) and headers plus library as CUDNN::cudnn (for programs that
# call cuDNN themselves, like the cudnn-frontend probes), found in the order
# of CudnnDiscovery.cmake (CUDNN_ROOT, CUDNN_PATH, the active Python's nvidia-cudnn wheel,
# /usr/local/cuda, the distribution's paths) and reported with its path and version.
# Sets CUDNN_FOUND, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_VERSION, CUDNN_ROOT_FOUND,
# CUDNN_FOUND_THROUGH.
include(FindPackageHandleStandardArgs)
include("${CMAKE_CURRENT_LIST_DIR}/CudnnDiscovery.cmake")

dnngraph_discover_cudnn()

find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR VERSION_VAR CUDNN_VERSION
  REASON_FAILURE_MESSAGE "${CUDNN_DISCOVERY_ERROR}")

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  if(NOT CUDNN_FIND_QUIETLY)
    message(STATUS "cuDNN ${CUDNN_VERSION} in ${CUDNN_ROOT_FOUND} (through ${CUDNN_FOUND_THROUGH}): "
                   "${CUDNN_LIBRARY}")
  endif()
  add_library(CUDNN::headers INTERFACE IMPORTED)
  set_target_properties(CUDNN::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
  add_library(CUDNN::cudnn SHARED IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
  # Programs linked with cuDNN find this one at run time without LD_LIBRARY_PATH (a pip wheel's
  # folder, a tree of CUDNN_ROOT), also once installed: the linker records the folder as RUNPATH
  # (LD_LIBRARY_PATH still comes first). Not for the distribution's own folders.
  get_filename_component(_cudnn_lib_dir "${CUDNN_LIBRARY}" DIRECTORY)
  if(NOT _cudnn_lib_dir MATCHES "^/(usr/)?lib(64|32)?(/|$)")
    set_target_properties(CUDNN::cudnn PROPERTIES
      INTERFACE_LINK_OPTIONS "LINKER:-rpath,${_cudnn_lib_dir}")
  endif()
endif()
