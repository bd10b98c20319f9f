/* Prints every error code of the CUDA runtime with its name and text, as libcudart spells
   them: code, tab, cudaGetErrorName, tab, cudaGetErrorString. Needs no GPU. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

int main(void) {
  for (int code = 1; code < 1000; ++code) {
    const char* name = cudaGetErrorName((cudaError_t)code);
    if (name == NULL || strncmp(name, "cudaError", 9) != 0) continue;
    if (strcmp(name, "cudaErrorUnknown") == 0 && code != 999) continue;
    printf("%d\t%s\t%s\n", code, name, cudaGetErrorString((cudaError_t)code));
  }
  return 0;
}
