# Installs the build in BUILD_DIR to a fresh prefix, checks that only the public headers are
# there, then configures, builds and runs the consumer project in SOURCE_DIR against it. Run with
# cmake -P (see tests/CMakeLists.txt).
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

# Exactly the public headers are installed (PUBLIC_HEADERS: the root CMakeLists' list, joined
# with "|"), and none of them includes a backend/ or cuDNN header: the module's global module
# fragment includes api/dnngraph.hpp, so the consumer's build below proves they are complete.
string(REPLACE "|" ";" expected "${PUBLIC_HEADERS}")
list(SORT expected)
set(include_dir "${prefix}/include/dnngraph")
file(GLOB_RECURSE installed RELATIVE "${include_dir}" "${include_dir}/*.h" "${include_dir}/*.hpp")
list(SORT installed)
if(NOT installed STREQUAL expected)
  message(FATAL_ERROR "installed headers: ${installed}\nexpected (the public ones): ${expected}")
endif()
foreach(header IN LISTS installed)
  file(STRINGS "${include_dir}/${header}" includes REGEX "#include [<\"](backend/|cudnn)")
  if(includes)
    message(FATAL_ERROR "public header ${header} includes an internal or cuDNN header: ${includes}")
  endif()
endforeach()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G Ninja
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_CXX_COMPILER_CLANG_SCAN_DEPS=${SCAN_DEPS}
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer")
