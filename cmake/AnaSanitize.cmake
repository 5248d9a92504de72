# Sanitizer builds: -DANA_SANITIZE=address,undefined (ON means the same; any list that
# -fsanitize= accepts works, e.g. address or undefined alone).
#
# Every C/C++ target is compiled and linked with -fsanitize=LIST, frame pointers kept for
# the reports' stacks, and -fno-sanitize-recover=all: UBSan aborts at its first finding, so
# a test that meets one fails. The CUDA directories (samples/, bench/, tests/scenario/kargs)
# clear the directory options (nvcc rejects them) and get ANA_SANITIZE_CUDA_OPTIONS instead
# (the host code through -Xcompiler) and ANA_SANITIZE_CUDA_LINK_OPTIONS.
#
# AddressSanitizer's runtime must be the first library of a process. A program built here
# links it first; a program that is not (python, a shell, a program built with nvcc
# elsewhere) but loads libanatomist.so or the simulated libraries must preload it:
# ANA_SANITIZER_RUNTIME is its path, compiled into `anatomist run` (which then prepends it
# to LD_PRELOAD) and given to the tests (tests/scenario/common.py clean_env does the same).
# With GCC the runtime is the shared libasan; with Clang, -shared-libasan makes it so.

set(ANA_SANITIZE OFF CACHE STRING
    "Sanitizers for every target, e.g. address,undefined (ON: address,undefined; OFF: none)")
set(ANA_SANITIZER_RUNTIME "")
set(ANA_SANITIZE_CUDA_OPTIONS "")
set(ANA_SANITIZE_CUDA_LINK_OPTIONS "")

if(ANA_SANITIZE)
  if(ANA_SANITIZE STREQUAL "ON" OR ANA_SANITIZE STREQUAL "1" OR ANA_SANITIZE STREQUAL "TRUE")
    set(ANA_SANITIZE "address,undefined")
  endif()
  set(_ana_san_flags -fsanitize=${ANA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  set(_ana_san_link -fsanitize=${ANA_SANITIZE})
  if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND ANA_SANITIZE MATCHES "address")
    list(APPEND _ana_san_link -shared-libasan)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_ana_san_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:${_ana_san_link}>")

  # nvcc splits -Xcompiler values at commas: one -fsanitize= per sanitizer.
  string(REPLACE "," ";" _ana_san_list "${ANA_SANITIZE}")
  foreach(s IN LISTS _ana_san_list)
    list(APPEND ANA_SANITIZE_CUDA_OPTIONS -Xcompiler=-fsanitize=${s})
  endforeach()
  list(APPEND ANA_SANITIZE_CUDA_OPTIONS -Xcompiler=-fno-omit-frame-pointer
       -Xcompiler=-fno-sanitize-recover=all)
  # CMake links CUDA executables with the host compiler (CMAKE_CUDA_HOST_LINK_LAUNCHER).
  set(ANA_SANITIZE_CUDA_LINK_OPTIONS ${_ana_san_link})

  if(ANA_SANITIZE MATCHES "address")
    if(CMAKE_C_COMPILER_ID MATCHES "Clang")
      execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                      OUTPUT_VARIABLE _ana_asan OUTPUT_STRIP_TRAILING_WHITESPACE)
    else()
      execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                      OUTPUT_VARIABLE _ana_asan OUTPUT_STRIP_TRAILING_WHITESPACE)
    endif()
    get_filename_component(_ana_asan "${_ana_asan}" REALPATH)
    if(NOT IS_ABSOLUTE "${_ana_asan}" OR NOT EXISTS "${_ana_asan}")
      message(FATAL_ERROR "ANA_SANITIZE=${ANA_SANITIZE}: ${CMAKE_C_COMPILER} names no shared "
                          "AddressSanitizer runtime (got '${_ana_asan}'); install libasan")
    endif()
    set(ANA_SANITIZER_RUNTIME "${_ana_asan}")
    add_compile_definitions(ANA_SANITIZER_RUNTIME="${ANA_SANITIZER_RUNTIME}")
  endif()
  message(STATUS "Sanitizers: ${ANA_SANITIZE}; runtime to preload: ${ANA_SANITIZER_RUNTIME}")
endif()
