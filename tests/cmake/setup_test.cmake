# scripts/setup --dry-run tells the distribution from os-release and plans the same toolchain
# from each archive (only Debian 12 can be installed here; the Ubuntu branch is checked this far):
#   cmake -DSETUP=<scripts/setup> -DWORK_DIR=<scratch> -P setup_test.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
function(plan name release expected_rc)
  file(WRITE "${WORK_DIR}/${name}" "${release}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "DNNGRAPH_OS_RELEASE=${WORK_DIR}/${name}"
                          bash "${SETUP}" --dry-run
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(SEND_ERROR "${name}: exit ${rc}, expected ${expected_rc}: ${out}${err}")
  endif()
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect text)
  if(NOT out MATCHES "${text}")
    message(SEND_ERROR "expected /${text}/ in: ${out}")
  endif()
endfunction()

plan(ubuntu "NAME=\"Ubuntu\"\nID=ubuntu\nVERSION_ID=\"24.04\"\n" 0)
expect("ubuntu:24.04: apt-get install clang-19 clang-tools-19 lld-19 .*libboost-json1.83-dev libboost-test1.83-dev libmsgsl-dev .* cmake")
plan(debian "ID=debian\nVERSION_ID=\"12\"\n" 0)
expect("debian:12: apt-get install clang-19 clang-tools-19 lld-19 .*libboost-json1.81-dev libboost-test1.81-dev libmsgsl-dev")
expect("bookworm-backports")
plan(fedora "ID=fedora\nVERSION_ID=40\n" 1)
expect("neither Debian 12 nor Ubuntu 24.04")
