# What the CMake script tests of scripts/ share (gpu_sanitize_test.cmake, gpu_jobs_test.cmake,
# gpu_run_test.cmake).

# run_script(<label> <expected exit code> <output variable> <command...>): runs the command and
# fails the test, with its output, when it exits with another code; the variable gets its
# standard output and, after it, its standard error.
function(run_script label expected_rc output_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "${label} exited ${rc}, expected ${expected_rc}:\n${output}\n${errors}")
  endif()
  set(${output_var} "${output}${errors}" PARENT_SCOPE)
endfunction()

function(expect text pattern)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "expected /${pattern}/ in:\n${text}")
  endif()
endfunction()

# expect_no(<text> <pattern>): fails the test when the text has what the pattern matches.
function(expect_no text pattern)
  if(text MATCHES "${pattern}")
    message(FATAL_ERROR "expected no /${pattern}/ in:\n${text}")
  endif()
endfunction()
