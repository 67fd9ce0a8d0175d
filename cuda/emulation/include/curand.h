// Emulated cuRAND host API (-Dcuda-emulation=true): a counter-based host
// generator (splitmix64 of seed and position; not Philox's numbers) with
// cuRAND's interface and rules: uniform samples in (0, 1], normal samples
// only in even counts (CURAND_STATUS_LENGTH_NOT_MULTIPLE otherwise), offsets.
#pragma once

#include "cuda_runtime_api.h"

typedef enum {
  CURAND_STATUS_SUCCESS = 0,
  CURAND_STATUS_NOT_INITIALIZED = 101,
  CURAND_STATUS_ALLOCATION_FAILED = 102,
  CURAND_STATUS_TYPE_ERROR = 103,
  CURAND_STATUS_OUT_OF_RANGE = 104,
  CURAND_STATUS_LENGTH_NOT_MULTIPLE = 105,
  CURAND_STATUS_LAUNCH_FAILURE = 201,
} curandStatus_t;

typedef enum {
  CURAND_RNG_PSEUDO_DEFAULT = 100,
  CURAND_RNG_PSEUDO_XORWOW = 101,
  CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161,
} curandRngType_t;

struct curandGenerator_st;
typedef struct curandGenerator_st* curandGenerator_t;

curandStatus_t curandCreateGenerator(curandGenerator_t* generator, curandRngType_t type);
curandStatus_t curandDestroyGenerator(curandGenerator_t generator);
curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t generator,
                                                  unsigned long long seed);
curandStatus_t curandSetGeneratorOffset(curandGenerator_t generator, unsigned long long offset);
curandStatus_t curandSetStream(curandGenerator_t generator, cudaStream_t stream);
curandStatus_t curandGenerateUniform(curandGenerator_t generator, float* out, size_t n);
curandStatus_t curandGenerateUniformDouble(curandGenerator_t generator, double* out, size_t n);
curandStatus_t curandGenerateNormal(curandGenerator_t generator, float* out, size_t n, float mean,
                                    float stddev);
curandStatus_t curandGenerateNormalDouble(curandGenerator_t generator, double* out, size_t n,
                                          double mean, double stddev);
