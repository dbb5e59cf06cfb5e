# Installs the build in BUILD_DIR to a fresh prefix, checks that only the public headers are
# there and that the package names no Boost or GSL, then configures, builds and runs the consumer
# project in SOURCE_DIR against it with find_package(Boost) and find_package(Microsoft.GSL)
# disabled: IMPORT=ON `import dnngraph;` (COMPONENTS module), IMPORT=OFF the headers. Where the
# build has no module (MODULE_BUILT off), asking for the component must fail with a message that
# says so. Run with cmake -P (see tests/CMakeLists.txt).
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
# with "|", and the entry point dnngraph.hpp), and none of them includes a backend/ or cuDNN
# header: the consumer's build below proves they are complete.
string(REPLACE "|" ";" expected "${PUBLIC_HEADERS}")
list(APPEND expected dnngraph.hpp)
list(SORT expected)
set(include_dir "${prefix}/include/dnngraph")
file(GLOB_RECURSE installed RELATIVE "${include_dir}" "${include_dir}/*.h" "${include_dir}/*.hpp")
list(SORT installed)
if(NOT installed STREQUAL expected)
  message(FATAL_ERROR "installed headers: ${installed}\nexpected (the public ones): ${expected}")
endif()
foreach(header IN LISTS installed)
  file(STRINGS "${include_dir}/${header}" includes
       REGEX "#include [<\"](backend/|cudnn|boost/|gsl/)")
  if(includes)
    message(FATAL_ERROR "public header ${header} includes an internal, cuDNN, Boost or GSL header: "
                        "${includes}")
  endif()
endforeach()
# The package's CMake files ask for CUDA and cuDNN only (comments aside).
file(GLOB package_files "${prefix}/lib*/cmake/dnngraph/*.cmake")
foreach(file IN LISTS package_files)
  file(STRINGS "${file}" mentions REGEX "^[^#]*(Boost|GSL|boost_)")
  if(mentions)
    message(FATAL_ERROR "the installed ${file} names Boost or GSL: ${mentions}")
  endif()
endforeach()

set(configure ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -G Ninja
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON -DCMAKE_DISABLE_FIND_PACKAGE_Microsoft.GSL=ON)
if(IMPORT)
  list(APPEND configure -DIMPORT=ON -DCMAKE_CXX_COMPILER_CLANG_SCAN_DEPS=${SCAN_DEPS})
elseif(NOT MODULE_BUILT)
  execute_process(COMMAND ${configure} -B "${WORK_DIR}/no-module" -DIMPORT=ON
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0 OR NOT out MATCHES "lacks[ \n]+the[ \n]+component[ \n]+`module`")
    message(FATAL_ERROR "COMPONENTS module of a build without it: rc ${rc}, expected a failure "
                        "that names the component:\n${out}")
  endif()
  message(STATUS "COMPONENTS module of a build without it fails, as it should")
endif()
run(${configure} -B "${WORK_DIR}/build")
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer")
