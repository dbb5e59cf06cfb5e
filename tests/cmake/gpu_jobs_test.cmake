# scripts/gpu-jobs on the CPU: a job outlives the call that started it and records its exit code
# and output; wait says which jobs still run (exit 3) or that all have ended (0); a running job's
# name cannot be started again, nor a name with a slash; collect packs the folder, a file over
# the size limit as its tail.
# cmake -DSCRIPT=<scripts/gpu-jobs> -DWORK_DIR=<dir> -P gpu_jobs_test.cmake
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(jobs ${WORK_DIR}/jobs)

include(${CMAKE_CURRENT_LIST_DIR}/script_test_support.cmake)

function(jobs expected_rc output_var)
  run_script("gpu-jobs ${ARGN}" ${expected_rc} output
    ${CMAKE_COMMAND} -E env DNNGRAPH_JOBS_DIR=${jobs} DNNGRAPH_JOBS_MAX_MIB=1 bash ${SCRIPT} ${ARGN})
  set(${output_var} "${output}" PARENT_SCOPE)
endfunction()

# (No semicolons in the commands: CMake would split them into arguments.)
jobs(0 out start quick "echo first && echo last line && exit 3")
jobs(0 out start sleeper sleep 60)
jobs(0 out start big "head -c 1500000 /dev/zero && echo && echo end of big")
jobs(0 out wait 20 quick big)
expect("${out}" "quick ended rc=3 seconds=[0-9]+ \\| last line")
expect("${out}" "big ended rc=0")
jobs(3 out wait 1)
expect("${out}" "sleeper running")
jobs(2 out start sleeper sleep 1)
expect("${out}" "sleeper is still running")
jobs(2 out start "../escape" true)
expect("${out}" "bad job name")
jobs(0 out status quick)
expect("${out}" "^quick ended rc=3")

jobs(0 out collect ${WORK_DIR}/jobs.tar.gz)
execute_process(COMMAND tar -tzf ${WORK_DIR}/jobs.tar.gz OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tar could not list the archive")
endif()
expect("${listing}" "jobs/quick.txt")
expect("${listing}" "jobs/quick.rc")
expect("${listing}" "jobs/big.txt.tail")
expect_no("${listing}" "jobs/big.txt\n")  # the file over the limit goes in as its tail

# The sleeper would outlive the test: end it.
file(READ ${jobs}/sleeper.pid pid)
string(STRIP "${pid}" pid)
execute_process(COMMAND kill -TERM -- -${pid} RESULT_VARIABLE killed ERROR_QUIET)
if(NOT killed EQUAL 0)
  execute_process(COMMAND kill -TERM ${pid} ERROR_QUIET)
endif()
