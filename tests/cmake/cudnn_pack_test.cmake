# scripts/cudnn-pack --full and scripts/cudnn-unpack on the CPU, with stand-in libraries of
# random bytes: the full set is cut into parts no larger than asked; the other side unpacks
# nothing of it (exit 3, naming the parts still to come) until every part is there, then gives
# back every library byte for byte; a damaged part is named (exit 2); unpacking again does
# nothing; a bad option is refused.
# cmake -DSCRIPTS=<scripts/> -DWORK_DIR=<dir> -P cudnn_pack_test.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(version 9.99.0.1)
set(here ${WORK_DIR}/cudnn/${version})
file(MAKE_DIRECTORY ${here}/include ${here}/lib)
file(WRITE ${here}/include/cudnn_version.h "#define CUDNN_MAJOR 9\n")

include(${CMAKE_CURRENT_LIST_DIR}/script_test_support.cmake)

set(libs libcudnn libcudnn_graph libcudnn_engines_runtime_compiled libcudnn_heuristic
    libcudnn_ops libcudnn_cnn libcudnn_adv libcudnn_engines_precompiled)
foreach(name IN LISTS libs)
  set(bytes 20000)
  if(name STREQUAL "libcudnn_engines_precompiled")
    set(bytes 900000)
  endif()
  execute_process(COMMAND head -c ${bytes} /dev/urandom OUTPUT_FILE ${here}/lib/${name}.so.9)
endforeach()

set(env ${CMAKE_COMMAND} -E env DNNGRAPH_CUDNN_DIR=${WORK_DIR}/cudnn DNNGRAPH_CUDNN_PART_BYTES=300000)
run_script("cudnn-pack --fulll" 2 out ${env} bash ${SCRIPTS}/cudnn-pack ${version} --fulll)
expect("${out}" "usage: scripts/cudnn-pack")
run_script("cudnn-pack --full" 0 out ${env} bash ${SCRIPTS}/cudnn-pack ${version} --full)
expect("${out}" "full: libcudnn_adv.so.9 libcudnn_cnn.so.9 libcudnn_engines_precompiled.so.9 libcudnn_ops.so.9 in 4 part")
file(GLOB parts ${here}/full.tar.xz.*)
list(LENGTH parts count)
if(NOT count EQUAL 4)
  message(FATAL_ERROR "expected 4 parts, found ${count}: ${parts}")
endif()
foreach(part IN LISTS parts)
  file(SIZE ${part} size)
  if(size GREATER 300000)
    message(FATAL_ERROR "${part} has ${size} bytes, more than the 300000 asked")
  endif()
endforeach()

# The GPU machine's side: the parts come one call at a time.
set(there ${WORK_DIR}/device/${version})
file(MAKE_DIRECTORY ${there})
foreach(f core.tar.xz heuristic.tar.xz full.sha256 full.tar.xz.00 full.tar.xz.01 full.tar.xz.02)
  file(COPY ${here}/${f} DESTINATION ${there})
endforeach()
run_script("cudnn-unpack, a part missing" 3 out bash ${SCRIPTS}/cudnn-unpack ${there})
expect("${out}" "unpacked core.tar.xz")
expect("${out}" "full set: 3 of 4 parts here; still to come: full.tar.xz.03")
expect("${out}" "no precompiled engines")
if(EXISTS ${there}/lib/libcudnn_adv.so.9)
  message(FATAL_ERROR "a library of the full set was unpacked before its last part came")
endif()
file(COPY ${here}/full.tar.xz.03 DESTINATION ${there})
run_script("cudnn-unpack, every part" 0 out bash ${SCRIPTS}/cudnn-unpack ${there})
expect("${out}" "unpacked the full set \\(4 parts\\)")
expect("${out}" "\\(the full set\\)")
expect_no("${out}" "unpacked core")  # unpacked once
foreach(name IN LISTS libs)
  file(SHA256 ${here}/lib/${name}.so.9 want)
  file(SHA256 ${there}/lib/${name}.so.9 got)
  if(NOT want STREQUAL got)
    message(FATAL_ERROR "${name}.so.9 differs after the round trip")
  endif()
endforeach()
run_script("cudnn-unpack again" 0 out bash ${SCRIPTS}/cudnn-unpack ${there})
expect_no("${out}" "unpacked")

# A damaged part is named, and nothing of the full set is unpacked.
set(damaged ${WORK_DIR}/damaged/${version})
file(MAKE_DIRECTORY ${damaged})
file(COPY ${here}/full.sha256 ${here}/full.tar.xz.00 ${here}/full.tar.xz.02 ${here}/full.tar.xz.03
     DESTINATION ${damaged})
execute_process(COMMAND head -c 300000 /dev/zero OUTPUT_FILE ${damaged}/full.tar.xz.01)
run_script("cudnn-unpack, a damaged part" 2 out bash ${SCRIPTS}/cudnn-unpack ${damaged})
expect("${out}" "full.tar.xz.01: FAILED")
if(EXISTS ${damaged}/lib/libcudnn_adv.so.9)
  message(FATAL_ERROR "a damaged full set was unpacked")
endif()
