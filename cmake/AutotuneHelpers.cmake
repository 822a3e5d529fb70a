# Shared compile settings for every target of ours.
function(autotune_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(AUTOTUNE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# autotune_test_code(target): a test's own code (a test, a test plugin, a rank the tests launch) at -O1 in optimized
# builds; the last -O on the line wins. Its work runs in the libraries, which keep the build type's level, and a
# cold build compiles it in about two thirds of the time at -O3 (docs/testing.md, "The cold build"). -O1 keeps
# __OPTIMIZE__ defined, so the LibTorch tests still reuse the -O3 library's precompiled header.
function(autotune_test_code target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)
endfunction()

# autotune_add_test(NAME name SOURCES a.cpp b.cpp LIBS libs... LABELS unit|integration|gpu|slow)
# One helper adds every test: a GoogleTest binary registered with CTest under its labels.
function(autotune_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  autotune_target_defaults(${T_NAME})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  autotune_test_code(${T_NAME})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "AUTOTUNE_SOURCE_DIR=${PROJECT_SOURCE_DIR};AUTOTUNE_BINARY_DIR=${PROJECT_BINARY_DIR};${T_ENV}")
endfunction()

# autotune_write_link_graph(FILE targets...): each target's direct link libraries, one line per target
# ("name: lib;lib"), for tests/arrows/check_arrows.py. Called once every target exists.
function(autotune_write_link_graph file)
  set(text "")
  foreach(t ${ARGN})
    if(TARGET ${t})
      get_target_property(libs ${t} LINK_LIBRARIES)
      if(NOT libs)
        set(libs "")
      endif()
      string(APPEND text "${t}: ${libs}\n")
    endif()
  endforeach()
  file(WRITE ${file} "${text}")
endfunction()
