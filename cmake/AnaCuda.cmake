# Helpers for the directories that build CUDA programs with nvcc (samples/, bench/).
#
# The programs are built like `nvcc -cudart shared` and carry no rpath/runpath, so that
# LD_LIBRARY_PATH alone decides which libcudart.so.13 they load: NVIDIA's (needs a GPU
# and a driver) or the simulated one in ${CMAKE_BINARY_DIR}/sim.

# Enables CUDA in the calling directory. The top level adds -Wall/-Wextra (and
# -fsanitize=... with ANA_SANITIZE) as directory options; nvcc rejects them, so the
# directory starts clean and host warnings and sanitizers go through -Xcompiler.
macro(ana_enable_cuda)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80) # sm_80 code plus PTX that later GPUs compile
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  set_property(DIRECTORY PROPERTY COMPILE_OPTIONS "")
  set_property(DIRECTORY PROPERTY LINK_OPTIONS "")
endmacro()

# ana_cuda_program(NAME SOURCE OUTPUT_DIR)
function(ana_cuda_program name src outdir)
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE -O2 -g -Xcompiler=-fno-omit-frame-pointer -Xcompiler=-Wall
                         ${ANA_SANITIZE_CUDA_OPTIONS})
  target_link_options(${name} PRIVATE ${ANA_SANITIZE_CUDA_LINK_OPTIONS}) # cmake/AnaSanitize.cmake
  set_target_properties(${name} PROPERTIES
    CUDA_RUNTIME_LIBRARY Shared
    SKIP_BUILD_RPATH ON
    INSTALL_RPATH ""
    RUNTIME_OUTPUT_DIRECTORY ${outdir})
endfunction()
