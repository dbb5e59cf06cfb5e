# cuDNN discovery order (cmake/CudnnDiscovery.cmake) over fake trees, in script mode:
#   cmake -DWORK_DIR=<scratch> -P cudnn_discovery_test.cmake
# Each tree holds cudnn.h, cudnn_version.h with its own version, and a libcudnn file; the test
# checks which one each configuration of CUDNN_ROOT / CUDNN_PATH / Python / system roots picks.
include("${CMAKE_CURRENT_LIST_DIR}/../../cmake/CudnnDiscovery.cmake")

file(REMOVE_RECURSE "${WORK_DIR}")

function(fake_tree root minor include_sub lib_sub lib_name)
  file(WRITE "${root}/${include_sub}/cudnn.h" "")
  file(WRITE "${root}/${include_sub}/cudnn_version.h"
       "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR ${minor}\n#define CUDNN_PATCHLEVEL 0\n")
  file(WRITE "${root}/${lib_sub}/${lib_name}" "")
endfunction()

set(root_a "${WORK_DIR}/root")
set(root_b "${WORK_DIR}/path")
set(wheel "${WORK_DIR}/site-packages/nvidia/cudnn")
set(sys_cuda "${WORK_DIR}/usr-local-cuda")
set(sys_usr "${WORK_DIR}/usr")
fake_tree("${root_a}" 1 include lib libcudnn.so)
fake_tree("${root_b}" 2 include lib64 libcudnn.so)
fake_tree("${wheel}" 3 include lib libcudnn.so.9)  # the wheel has no unversioned link
fake_tree("${sys_cuda}" 4 include lib64 libcudnn.so)
fake_tree("${sys_usr}" 5 include/x86_64-linux-gnu lib/x86_64-linux-gnu libcudnn.so.9)
set(CMAKE_LIBRARY_ARCHITECTURE x86_64-linux-gnu)

# A Python that imports the wheel (prints nvidia.cudnn's folder) and one without it.
file(WRITE "${WORK_DIR}/bin/python-wheel" "#!/bin/sh\necho '${wheel}'\n")
file(WRITE "${WORK_DIR}/bin/python-bare" "#!/bin/sh\necho 'ModuleNotFoundError' >&2\nexit 1\n")
file(CHMOD "${WORK_DIR}/bin/python-wheel" "${WORK_DIR}/bin/python-bare"
     PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)

set(failures 0)
function(expect case version root)
  dnngraph_discover_cudnn()
  if(NOT CUDNN_VERSION STREQUAL version OR NOT CUDNN_ROOT_FOUND STREQUAL root)
    message(SEND_ERROR "${case}: expected ${version} in ${root}, found '${CUDNN_VERSION}' in "
                       "'${CUDNN_ROOT_FOUND}' (${CUDNN_FOUND_THROUGH}; ${CUDNN_DISCOVERY_ERROR})")
  else()
    message(STATUS "${case}: ${CUDNN_VERSION} through ${CUDNN_FOUND_THROUGH}")
  endif()
endfunction()
function(expect_none case fragment)
  dnngraph_discover_cudnn()
  if(CUDNN_LIBRARY OR NOT CUDNN_DISCOVERY_ERROR MATCHES "${fragment}")
    message(SEND_ERROR "${case}: expected no cuDNN and an error with '${fragment}', found "
                       "'${CUDNN_LIBRARY}', error '${CUDNN_DISCOVERY_ERROR}'")
  else()
    message(STATUS "${case}: ${CUDNN_DISCOVERY_ERROR}")
  endif()
endfunction()

set(DNNGRAPH_CUDNN_SYSTEM_ROOTS "${sys_cuda}" "${sys_usr}")
set(Python_EXECUTABLE "${WORK_DIR}/bin/python-wheel")
unset(ENV{CUDNN_ROOT})
unset(ENV{CUDNN_PATH})

set(CUDNN_ROOT "${root_a}")
set(CUDNN_PATH "${root_b}")
expect("CUDNN_ROOT comes first" 9.1.0 "${root_a}")
unset(CUDNN_ROOT)
set(ENV{CUDNN_ROOT} "${root_a}")
expect("the environment's CUDNN_ROOT before CUDNN_PATH" 9.1.0 "${root_a}")
unset(ENV{CUDNN_ROOT})
expect("CUDNN_PATH before the wheel" 9.2.0 "${root_b}")
unset(CUDNN_PATH)
set(ENV{CUDNN_PATH} "${root_b}")
expect("the environment's CUDNN_PATH before the wheel" 9.2.0 "${root_b}")
unset(ENV{CUDNN_PATH})
expect("the active Python's wheel before /usr/local/cuda" 9.3.0 "${wheel}")
set(Python_EXECUTABLE "${WORK_DIR}/bin/python-bare")
expect("/usr/local/cuda when Python has no wheel" 9.4.0 "${sys_cuda}")
set(DNNGRAPH_CUDNN_SYSTEM_ROOTS "${WORK_DIR}/empty" "${sys_usr}")
expect("the distribution's multiarch folders last" 9.5.0 "${sys_usr}")
set(DNNGRAPH_CUDNN_SYSTEM_ROOTS "${WORK_DIR}/empty")
expect_none("nothing anywhere" "no cuDNN found; tried .*empty")
set(DNNGRAPH_CUDNN_SYSTEM_ROOTS "${sys_cuda}")
set(CUDNN_ROOT "${WORK_DIR}/empty")
expect_none("an explicit root without cuDNN never falls through" "CUDNN_ROOT=.*empty holds no cuDNN")
