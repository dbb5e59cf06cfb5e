# scripts/gpu-sanitize's bookkeeping, on the CPU: a bundle of stub programs, a stub
# compute-sanitizer that runs them and prints an error summary as each tool does (racecheck's
# "RACECHECK SUMMARY: N hazards displayed (2 errors, ...)" for gpu_b_test, none at all for
# gpu_c_test under memcheck, and for gpu_b_test under memcheck 25 errors with the second summary
# line the tool adds past --print-limit, "5 errors were not printed", which is no second count),
# and a stub cuDNN folder. Checks the
# budget (no pair started once spent), the table and exit codes, that a resumed sweep runs no
# pair twice, that another cuDNN version runs them again, that bench_* programs are left out,
# that a pair past its time limit is recorded as a timeout, and that a program split into its
# suites or cases (DNNGRAPH_SANITIZE_SPLIT, two at a time) runs each as a pair of its own.
# cmake -DSCRIPT=<scripts/gpu-sanitize> -DWORK_DIR=<dir> -P gpu_sanitize_test.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(bundle ${WORK_DIR}/bundle)
set(out ${WORK_DIR}/out)
file(MAKE_DIRECTORY ${bundle} ${WORK_DIR}/cudnn ${out})

function(write_executable path text)
  file(WRITE ${path}.in "${text}")
  file(COPY_FILE ${path}.in ${path})
  file(CHMOD ${path} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  file(REMOVE ${path}.in)
endfunction()

foreach(program gpu_a_test gpu_b_test gpu_c_test bench_x)
  write_executable(${bundle}/${program} "#!/bin/sh\necho ${program} ran\n")
endforeach()
# The stub sanitizer: --tool T ... <program> <args>; counts its runs in runs.txt.
write_executable(${WORK_DIR}/compute-sanitizer [=[#!/bin/bash
[ "$1" = --help ] && exit 0
tool=$2
for a in "$@"; do case "$a" in */gpu_*|*/bench_*) program=$a ;; esac; done
name=$(basename "$program")
unit=""
for a in "$@"; do case "$a" in --run_test=*) unit=" ${a#--run_test=}" ;; esac; done
echo "$name $tool$unit" >> "$(dirname "$0")/runs.txt"
[ "${DNNGRAPH_TEST_UNDER_SANITIZER:-}" = 1 ] || echo "$name $tool$unit" >> "$(dirname "$0")/untold.txt"
[ "$name" = gpu_slow_test ] && sleep 5
"$program"
case "$name $tool" in
  "gpu_b_test racecheck") echo "========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)" ;;
  "gpu_c_test memcheck") ;;
  "gpu_b_test memcheck") printf '%s\n' "========= ERROR SUMMARY: 25 errors" \
    "========= ERROR SUMMARY: 5 errors were not printed. Use --print-limit option to adjust" ;;
  *" racecheck") echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" ;;
  *) echo "========= ERROR SUMMARY: 0 errors" ;;
esac
]=])

include(${CMAKE_CURRENT_LIST_DIR}/script_test_support.cmake)

function(sweep expected_rc output_var)
  run_script(gpu-sanitize ${expected_rc} output
    ${CMAKE_COMMAND} -E env DNNGRAPH_BUNDLE=${bundle} DNNGRAPH_CUDNN_LIB=${WORK_DIR}/cudnn
    COMPUTE_SANITIZER=${WORK_DIR}/compute-sanitizer OUT=${out} ${ARGN} bash ${SCRIPT})
  set(${output_var} "${output}" PARENT_SCOPE)
endfunction()

function(runs expected)
  set(count 0)
  if(EXISTS ${WORK_DIR}/runs.txt)
    file(STRINGS ${WORK_DIR}/runs.txt lines)
    list(LENGTH lines count)
  endif()
  if(NOT count EQUAL expected)
    message(FATAL_ERROR "the stub sanitizer ran ${count} times, expected ${expected}")
  endif()
endfunction()

set(v919 DNNGRAPH_SANITIZE_CUDNN_VERSION=91900 "DNNGRAPH_SANITIZE_TOOLS=memcheck racecheck")
# A spent budget starts nothing: 6 pairs left.
sweep(3 output ${v919} DNNGRAPH_SANITIZE_SECONDS=0)
expect("${output}" "0 pairs, 0 with errors, 6 left")
runs(0)
# The whole sweep: gpu_b_test racecheck has 2 errors, memcheck 25, gpu_c_test memcheck no summary.
sweep(1 output ${v919})
runs(6)
expect("${output}" "gpu_b_test +racecheck +2 +rc 0")
expect("${output}" "gpu_b_test +memcheck +25 +rc 0")
expect("${output}" "gpu_c_test +memcheck +none")
expect("${output}" "gpu_a_test +memcheck +0 +rc 0")
expect("${output}" "6 pairs, 3 with errors, 0 left")
expect_no("${output}" "bench_x")
file(STRINGS ${out}/sanitize.tsv lines)
list(LENGTH lines count)
if(NOT count EQUAL 6)
  message(FATAL_ERROR "sanitize.tsv has ${count} lines, expected 6")
endif()
file(READ ${out}/sanitize.log log)
expect("${log}" "===== gpu_b_test racecheck \\(rc 0, [0-9]+ s, errors 2\\)\ngpu_b_test ran")
# Resumed from a results file carried elsewhere: nothing runs again.
file(COPY_FILE ${out}/sanitize.tsv ${WORK_DIR}/carried.tsv)
file(REMOVE ${out}/sanitize.tsv)
sweep(1 output ${v919} DNNGRAPH_SANITIZE_RESULTS=${WORK_DIR}/carried.tsv)
runs(6)
expect("${output}" "6 pairs, 3 with errors, 0 left")
# Another cuDNN: its pairs run again (synccheck only), the 9.19 lines stay.
sweep(0 output DNNGRAPH_SANITIZE_CUDNN_VERSION=92801 DNNGRAPH_SANITIZE_TOOLS=synccheck)
runs(9)
expect("${output}" "# cuDNN 92801")
expect("${output}" "3 pairs, 0 with errors, 0 left")
# A pair past its limit: recorded as a timeout, not run again.
write_executable(${bundle}/gpu_slow_test "#!/bin/sh\necho slow\n")
sweep(1 output DNNGRAPH_SANITIZE_CUDNN_VERSION=92801 DNNGRAPH_SANITIZE_TOOLS=synccheck
      DNNGRAPH_SANITIZE_PAIR_SECONDS=1)
expect("${output}" "gpu_slow_test +synccheck +timeout")
expect("${output}" "4 pairs, 1 with errors, 0 left")
runs(10)
# An unknown tool is refused before anything runs.
sweep(2 output DNNGRAPH_SANITIZE_TOOLS=leakcheck)
runs(10)
# Split into units, two at a time: a program listing suites a and b (b with cases one and two)
# and a top-level case c; each unit a pair of its own, named program:unit, run with --run_test.
file(MAKE_DIRECTORY ${WORK_DIR}/split ${WORK_DIR}/split-out)
write_executable(${WORK_DIR}/split/gpu_split_test [=[#!/bin/sh
case "$*" in *--list_content*) printf 'a*\n    x*\nb*\n    one*\n    two*\nc*\n' >&2; exit 0 ;; esac
echo "gpu_split_test ran $*"
]=])
foreach(split_mode suite case)
  file(REMOVE ${WORK_DIR}/runs.txt)
  run_script(gpu-sanitize 0 output ${CMAKE_COMMAND} -E env DNNGRAPH_BUNDLE=${WORK_DIR}/split
    DNNGRAPH_CUDNN_LIB=${WORK_DIR}/cudnn COMPUTE_SANITIZER=${WORK_DIR}/compute-sanitizer
    OUT=${WORK_DIR}/split-out/${split_mode} DNNGRAPH_SANITIZE_CUDNN_VERSION=91900
    DNNGRAPH_SANITIZE_TOOLS=memcheck DNNGRAPH_SANITIZE_SPLIT=${split_mode}
    DNNGRAPH_SANITIZE_JOBS=2 bash ${SCRIPT})
  if(split_mode STREQUAL "suite")
    set(units a b c)
  else()
    set(units a/x b/one b/two c)
  endif()
  list(LENGTH units count)
  runs(${count})
  foreach(unit IN LISTS units)
    expect("${output}" "gpu_split_test:${unit} +memcheck +0 +rc 0")
    file(READ ${WORK_DIR}/runs.txt ran)
    expect("${ran}" "gpu_split_test memcheck ${unit}\n")
  endforeach()
  expect("${output}" "${count} pairs, 0 with errors, 0 left")
endforeach()
# Only the units a regular expression names: b's cases, not a/x or c (neither run nor left).
file(REMOVE ${WORK_DIR}/runs.txt)
run_script(gpu-sanitize 0 output ${CMAKE_COMMAND} -E env DNNGRAPH_BUNDLE=${WORK_DIR}/split
  DNNGRAPH_CUDNN_LIB=${WORK_DIR}/cudnn COMPUTE_SANITIZER=${WORK_DIR}/compute-sanitizer
  OUT=${WORK_DIR}/split-out/only DNNGRAPH_SANITIZE_CUDNN_VERSION=91900
  DNNGRAPH_SANITIZE_TOOLS=memcheck DNNGRAPH_SANITIZE_SPLIT=case
  "DNNGRAPH_SANITIZE_UNITS=:b/(one|two)$" bash ${SCRIPT})
runs(2)
expect("${output}" "gpu_split_test:b/one +memcheck +0")
expect("${output}" "gpu_split_test:b/two +memcheck +0")
expect_no("${output}" "gpu_split_test:(a/x|c) ")
expect("${output}" "2 pairs, 0 with errors, 0 left")
run_script(gpu-sanitize 2 output ${CMAKE_COMMAND} -E env DNNGRAPH_BUNDLE=${WORK_DIR}/split
  DNNGRAPH_CUDNN_LIB=${WORK_DIR}/cudnn COMPUTE_SANITIZER=${WORK_DIR}/compute-sanitizer
  OUT=${WORK_DIR}/split-out/bad "DNNGRAPH_SANITIZE_UNITS=(" bash ${SCRIPT})
expect("${output}" "DNNGRAPH_SANITIZE_UNITS=\\(: not a regular expression")
run_script(gpu-sanitize 2 output ${CMAKE_COMMAND} -E env DNNGRAPH_BUNDLE=${WORK_DIR}/split
  DNNGRAPH_CUDNN_LIB=${WORK_DIR}/cudnn COMPUTE_SANITIZER=${WORK_DIR}/compute-sanitizer
  OUT=${WORK_DIR}/split-out/bad DNNGRAPH_SANITIZE_SPLIT=test bash ${SCRIPT})
expect("${output}" "DNNGRAPH_SANITIZE_SPLIT=test: suite or case")

# Every program ran told it is under a tool (its timing loops run once: timing_runs).
if(EXISTS ${WORK_DIR}/untold.txt)
  file(READ ${WORK_DIR}/untold.txt untold)
  message(FATAL_ERROR "ran without DNNGRAPH_TEST_UNDER_SANITIZER=1:\n${untold}")
endif()

# Passed: leave no stub executables named gpu_* in the build tree for scripts/gpu-bundle to find.
file(REMOVE_RECURSE ${WORK_DIR})
