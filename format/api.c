/* api.c — names of the api numbers of docs/trace-format.md.
 * Called by the preload and the analyzer (names in messages and reports); calls nothing. */
#include "records.h"

static const char *const API_NAMES[ANA_API_COUNT] = {
    [ANA_API_MALLOC] = "cudaMalloc",
    [ANA_API_MALLOC_ASYNC] = "cudaMallocAsync",
    [ANA_API_MALLOC_MANAGED] = "cudaMallocManaged",
    [ANA_API_MALLOC_HOST] = "cudaMallocHost",
    [ANA_API_HOST_ALLOC] = "cudaHostAlloc",
    [ANA_API_MALLOC_PITCH] = "cudaMallocPitch",
    [ANA_API_MALLOC_FROM_POOL_ASYNC] = "cudaMallocFromPoolAsync",
    [ANA_API_FREE] = "cudaFree",
    [ANA_API_FREE_ASYNC] = "cudaFreeAsync",
    [ANA_API_FREE_HOST] = "cudaFreeHost",
    [ANA_API_LAUNCH_KERNEL] = "cudaLaunchKernel",
    [ANA_API_LAUNCH_KERNEL_PTSZ] = "cudaLaunchKernel_ptsz",
    [ANA_API_LAUNCH_KERNEL_EXC] = "cudaLaunchKernelExC",
    [ANA_API_LAUNCH_KERNEL_EXC_PTSZ] = "cudaLaunchKernelExC_ptsz",
    [ANA_API_STUB_LAUNCH_KERNEL] = "__cudaLaunchKernel",
    [ANA_API_STUB_LAUNCH_KERNEL_PTSZ] = "__cudaLaunchKernel_ptsz",
    [ANA_API_MEMCPY] = "cudaMemcpy",
    [ANA_API_MEMCPY_ASYNC] = "cudaMemcpyAsync",
    [ANA_API_MEMCPY_2D] = "cudaMemcpy2D",
    [ANA_API_MEMCPY_2D_ASYNC] = "cudaMemcpy2DAsync",
    [ANA_API_MEMCPY_TO_SYMBOL] = "cudaMemcpyToSymbol",
    [ANA_API_MEMCPY_FROM_SYMBOL] = "cudaMemcpyFromSymbol",
    [ANA_API_MEMCPY_PEER] = "cudaMemcpyPeer",
    [ANA_API_MEMCPY_PEER_ASYNC] = "cudaMemcpyPeerAsync",
    [ANA_API_MEMSET] = "cudaMemset",
    [ANA_API_MEMSET_ASYNC] = "cudaMemsetAsync",
    [ANA_API_MEMSET_2D] = "cudaMemset2D",
    [ANA_API_MEMSET_2D_ASYNC] = "cudaMemset2DAsync",
    [ANA_API_MEMCPY_3D] = "cudaMemcpy3D",
    [ANA_API_MEMCPY_3D_ASYNC] = "cudaMemcpy3DAsync",
    [ANA_API_MEMSET_3D] = "cudaMemset3D",
    [ANA_API_MEMSET_3D_ASYNC] = "cudaMemset3DAsync",
    [ANA_API_LAUNCH_COOPERATIVE] = "cudaLaunchCooperativeKernel",
    [ANA_API_CU_GRAPH_LAUNCH] = "cuGraphLaunch",
    [ANA_API_GRAPH_LAUNCH] = "cudaGraphLaunch",
    [ANA_API_GRAPH_LAUNCH_PTSZ] = "cudaGraphLaunch_ptsz",
    [ANA_API_CU_LAUNCH_KERNEL] = "cuLaunchKernel",
    [ANA_API_CU_LAUNCH_KERNEL_EX] = "cuLaunchKernelEx",
    [ANA_API_CU_MEM_ALLOC] = "cuMemAlloc_v2",
    [ANA_API_CU_MEM_ALLOC_ASYNC] = "cuMemAllocAsync",
    [ANA_API_CU_MEM_ALLOC_MANAGED] = "cuMemAllocManaged",
    [ANA_API_CU_MEM_ALLOC_HOST] = "cuMemAllocHost_v2",
    [ANA_API_CU_MEM_HOST_ALLOC] = "cuMemHostAlloc",
    [ANA_API_CU_MEM_ALLOC_PITCH] = "cuMemAllocPitch_v2",
    [ANA_API_CU_MEM_ALLOC_FROM_POOL_ASYNC] = "cuMemAllocFromPoolAsync",
    [ANA_API_CU_MEM_CREATE] = "cuMemCreate",
    [ANA_API_CU_MEM_FREE] = "cuMemFree_v2",
    [ANA_API_CU_MEM_FREE_ASYNC] = "cuMemFreeAsync",
    [ANA_API_CU_MEM_FREE_HOST] = "cuMemFreeHost",
    [ANA_API_CU_MEM_RELEASE] = "cuMemRelease",
    [ANA_API_CU_MEM_ADDRESS_RESERVE] = "cuMemAddressReserve",
    [ANA_API_CU_MEM_ADDRESS_FREE] = "cuMemAddressFree",
    [ANA_API_CU_MEM_MAP] = "cuMemMap",
    [ANA_API_CU_MEM_UNMAP] = "cuMemUnmap",
    [ANA_API_CU_MEM_SET_ACCESS] = "cuMemSetAccess",
    [ANA_API_CU_MEMCPY] = "cuMemcpy",
    [ANA_API_CU_MEMCPY_ASYNC] = "cuMemcpyAsync",
    [ANA_API_CU_MEMCPY_HTOD] = "cuMemcpyHtoD_v2",
    [ANA_API_CU_MEMCPY_HTOD_ASYNC] = "cuMemcpyHtoDAsync_v2",
    [ANA_API_CU_MEMCPY_DTOH] = "cuMemcpyDtoH_v2",
    [ANA_API_CU_MEMCPY_DTOH_ASYNC] = "cuMemcpyDtoHAsync_v2",
    [ANA_API_CU_MEMCPY_DTOD] = "cuMemcpyDtoD_v2",
    [ANA_API_CU_MEMCPY_DTOD_ASYNC] = "cuMemcpyDtoDAsync_v2",
    [ANA_API_CU_MEMSET_D8] = "cuMemsetD8_v2",
    [ANA_API_CU_MEMSET_D32] = "cuMemsetD32_v2",
    [ANA_API_CU_MEMSET_D8_ASYNC] = "cuMemsetD8Async",
    [ANA_API_CU_MEMSET_D32_ASYNC] = "cuMemsetD32Async",
    [ANA_API_CUBLAS_CREATE] = "cublasCreate_v2",
    [ANA_API_CUBLAS_DESTROY] = "cublasDestroy_v2",
    [ANA_API_CUBLAS_SET_STREAM] = "cublasSetStream_v2",
    [ANA_API_CUBLAS_SET_WORKSPACE] = "cublasSetWorkspace_v2",
    [ANA_API_CUBLAS_SET_MATH_MODE] = "cublasSetMathMode",
    [ANA_API_CUBLASLT_CREATE] = "cublasLtCreate",
    [ANA_API_CUBLASLT_DESTROY] = "cublasLtDestroy",
    [ANA_API_CUBLAS_SGEMM] = "cublasSgemm_v2",
    [ANA_API_CUBLAS_DGEMM] = "cublasDgemm_v2",
    [ANA_API_CUBLAS_HGEMM] = "cublasHgemm",
    [ANA_API_CUBLAS_GEMM_EX] = "cublasGemmEx",
    [ANA_API_CUBLAS_SGEMM_STRIDED_BATCHED] = "cublasSgemmStridedBatched",
    [ANA_API_CUBLAS_DGEMM_STRIDED_BATCHED] = "cublasDgemmStridedBatched",
    [ANA_API_CUBLAS_HGEMM_STRIDED_BATCHED] = "cublasHgemmStridedBatched",
    [ANA_API_CUBLAS_GEMM_STRIDED_BATCHED_EX] = "cublasGemmStridedBatchedEx",
    [ANA_API_CUBLAS_SGEMM_BATCHED] = "cublasSgemmBatched",
    [ANA_API_CUBLAS_GEMM_BATCHED_EX] = "cublasGemmBatchedEx",
    [ANA_API_CUBLASLT_MATMUL] = "cublasLtMatmul",
    [ANA_API_CUBLAS_DGEMM_BATCHED] = "cublasDgemmBatched",
    [ANA_API_CUBLAS_HGEMM_BATCHED] = "cublasHgemmBatched",
    [ANA_API_CUBLAS_SGEMM_EX] = "cublasSgemmEx",
    [ANA_API_NCCL_COMM_INIT_RANK] = "ncclCommInitRank",
    [ANA_API_NCCL_COMM_INIT_RANK_CONFIG] = "ncclCommInitRankConfig",
    [ANA_API_NCCL_COMM_INIT_ALL] = "ncclCommInitAll",
    [ANA_API_NCCL_COMM_SPLIT] = "ncclCommSplit",
    [ANA_API_NCCL_COMM_DESTROY] = "ncclCommDestroy",
    [ANA_API_NCCL_COMM_ABORT] = "ncclCommAbort",
    [ANA_API_NCCL_COMM_FINALIZE] = "ncclCommFinalize",
    [ANA_API_NCCL_ALL_REDUCE] = "ncclAllReduce",
    [ANA_API_NCCL_REDUCE] = "ncclReduce",
    [ANA_API_NCCL_BROADCAST] = "ncclBroadcast",
    [ANA_API_NCCL_BCAST] = "ncclBcast",
    [ANA_API_NCCL_ALL_GATHER] = "ncclAllGather",
    [ANA_API_NCCL_REDUCE_SCATTER] = "ncclReduceScatter",
    [ANA_API_NCCL_SEND] = "ncclSend",
    [ANA_API_NCCL_RECV] = "ncclRecv",
    [ANA_API_NCCL_GROUP_START] = "ncclGroupStart",
    [ANA_API_NCCL_GROUP_END] = "ncclGroupEnd",
    [ANA_API_IMPORTED_ALLOC] = "allocator (imported)",
    [ANA_API_IMPORTED_FREE] = "allocator free (imported)",
};

static const char *const LIB_NAMES[ANA_LIB_COUNT] = {
    [ANA_LIB_CUBLAS] = "cuBLAS", [ANA_LIB_CUBLASLT] = "cuBLASLt", [ANA_LIB_NCCL] = "NCCL",
    [ANA_LIB_CUDNN] = "cuDNN",
};

const char *ana_lib_name(uint32_t lib)
{
    return lib < ANA_LIB_COUNT ? LIB_NAMES[lib] : NULL;
}

const char *ana_api_name(uint32_t api)
{
    return api < ANA_API_COUNT ? API_NAMES[api] : NULL;
}

int ana_api_is_device_alloc(uint32_t api)
{
    switch (api) {
    case ANA_API_MALLOC:
    case ANA_API_MALLOC_ASYNC:
    case ANA_API_MALLOC_MANAGED:
    case ANA_API_MALLOC_PITCH:
    case ANA_API_MALLOC_FROM_POOL_ASYNC:
    case ANA_API_CU_MEM_ALLOC:
    case ANA_API_CU_MEM_ALLOC_ASYNC:
    case ANA_API_CU_MEM_ALLOC_MANAGED:
    case ANA_API_CU_MEM_ALLOC_PITCH:
    case ANA_API_CU_MEM_ALLOC_FROM_POOL_ASYNC:
    case ANA_API_IMPORTED_ALLOC:
    case ANA_API_CU_MEM_CREATE:
        return 1;
    default:
        return 0;
    }
}

int ana_api_is_host_alloc(uint32_t api)
{
    switch (api) {
    case ANA_API_MALLOC_HOST:
    case ANA_API_HOST_ALLOC:
    case ANA_API_CU_MEM_ALLOC_HOST:
    case ANA_API_CU_MEM_HOST_ALLOC:
        return 1;
    default:
        return 0;
    }
}

int ana_api_is_graph_launch(uint32_t api)
{
    return api == ANA_API_GRAPH_LAUNCH || api == ANA_API_GRAPH_LAUNCH_PTSZ ||
           api == ANA_API_CU_GRAPH_LAUNCH;
}
