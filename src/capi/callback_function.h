// Functions defined by user callbacks through the C API (ch_function_new).
#pragma once

#include <ch/function.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/variable.h"

namespace chainerc {

// What every application of one function object shares: the callbacks, the
// user data (destroyed with the last application) and the parameters.
struct CallbackDefinition {
  explicit CallbackDefinition(const ch_function_def& d);
  ~CallbackDefinition();
  CallbackDefinition(const CallbackDefinition&) = delete;
  CallbackDefinition& operator=(const CallbackDefinition&) = delete;

  std::string name;
  ch_function_def def;
};

// The per-application state a callback reaches through its ch_context.
struct CallbackContext {
  enum class Phase { Forward, Backward, Eval } phase;
  const char* function_name;
  FuncPtr function;                // the application (null for eval callbacks)
  Arrays* outputs = nullptr;       // forward/eval: outputs reported so far
  const Arrays* inputs = nullptr;  // backward: to check gradient shapes
  Arrays* grad_inputs = nullptr;   // backward
  Arrays* saved = nullptr;
  void** user_data = nullptr;
  void (**user_destroy)(void*) = nullptr;
  Device device{};  // where the inputs are: the CPU, or the CUDA device made current
};

class CallbackFunction final : public Function,
                               public std::enable_shared_from_this<CallbackFunction> {
 public:
  CallbackFunction(std::shared_ptr<CallbackDefinition> def, std::shared_ptr<Parameters> params)
      : def_(std::move(def)) {
    parameters = std::move(params);
  }
  ~CallbackFunction() override;

  const char* name() const override { return def_->name.c_str(); }
  Arrays forward(const Arrays& inputs) override;
  Arrays backward(const Arrays& inputs, const Arrays& grad_outputs) override;
  FuncPtr clone() const override { return std::make_shared<CallbackFunction>(def_, parameters); }
  bool has_graph_backward() const override { return def_->def.graph_backward != nullptr; }
  std::vector<VarPtr> backward_graph(const FuncPtr& self, const std::vector<VarPtr>& gy) override;
  // User callbacks choose by the inputs' device (forward_gpu / forward_cpu).
  bool spans_devices() const override { return true; }

  CallbackDefinition& definition() const { return *def_; }

 private:
  std::shared_ptr<CallbackDefinition> def_;
  Arrays outputs_;  // kept for backward (arrays never reference the graph: no cycle)
  Arrays saved_;
  void* user_data_ = nullptr;
  void (*user_destroy_)(void*) = nullptr;
};

// Handles for arrays lent to a callback: created before the call, released
// after it (a callback that retained one keeps it alive).
class BorrowedArrays {
 public:
  explicit BorrowedArrays(const Arrays& arrays);
  ~BorrowedArrays();
  BorrowedArrays(const BorrowedArrays&) = delete;
  BorrowedArrays& operator=(const BorrowedArrays&) = delete;
  ch_array* const* handles() const { return handles_.data(); }
  size_t size() const { return handles_.size(); }

 private:
  void release_all() noexcept;
  std::vector<ch_array*> handles_;
};

// A ch_context handle valid for the duration of one callback.
class ScopedContext {
 public:
  explicit ScopedContext(CallbackContext& state);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  ch_context* handle() const { return handle_; }

 private:
  ch_context* handle_;
};

}  // namespace chainerc
