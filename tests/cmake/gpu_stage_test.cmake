# scripts/gpu-stage on the CPU, over a stand-in checkout: the first call copies the tree and the
# venv's cuDNN folder, takes what was carried (a bundle, unpacked once; a cuDNN archive, unpacked
# by scripts/cudnn-unpack); a later call, whose checkout no longer has the first call's carried
# files, takes only what it brings and keeps what the stage has (a bundle of the same name is
# not replaced); a damaged bundle is named (exit 2).
# cmake -DSCRIPTS=<scripts/> -DWORK_DIR=<dir> -P gpu_stage_test.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(repo ${WORK_DIR}/repo)
set(stage ${WORK_DIR}/stage)
file(MAKE_DIRECTORY ${repo}/scripts ${repo}/docs ${repo}/.cudnn/9.99.0 ${WORK_DIR}/torchlib
     ${WORK_DIR}/parts/bundle ${WORK_DIR}/parts/cudnn)
file(COPY ${SCRIPTS}/gpu-stage ${SCRIPTS}/cudnn-unpack DESTINATION ${repo}/scripts)
file(WRITE ${repo}/docs/readme.md "tracked\n")
file(WRITE ${WORK_DIR}/torchlib/libcudnn.so.9 "torch's cuDNN\n")

include(${CMAKE_CURRENT_LIST_DIR}/script_test_support.cmake)

# pack(<archive> <folder>): the folder's files as one xz tar.
function(pack archive folder)
  execute_process(COMMAND bash -c "tar -C '${folder}' -cf - . | xz -1 > '${archive}'"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not pack ${folder}")
  endif()
endfunction()

file(WRITE ${WORK_DIR}/parts/bundle/gpu_one_test "first build\n")
file(WRITE ${WORK_DIR}/parts/bundle/gpu_two_test "first build\n")
pack(${repo}/bundle.tar.xz ${WORK_DIR}/parts/bundle)
file(WRITE ${WORK_DIR}/parts/cudnn/libcudnn.so.9 "9.99 core\n")
pack(${repo}/.cudnn/9.99.0/core.tar.xz ${WORK_DIR}/parts/cudnn)

set(stage_cmd ${CMAKE_COMMAND} -E env DNNGRAPH_TORCH_CUDNN=${WORK_DIR}/torchlib
    bash ${repo}/scripts/gpu-stage ${stage})
run_script("gpu-stage, first call" 0 out ${stage_cmd})
expect("${out}" "tree copied to ")
expect("${out}" "torch's cuDNN copied to ")
expect("${out}" "took bundle.tar.xz")
expect("${out}" "bundle: 2 programs")
expect("${out}" "\\.cudnn/9\\.99\\.0: unpacked core\\.tar\\.xz")
foreach(file docs/readme.md scripts/gpu-stage bundle/gpu_one_test .cudnn/torch/lib/libcudnn.so.9
             .cudnn/9.99.0/lib/libcudnn.so.9)
  if(NOT EXISTS ${stage}/${file})
    message(FATAL_ERROR "the stage lacks ${file}")
  endif()
endforeach()

# The next call: a new checkout without the first call's carried files, bringing a wheel and a
# bundle of the same name built again.
file(REMOVE ${repo}/bundle.tar.xz ${repo}/.cudnn/9.99.0/core.tar.xz)
file(MAKE_DIRECTORY ${repo}/dist)
file(WRITE ${repo}/dist/dnngraph-0.1.0-cp312-cp312-linux_x86_64.whl "a wheel\n")
file(WRITE ${WORK_DIR}/parts/bundle/gpu_two_test "second build\n")
pack(${repo}/bundle.tar.xz ${WORK_DIR}/parts/bundle)
run_script("gpu-stage, second call" 0 out ${stage_cmd})
expect_no("${out}" "tree copied")
expect_no("${out}" "took bundle.tar.xz")
expect("${out}" "took dist/dnngraph-0.1.0-cp312-cp312-linux_x86_64.whl")
expect("${out}" "bundle: 2 programs")
file(READ ${stage}/bundle/gpu_two_test kept)
expect("${kept}" "first build")
if(NOT EXISTS ${stage}/.cudnn/9.99.0/lib/libcudnn.so.9)
  message(FATAL_ERROR "the unpacked cuDNN left the stage")
endif()

file(WRITE ${repo}/bundle-bad.tar.xz "not an archive\n")
run_script("gpu-stage, a damaged bundle" 2 out ${stage_cmd})
expect("${out}" "bundle-bad.tar.xz is damaged")
if(EXISTS ${stage}/bundle-bad OR EXISTS ${stage}/bundle-bad.partial)
  message(FATAL_ERROR "a damaged bundle left a folder in the stage")
endif()
