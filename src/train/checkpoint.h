// Checkpoints in NumPy's .npz format, laid out as Chainer's npz serializer
// does: a FunctionSet writes one entry per parameter path ("/l1/W"); an
// Optimizer writes "t", "epoch" and, per parameter, "<path>/t" and its state
// ("<path>/m", "<path>/v" for Adam). Loading checks every entry first and
// writes nothing unless all are valid.
#pragma once

#include <string>

#include "function_set.h"
#include "optimizer.h"

namespace chainerc::npz {

void save_function_set(const FunctionSet& set, const std::string& path, bool compress,
                       const char* who);
void load_function_set(const FunctionSet& set, const std::string& path, const char* who);
void save_optimizer(const Optimizer& opt, const std::string& path, bool compress, const char* who);
void load_optimizer(Optimizer& opt, const std::string& path, const char* who);

}  // namespace chainerc::npz
