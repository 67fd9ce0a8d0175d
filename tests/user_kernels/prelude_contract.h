// The user-kernel prelude's one contract for both devices (codegen.cpp): the
// same kernel bodies are accepted or refused on the CPU (libtcc, through the
// C API: test_elementwise.cpp) and on CUDA (NVRTC: test_nvrtc.cpp). What
// NVRTC refuses natively (max(float, int) ambiguous, isnan(int)) is refused
// on the CPU too; what both accept means the same (abs of a float is a float).
#pragma once

namespace prelude_contract {

struct Case {
  const char* name;
  const char* in_params;
  const char* out_params;
  const char* body;
  bool accepted;
};

// float32 inputs x (and int32 a) in every case.
inline const Case kCases[] = {
    {"abs_float", "float32 x", "float32 y", "y = abs(x)", true},
    {"abs_double", "float64 x", "float64 y", "y = abs(x)", true},
    {"abs_int", "int32 a", "int32 b", "b = abs(a)", true},
    {"max_same_type", "float32 x", "float32 y", "y = max(x, (float)0)", true},
    {"min_index_same_type", "float32 x", "float32 y", "y = x + (float)min(i, (long long)3)", true},
    {"isnan_float", "float32 x", "float32 y", "y = isnan(x) ? 0.0f : x", true},
    {"max_float_int", "float32 x", "float32 y", "y = max(x, 0)", false},
    {"min_index_int", "float32 x", "float32 y", "y = x + (float)min(i, 3)", false},
    {"isnan_int", "int32 a", "int32 b", "b = isnan(a)", false},
};

}  // namespace prelude_contract
