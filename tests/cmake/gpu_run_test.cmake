# scripts/gpu-run on the CPU, over a bundle of stub programs: each binary's line (passed, skipped,
# failed with its exit code, timed out after DNNGRAPH_TIMEOUT seconds), the closing count and the
# exit code; a bad DNNGRAPH_TIMEOUT is refused before anything runs.
# cmake -DSCRIPT=<scripts/gpu-run> -DWORK_DIR=<dir> -P gpu_run_test.cmake
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/bundle ${WORK_DIR}/cudnn ${WORK_DIR}/out)

include(${CMAKE_CURRENT_LIST_DIR}/script_test_support.cmake)

function(stub name body)
  file(WRITE ${WORK_DIR}/bundle/${name} "#!/usr/bin/env bash\n${body}\n")
  file(CHMOD ${WORK_DIR}/bundle/${name} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endfunction()
stub(gpu_pass_test "echo all good")
stub(gpu_skip_test "echo 'skipped: no CUDA device'\nexit 77")
stub(gpu_fail_test "echo 'the check that failed'\nexit 3")
stub(gpu_hang_test "echo started\nexec sleep 60")
stub(bench_not_a_test "exit 1")  # benches are scripts/gpu-bench's: never run here

function(gpu_run expected_rc output_var timeout)
  run_script("gpu-run (DNNGRAPH_TIMEOUT=${timeout})" ${expected_rc} output
    ${CMAKE_COMMAND} -E env DNNGRAPH_BUNDLE=${WORK_DIR}/bundle DNNGRAPH_CUDNN_LIB=${WORK_DIR}/cudnn
      OUT=${WORK_DIR}/out DNNGRAPH_JOBS=4 DNNGRAPH_TIMEOUT=${timeout} bash ${SCRIPT})
  set(${output_var} "${output}" PARENT_SCOPE)
endfunction()

string(TIMESTAMP start "%s")
gpu_run(1 out 2)
string(TIMESTAMP end "%s")
expect("${out}" "gpu_pass_test +passed")
expect("${out}" "gpu_skip_test +skipped")
expect("${out}" "gpu_fail_test +FAILED \\(rc 3\\)")
expect("${out}" "    the check that failed")
expect("${out}" "gpu_hang_test +FAILED \\(timed out after 2 s\\)")
expect("${out}" "1 passed, 2 failed, 1 skipped")
expect_no("${out}" "bench_not_a_test")
math(EXPR took "${end} - ${start}")
if(took GREATER 30)
  message(FATAL_ERROR "gpu-run took ${took} s: the hung stub was not stopped after 2 s")
endif()
file(READ ${WORK_DIR}/out/gpu-run.log log)
expect("${log}" "===== gpu_hang_test \\(rc 124\\)\nstarted")

gpu_run(2 out 0)
expect("${out}" "DNNGRAPH_TIMEOUT must be a whole number of seconds > 0")
gpu_run(2 out 1m)
expect("${out}" "DNNGRAPH_TIMEOUT must be a whole number")
