/* cuda_error.c — see cuda_error.h. Sorted by code for binary search. */
#include "cuda_error.h"

#include <stdio.h>

struct ana_cuda_error {
    int code;
    const char *name;
};

static const struct ana_cuda_error ana_cuda_errors[] = {
    { 0, "cudaSuccess" },
    { 1, "cudaErrorInvalidValue" },
    { 2, "cudaErrorMemoryAllocation" },
    { 3, "cudaErrorInitializationError" },
    { 4, "cudaErrorCudartUnloading" },
    { 5, "cudaErrorProfilerDisabled" },
    { 6, "cudaErrorProfilerNotInitialized" },
    { 7, "cudaErrorProfilerAlreadyStarted" },
    { 8, "cudaErrorProfilerAlreadyStopped" },
    { 9, "cudaErrorInvalidConfiguration" },
    { 12, "cudaErrorInvalidPitchValue" },
    { 13, "cudaErrorInvalidSymbol" },
    { 16, "cudaErrorInvalidHostPointer" },
    { 17, "cudaErrorInvalidDevicePointer" },
    { 18, "cudaErrorInvalidTexture" },
    { 19, "cudaErrorInvalidTextureBinding" },
    { 20, "cudaErrorInvalidChannelDescriptor" },
    { 21, "cudaErrorInvalidMemcpyDirection" },
    { 22, "cudaErrorAddressOfConstant" },
    { 23, "cudaErrorTextureFetchFailed" },
    { 24, "cudaErrorTextureNotBound" },
    { 25, "cudaErrorSynchronizationError" },
    { 26, "cudaErrorInvalidFilterSetting" },
    { 27, "cudaErrorInvalidNormSetting" },
    { 28, "cudaErrorMixedDeviceExecution" },
    { 31, "cudaErrorNotYetImplemented" },
    { 32, "cudaErrorMemoryValueTooLarge" },
    { 34, "cudaErrorStubLibrary" },
    { 35, "cudaErrorInsufficientDriver" },
    { 36, "cudaErrorCallRequiresNewerDriver" },
    { 37, "cudaErrorInvalidSurface" },
    { 43, "cudaErrorDuplicateVariableName" },
    { 44, "cudaErrorDuplicateTextureName" },
    { 45, "cudaErrorDuplicateSurfaceName" },
    { 46, "cudaErrorDevicesUnavailable" },
    { 49, "cudaErrorIncompatibleDriverContext" },
    { 52, "cudaErrorMissingConfiguration" },
    { 53, "cudaErrorPriorLaunchFailure" },
    { 65, "cudaErrorLaunchMaxDepthExceeded" },
    { 66, "cudaErrorLaunchFileScopedTex" },
    { 67, "cudaErrorLaunchFileScopedSurf" },
    { 68, "cudaErrorSyncDepthExceeded" },
    { 69, "cudaErrorLaunchPendingCountExceeded" },
    { 98, "cudaErrorInvalidDeviceFunction" },
    { 100, "cudaErrorNoDevice" },
    { 101, "cudaErrorInvalidDevice" },
    { 102, "cudaErrorDeviceNotLicensed" },
    { 103, "cudaErrorSoftwareValidityNotEstablished" },
    { 127, "cudaErrorStartupFailure" },
    { 200, "cudaErrorInvalidKernelImage" },
    { 201, "cudaErrorDeviceUninitialized" },
    { 205, "cudaErrorMapBufferObjectFailed" },
    { 206, "cudaErrorUnmapBufferObjectFailed" },
    { 207, "cudaErrorArrayIsMapped" },
    { 208, "cudaErrorAlreadyMapped" },
    { 209, "cudaErrorNoKernelImageForDevice" },
    { 210, "cudaErrorAlreadyAcquired" },
    { 211, "cudaErrorNotMapped" },
    { 212, "cudaErrorNotMappedAsArray" },
    { 213, "cudaErrorNotMappedAsPointer" },
    { 214, "cudaErrorECCUncorrectable" },
    { 215, "cudaErrorUnsupportedLimit" },
    { 216, "cudaErrorDeviceAlreadyInUse" },
    { 217, "cudaErrorPeerAccessUnsupported" },
    { 218, "cudaErrorInvalidPtx" },
    { 219, "cudaErrorInvalidGraphicsContext" },
    { 220, "cudaErrorNvlinkUncorrectable" },
    { 221, "cudaErrorJitCompilerNotFound" },
    { 222, "cudaErrorUnsupportedPtxVersion" },
    { 223, "cudaErrorJitCompilationDisabled" },
    { 224, "cudaErrorUnsupportedExecAffinity" },
    { 225, "cudaErrorUnsupportedDevSideSync" },
    { 226, "cudaErrorContained" },
    { 300, "cudaErrorInvalidSource" },
    { 301, "cudaErrorFileNotFound" },
    { 302, "cudaErrorSharedObjectSymbolNotFound" },
    { 303, "cudaErrorSharedObjectInitFailed" },
    { 304, "cudaErrorOperatingSystem" },
    { 400, "cudaErrorInvalidResourceHandle" },
    { 401, "cudaErrorIllegalState" },
    { 402, "cudaErrorLossyQuery" },
    { 500, "cudaErrorSymbolNotFound" },
    { 600, "cudaErrorNotReady" },
    { 700, "cudaErrorIllegalAddress" },
    { 701, "cudaErrorLaunchOutOfResources" },
    { 702, "cudaErrorLaunchTimeout" },
    { 703, "cudaErrorLaunchIncompatibleTexturing" },
    { 704, "cudaErrorPeerAccessAlreadyEnabled" },
    { 705, "cudaErrorPeerAccessNotEnabled" },
    { 708, "cudaErrorSetOnActiveProcess" },
    { 709, "cudaErrorContextIsDestroyed" },
    { 710, "cudaErrorAssert" },
    { 711, "cudaErrorTooManyPeers" },
    { 712, "cudaErrorHostMemoryAlreadyRegistered" },
    { 713, "cudaErrorHostMemoryNotRegistered" },
    { 714, "cudaErrorHardwareStackError" },
    { 715, "cudaErrorIllegalInstruction" },
    { 716, "cudaErrorMisalignedAddress" },
    { 717, "cudaErrorInvalidAddressSpace" },
    { 718, "cudaErrorInvalidPc" },
    { 719, "cudaErrorLaunchFailure" },
    { 720, "cudaErrorCooperativeLaunchTooLarge" },
    { 721, "cudaErrorTensorMemoryLeak" },
    { 800, "cudaErrorNotPermitted" },
    { 801, "cudaErrorNotSupported" },
    { 802, "cudaErrorSystemNotReady" },
    { 803, "cudaErrorSystemDriverMismatch" },
    { 804, "cudaErrorCompatNotSupportedOnDevice" },
    { 805, "cudaErrorMpsConnectionFailed" },
    { 806, "cudaErrorMpsRpcFailure" },
    { 807, "cudaErrorMpsServerNotReady" },
    { 808, "cudaErrorMpsMaxClientsReached" },
    { 809, "cudaErrorMpsMaxConnectionsReached" },
    { 810, "cudaErrorMpsClientTerminated" },
    { 811, "cudaErrorCdpNotSupported" },
    { 812, "cudaErrorCdpVersionMismatch" },
    { 900, "cudaErrorStreamCaptureUnsupported" },
    { 901, "cudaErrorStreamCaptureInvalidated" },
    { 902, "cudaErrorStreamCaptureMerge" },
    { 903, "cudaErrorStreamCaptureUnmatched" },
    { 904, "cudaErrorStreamCaptureUnjoined" },
    { 905, "cudaErrorStreamCaptureIsolation" },
    { 906, "cudaErrorStreamCaptureImplicit" },
    { 907, "cudaErrorCapturedEvent" },
    { 908, "cudaErrorStreamCaptureWrongThread" },
    { 909, "cudaErrorTimeout" },
    { 910, "cudaErrorGraphExecUpdateFailure" },
    { 911, "cudaErrorExternalDevice" },
    { 912, "cudaErrorInvalidClusterSize" },
    { 913, "cudaErrorFunctionNotLoaded" },
    { 914, "cudaErrorInvalidResourceType" },
    { 915, "cudaErrorInvalidResourceConfiguration" },
    { 999, "cudaErrorUnknown" },
};

const char *ana_cuda_error_name(int64_t code)
{
    size_t lo = 0, hi = sizeof(ana_cuda_errors) / sizeof(ana_cuda_errors[0]);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ana_cuda_errors[mid].code == code)
            return ana_cuda_errors[mid].name;
        if (ana_cuda_errors[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *ana_cuda_error_describe(int64_t code, char *buf, size_t cap)
{
    const char *name = ana_cuda_error_name(code);
    if (name)
        return name;
    snprintf(buf, cap, "error %lld", (long long)code);
    return buf;
}
