#include "calibration/probe/cuda_check.h"

#include <cstring>

namespace cs::probe {

std::string where(const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  std::string s(1, '[');
  s += base != nullptr ? base + 1 : file;
  s += ':';
  s += std::to_string(line);
  s += ']';
  return s;
}

bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
      return true;
    default:
      return false;
  }
}

void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line) {
  // Clear a non-sticky error so that the next call does not report it again.
  if (!is_sticky(e)) (void)cudaGetLastError();
  throw ProbeError(std::string(expr) + " failed: " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ") " +
                       where(file, line),
                   is_sticky(e), e == cudaErrorMemoryAllocation);
}

}  // namespace cs::probe
