# braid_add_test(<name> SOURCES <files...> [LABELS <labels...>] [TIMEOUT <s>])
# One helper registers every GoogleTest binary with CTest. The label "concurrency" marks tests
# that are also run under ThreadSanitizer.
#
# Build time is most of `make test` on a small machine: with clang, every test reuses one
# precompiled <gtest/gtest.h> (parsing it costs ~2.5 s per file). Not with g++-12: headers
# that arrive through its precompiled header lose their system-header status, and its
# -Wstringop-overflow false positives in libstdc++ then fail -Werror. Test files keep the build's optimization
# level: at -O0 the crash enumerations and the executor tests, which inline the workload
# helpers, ran slower than their compile got faster.
find_package(GTest REQUIRED)

# Every test labelled "concurrency": what the TSan run builds (make test-tsan).
add_custom_target(concurrency_tests)

set(BRAID_TEST_PCH OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(BRAID_TEST_PCH ON)
  add_library(braid_test_pch OBJECT ${PROJECT_SOURCE_DIR}/tests/pch.cc)
  target_link_libraries(braid_test_pch PRIVATE GTest::gtest braid_flags)
  target_precompile_headers(braid_test_pch PRIVATE <gtest/gtest.h>)
endif()

function(braid_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE braid GTest::gtest GTest::gtest_main braid_flags)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  if(BRAID_TEST_PCH)
    target_precompile_headers(${name} REUSE_FROM braid_test_pch)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
  if("concurrency" IN_LIST T_LABELS)
    add_dependencies(concurrency_tests ${name})
  endif()
endfunction()
