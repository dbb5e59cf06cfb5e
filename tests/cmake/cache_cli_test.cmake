# dnngraph-cache over a folder with a good cache, a damaged one, a set-aside file, a temporary of
# a dead writer and a cache of another cuDNN:
#   cmake -DCLI=<dnngraph-cache> -DDOCUMENT=<a cuDNN 9.19 document> -DWORK_DIR=<scratch>
#         -DLOADED=<loaded cuDNN, e.g. 9.19.0> -P cache_cli_test.cmake
# The same specification for `python -m dnngraph.cache`: -DCLI="<python> -m dnngraph.cache" (the
# command line is split at spaces).
separate_arguments(CLI UNIX_COMMAND "${CLI}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(READ "${DOCUMENT}" document)
string(REGEX MATCH "\"cudnnVersion\":([0-9]+)" _ "${document}")
set(written "${CMAKE_MATCH_1}")
math(EXPR major "${written} / 10000")
math(EXPR minor "(${written} / 100) % 100")
math(EXPR patch "${written} % 100")
set(version "${major}.${minor}.${patch}")
file(WRITE "${WORK_DIR}/matmul--cudnn-${version}--sm_90.json" "${document}")
string(SUBSTRING "${document}" 0 200 half)
file(WRITE "${WORK_DIR}/conv--cudnn-${version}--sm_90.json" "${half}")
file(WRITE "${WORK_DIR}/old--cudnn-${version}--sm_90.json.damaged" "{")
file(WRITE "${WORK_DIR}/matmul--cudnn-${version}--sm_90.json.tmp.999999999.1" "{")
file(WRITE "${WORK_DIR}/matmul--cudnn-8.9.7--sm_90.json" "${document}")

# run(<expected exit> <output regex>... ARGS <cli args>)
function(run expected_rc)
  cmake_parse_arguments(R "" "" "EXPECT;ARGS" ${ARGN})
  execute_process(COMMAND ${CLI} ${R_ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  message(STATUS "dnngraph-cache ${R_ARGS} -> ${rc}\n${out}${err}")
  if(NOT rc STREQUAL expected_rc)
    message(SEND_ERROR "dnngraph-cache ${R_ARGS}: exit ${rc}, expected ${expected_rc}")
  endif()
  foreach(pattern IN LISTS R_EXPECT)
    if(NOT "${out}" MATCHES "${pattern}")
      message(SEND_ERROR "dnngraph-cache ${R_ARGS}: output lacks /${pattern}/")
    endif()
  endforeach()
endfunction()

run(0 ARGS list "${WORK_DIR}" EXPECT
    "matmul +${version} +sm_90 +0 +[0-9]+ +matmul--cudnn-${version}--sm_90.json"
    "conv +${version} +sm_90 +damaged" "matmul +8.9.7" "3 caches in")
run(0 ARGS inspect "${WORK_DIR}/matmul--cudnn-${version}--sm_90.json" EXPECT
    "written by cuDNN ${version}" "topology: MATMUL; 3 tensors, dynamic shapes" "entries: 0")
run(1 ARGS verify "${WORK_DIR}" EXPECT
    "conv--cudnn-${version}--sm_90.json: DAMAGED: kernel cache JSON"
    "matmul--cudnn-8.9.7--sm_90.json: ok: checked \\(0 entries\\); not loaded: it is for cuDNN 8.9.7"
    "1 damaged")
if(version STREQUAL LOADED)
  run(1 ARGS verify "${WORK_DIR}" EXPECT
      "matmul--cudnn-${version}--sm_90.json: ok: checked and loaded \\(0 entries\\)")
endif()
# DNNGRAPH_LOG / DNNGRAPH_LOG_FILE, read when the program starts: to a file, and to stdout.
execute_process(COMMAND ${CMAKE_COMMAND} -E env DNNGRAPH_LOG=info
                        "DNNGRAPH_LOG_FILE=${WORK_DIR}/log.txt" ${CLI} verify "${WORK_DIR}"
                OUTPUT_QUIET)
file(READ "${WORK_DIR}/log.txt" log)
if(version STREQUAL LOADED AND NOT log MATCHES "\\[dnngraph info\\] kernel cache: loaded a document of")
  message(SEND_ERROR "DNNGRAPH_LOG=info with DNNGRAPH_LOG_FILE: the file holds '${log}'")
endif()
file(REMOVE "${WORK_DIR}/log.txt")
execute_process(COMMAND ${CMAKE_COMMAND} -E env DNNGRAPH_LOG=off DNNGRAPH_LOG_FILE=stdout
                        ${CLI} verify "${WORK_DIR}" OUTPUT_VARIABLE quiet)
if(quiet MATCHES "dnngraph info")
  message(SEND_ERROR "DNNGRAPH_LOG=off still logged: ${quiet}")
endif()
run(0 ARGS prune "${WORK_DIR}" --dry-run EXPECT "would remove old--cudnn-${version}--sm_90.json.damaged"
    "temporary of a writer that died" "for cuDNN 8.9.7" "3 would be removed")
run(0 ARGS prune "${WORK_DIR}" EXPECT "3 removed")
file(REMOVE "${WORK_DIR}/conv--cudnn-${version}--sm_90.json")
run(0 ARGS verify "${WORK_DIR}" EXPECT "1 ok, 0 damaged")
run(2 ARGS frobnicate "${WORK_DIR}")
