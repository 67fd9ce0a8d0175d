// chainerc — the C++ API: a header-only layer over the C API of <ch/ch.h>.
//
//   #include <ch/ch.hpp>
//
//   ch::Variable x(ch::Array(std::vector<float>{5}, {1}));
//   ch::Variable y = x * x - 2 * x + 1;  // 16
//   y.backward();                        // x.grad() holds 8
//
// What it adds to the C API:
//  - ch::Error and ch::check(): the one place where a ch_status becomes an exception.
//  - RAII handles: ch::Array, ch::Variable, ch::Function. Copying one retains the handle,
//    destroying it releases it; nobody calls *_release by hand.
//  - Operators and free functions over ch::Variable for the built-in functions.
//  - ch::FunctionBase: subclass it to write a differentiable function in C++.
//  - Gradient checking: ch::numerical_grad, ch::allclose, ch::check_backward.
//  - ch::F: the neural-network functions (F::relu, F::Linear(...), ...); ch::config.
//  - Training: ch::FunctionSet, ch::Optimizer, ch::datasets.
//
// Exceptions and callbacks. No C++ exception ever unwinds through the C library: every
// callback this header hands to the library catches everything. An exception thrown inside
// a user's forward or backward (or a numerical_grad / check_backward callback) travels as
// the error's payload (ch_error_set_payload) to the caller of the C call that failed, where
// ch::check() rethrows the original exception object, with its original type and message.
// Failures that carry no C++ exception are thrown as ch::Error.
//
// Threading: as the C API. Handles may be copied and destroyed on any thread; one graph
// must not be used from two threads at once; callbacks run on the thread that called
// forward or backward.
#ifndef CH_CH_HPP
#define CH_CH_HPP

#include <ch/ch.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ch {

/// Extents of an array, outermost first. An empty shape is a 0-d (scalar) array.
using Shape = std::vector<int64_t>;

// ===========================================================================================
// Errors
// ===========================================================================================

/// A failed chainerc call: its status (CH_ERR_*) and the library's message.
class Error : public std::runtime_error {
 public:
  /// An error of `status` with `message`. `foreign_payload` is a payload some non-C++
  /// callback attached with ch_error_set_payload; see foreign_payload().
  Error(ch_status status, const std::string& message, void* foreign_payload = nullptr)
      : std::runtime_error(message), status_(status), foreign_payload_(foreign_payload) {}

  /// The status code, e.g. CH_ERR_SHAPE.
  ch_status status() const noexcept { return status_; }
  /// The status code's name, e.g. "CH_ERR_SHAPE".
  const char* status_name() const noexcept { return ch_status_name(status_); }
  /// A payload attached by a callback not written with this header (a C callback's own
  /// object), or nullptr. Ownership passed to whoever handles this error: ch.hpp never
  /// frees it, because the C API does not say how (its destroy function is not returned).
  void* foreign_payload() const noexcept { return foreign_payload_; }

 private:
  ch_status status_;
  void* foreign_payload_;
};

namespace detail {

// Payloads made by this header: a heap std::exception_ptr. The registry tells them apart
// from payloads of other callbacks without dereferencing unknown pointers. It is never
// destroyed, so a payload freed by the library at thread exit can still unregister.
struct ExceptionPayload {
  std::exception_ptr exception;
};

struct PayloadRegistry {
  std::mutex mutex;
  std::unordered_set<void*> live;
};

inline PayloadRegistry& payload_registry() {
  static PayloadRegistry* registry = new PayloadRegistry;  // intentionally never freed
  return *registry;
}

inline void destroy_exception_payload(void* payload) {
  {
    PayloadRegistry& r = payload_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.erase(payload);
  }
  delete static_cast<ExceptionPayload*>(payload);
}

// Attach the exception in flight to the error a callback is about to report.
inline void attach_current_exception() noexcept {
  try {
    auto* payload = new ExceptionPayload{std::current_exception()};
    {
      PayloadRegistry& r = payload_registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      r.live.insert(payload);
    }
    ch_error_set_payload(payload, &destroy_exception_payload);
  } catch (...) {
    // Out of memory: the message set with ch_error_set still describes the failure.
  }
}

// Take this thread's error payload: the C++ exception it carries, or nullptr (then
// `foreign` receives a payload that is not ours, if any).
inline std::exception_ptr take_exception_payload(void** foreign) {
  *foreign = nullptr;
  void* payload = ch_error_take_payload();
  if (!payload) return nullptr;
  bool ours;
  {
    PayloadRegistry& r = payload_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    ours = r.live.erase(payload) > 0;
  }
  if (!ours) {
    *foreign = payload;
    return nullptr;
  }
  std::unique_ptr<ExceptionPayload> owned(static_cast<ExceptionPayload*>(payload));
  return owned->exception;
}

}  // namespace detail

/// Turn a status into an exception: does nothing for CH_OK. Otherwise, if the failure
/// came from a C++ callback that threw, rethrows that exception object (original type and
/// message); else throws ch::Error with the status and ch_error_message().
/// This is the only place where a ch_status becomes an exception.
inline void check(ch_status status) {
  if (status == CH_OK) return;
  void* foreign = nullptr;
  std::exception_ptr cause = detail::take_exception_payload(&foreign);
  if (cause) std::rethrow_exception(cause);
  throw Error(status, ch_error_message(), foreign);
}

namespace detail {

// Report a failure detected on the C++ side (never a status returned by the library).
[[noreturn]] inline void fail(ch_status status, const std::string& message) {
  throw Error(status, message);
}

// Run a callback body: CH_OK, or the status of the exception it threw, with its message
// recorded by ch_error_set and the exception attached as the payload. Never throws.
template <class Body>
ch_status guard(Body&& body) noexcept {
  ch_status status = CH_ERR_CALLBACK;
  try {
    body();
    return CH_OK;
  } catch (const Error& e) {  // attach inside each handler: current_exception() needs one
    if (e.status() != CH_OK) status = e.status();
    ch_error_set(status, e.what());
    attach_current_exception();
  } catch (const std::exception& e) {
    ch_error_set(status, e.what());
    attach_current_exception();
  } catch (...) {
    ch_error_set(status, "a C++ exception of a type not derived from std::exception");
    attach_current_exception();
  }
  return status;
}

inline std::string shape_string(const Shape& shape) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ',';
  os << ')';
  return os.str();
}

inline int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline int32_t shape_ndim(const Shape& shape) {
  if (shape.size() > CH_MAX_NDIM)
    fail(CH_ERR_SHAPE, "shape " + shape_string(shape) + " has more than " +
                           std::to_string(CH_MAX_NDIM) + " dimensions");
  return static_cast<int32_t>(shape.size());
}

// A reference-counted handle: copy retains, destruction releases.
template <class T, T* (*Retain)(T*), ch_status (*Release)(T*)>
class Handle {
 public:
  Handle() noexcept = default;
  Handle(const Handle& other) noexcept : h_(other.h_ ? Retain(other.h_) : nullptr) {}
  Handle(Handle&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  Handle& operator=(const Handle& other) noexcept {
    if (this != &other) reset(other.h_ ? Retain(other.h_) : nullptr);
    return *this;
  }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) reset(std::exchange(other.h_, nullptr));
    return *this;
  }
  ~Handle() { reset(); }

  /// The C handle, borrowed: valid while this object holds it.
  T* get() const noexcept { return h_; }
  /// Give up the reference without releasing it: the caller now owns it.
  T* release() noexcept { return std::exchange(h_, nullptr); }
  /// Drop the reference (if any) and hold `h` instead, adopting its reference.
  void reset(T* h = nullptr) noexcept {
    T* old = std::exchange(h_, h);
    if (old) Release(old);
  }
  /// Whether this object holds a handle.
  bool valid() const noexcept { return h_ != nullptr; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

 protected:
  explicit Handle(T* adopted) noexcept : h_(adopted) {}

 private:
  T* h_ = nullptr;
};

}  // namespace detail

// ===========================================================================================
// Dtypes and devices
// ===========================================================================================

/// The ch_dtype of a C++ element type: dtype_of<float> is CH_FLOAT32.
template <class T>
struct DtypeOf;
template <>
struct DtypeOf<float> {
  static constexpr ch_dtype value = CH_FLOAT32;
};
template <>
struct DtypeOf<double> {
  static constexpr ch_dtype value = CH_FLOAT64;
};
template <>
struct DtypeOf<int32_t> {
  static constexpr ch_dtype value = CH_INT32;
};
template <class T>
inline constexpr ch_dtype dtype_of = DtypeOf<T>::value;

/// Name of a dtype, e.g. "float32".
inline std::string dtype_name(ch_dtype dtype) { return ch_dtype_name(dtype); }

/// Call `f` with a value of the C++ type of `dtype` (float, double or int32_t), for code
/// written once for every dtype: dispatch(a.dtype(), [&](auto tag) { using T = decltype(tag); }).
template <class F>
decltype(auto) dispatch(ch_dtype dtype, F&& f) {
  switch (dtype) {
    case CH_FLOAT32:
      return std::forward<F>(f)(float{});
    case CH_FLOAT64:
      return std::forward<F>(f)(double{});
    case CH_INT32:
      return std::forward<F>(f)(int32_t{});
    default:
      detail::fail(CH_ERR_DTYPE, "unknown dtype " + std::to_string(dtype));
  }
}

/// As dispatch, for float32 and float64 only (CH_ERR_DTYPE otherwise).
template <class F>
decltype(auto) dispatch_float(ch_dtype dtype, F&& f) {
  switch (dtype) {
    case CH_FLOAT32:
      return std::forward<F>(f)(float{});
    case CH_FLOAT64:
      return std::forward<F>(f)(double{});
    default:
      detail::fail(CH_ERR_DTYPE,
                   "a float32 or float64 array was expected, got " + dtype_name(dtype));
  }
}

/// The CPU device.
inline ch_device cpu() { return ch_device_cpu(); }
/// CUDA device `index`.
inline ch_device cuda(int32_t index = 0) { return ch_device{CH_DEVICE_CUDA, index}; }

/// Library version, e.g. "0.1.0".
inline std::string version() { return ch_version_string(); }

// ===========================================================================================
// Array
// ===========================================================================================

/// An n-dimensional array (ch_array). A handle: copies share the same memory; use copy()
/// for a deep copy. An Array may be empty (invalid): `if (a)` tells. On an empty Array the
/// getters return zeros and other calls throw ch::Error (CH_ERR_NULL_HANDLE).
/// From values: Array(std::vector<float>{1, 2, 3, 4}, {2, 2}) or, with a braced list,
/// Array::from<double>({1, 2, 3, 4}, {2, 2}) (a bare braced list would be ambiguous).
class Array : public detail::Handle<ch_array, ch_array_retain, ch_array_release> {
 public:
  /// An empty (invalid) array.
  Array() noexcept = default;

  /// A new array holding a copy of `data` with `shape` (prod(shape) == data.size()).
  Array(const std::vector<float>& data, const Shape& shape, ch_device device = cpu())
      : Array(from(data, shape, device)) {}
  Array(const std::vector<double>& data, const Shape& shape, ch_device device = cpu())
      : Array(from(data, shape, device)) {}
  Array(const std::vector<int32_t>& data, const Shape& shape, ch_device device = cpu())
      : Array(from(data, shape, device)) {}
  /// A new 1-d array holding a copy of `data`.
  explicit Array(const std::vector<float>& data) : Array(data, {int64_t(data.size())}) {}
  explicit Array(const std::vector<double>& data) : Array(data, {int64_t(data.size())}) {}
  explicit Array(const std::vector<int32_t>& data) : Array(data, {int64_t(data.size())}) {}

  /// Take ownership of a C handle (a new reference, e.g. from a ch_* out parameter).
  static Array adopt(ch_array* handle) noexcept { return Array(handle); }
  /// Share a borrowed C handle: retains it.
  static Array borrow(ch_array* handle) noexcept {
    return Array(handle ? ch_array_retain(handle) : nullptr);
  }

  /// A new array of element type T holding a copy of `data` with `shape`.
  template <class T>
  static Array from(const std::vector<T>& data, const Shape& shape, ch_device device = cpu()) {
    if (detail::shape_size(shape) != static_cast<int64_t>(data.size()))
      detail::fail(CH_ERR_SHAPE, "Array: " + std::to_string(data.size()) +
                                     " elements given for shape " + detail::shape_string(shape));
    ch_array* out = nullptr;
    check(ch_array_new(&out, dtype_of<T>, shape.data(), detail::shape_ndim(shape), data.data(),
                       device));
    return adopt(out);
  }
  /// A new array with uninitialized elements.
  static Array empty(const Shape& shape, ch_dtype dtype = CH_FLOAT32, ch_device device = cpu()) {
    ch_array* out = nullptr;
    check(ch_array_new_empty(&out, dtype, shape.data(), detail::shape_ndim(shape), device));
    return adopt(out);
  }
  /// A new array with every element `value`.
  static Array full(const Shape& shape, double value, ch_dtype dtype = CH_FLOAT32,
                    ch_device device = cpu()) {
    ch_array* out = nullptr;
    check(ch_array_new_full(&out, dtype, shape.data(), detail::shape_ndim(shape), value, device));
    return adopt(out);
  }
  static Array zeros(const Shape& shape, ch_dtype dtype = CH_FLOAT32, ch_device device = cpu()) {
    return full(shape, 0.0, dtype, device);
  }
  static Array ones(const Shape& shape, ch_dtype dtype = CH_FLOAT32, ch_device device = cpu()) {
    return full(shape, 1.0, dtype, device);
  }
  /// A new 0-d array holding `value`.
  static Array scalar(double value, ch_dtype dtype = CH_FLOAT32, ch_device device = cpu()) {
    return full({}, value, dtype, device);
  }
  /// New arrays with the shape, dtype and device of `a`.
  static Array empty_like(const Array& a) { return empty(a.shape(), a.dtype(), a.device()); }
  static Array full_like(const Array& a, double value) {
    return full(a.shape(), value, a.dtype(), a.device());
  }
  static Array zeros_like(const Array& a) { return full_like(a, 0.0); }
  static Array ones_like(const Array& a) { return full_like(a, 1.0); }

  /// Wrap an external buffer of prod(shape) elements without copying (zero-copy). The
  /// buffer must stay valid until `release(data, user_data)` is called (never, if release is
  /// nullptr: then the caller keeps it alive as long as any array uses it).
  static Array wrap(void* data, ch_dtype dtype, const Shape& shape, ch_device device = cpu(),
                    ch_release_callback release = nullptr, void* user_data = nullptr) {
    ch_array* out = nullptr;
    check(ch_array_wrap(&out, dtype, shape.data(), detail::shape_ndim(shape), data, device, release,
                        user_data));
    return adopt(out);
  }

  /// Element type.
  ch_dtype dtype() const noexcept { return ch_array_dtype(get()); }
  /// Number of dimensions.
  int32_t ndim() const noexcept { return ch_array_ndim(get()); }
  /// The shape (empty for a 0-d array).
  Shape shape() const {
    const int64_t* s = ch_array_shape(get());
    return s ? Shape(s, s + ndim()) : Shape();
  }
  /// Number of elements (1 for a 0-d array).
  int64_t size() const noexcept { return ch_array_size(get()); }
  /// Size of the elements in bytes.
  size_t nbytes() const noexcept { return ch_array_nbytes(get()); }
  /// The device holding the elements.
  ch_device device() const noexcept { return ch_array_device(get()); }
  /// Whether the elements are in host memory.
  bool on_cpu() const noexcept { return device().type == CH_DEVICE_CPU; }

  /// Typed pointer to the first element (on the array's device). T must match dtype()
  /// (CH_ERR_DTYPE otherwise). Arrays given to a callback as inputs, outputs or gradients
  /// are read-only: use the const overload.
  template <class T>
  T* data() {
    require_dtype<T>("data");
    return static_cast<T*>(ch_array_data(get()));
  }
  template <class T>
  const T* data() const {
    require_dtype<T>("data");
    return static_cast<const T*>(ch_array_data(get()));
  }
  /// Untyped pointer to the first element.
  void* raw_data() const noexcept { return ch_array_data(get()); }

  /// The elements converted to T, in C order (copied to the host if needed).
  template <class T>
  std::vector<T> to_vector() const {
    require_valid("to_vector");
    if (dtype() == dtype_of<T>) {
      std::vector<T> out(static_cast<size_t>(size()));
      check(ch_array_read(get(), out.data(), nbytes()));
      return out;
    }
    return dispatch(dtype(), [&](auto tag) {
      using U = decltype(tag);
      std::vector<U> native(static_cast<size_t>(size()));
      check(ch_array_read(get(), native.data(), nbytes()));
      return std::vector<T>(native.begin(), native.end());
    });
  }
  /// Element at flat index `index`, as double.
  double at(int64_t index) const {
    double out = 0;
    check(ch_array_get(&out, get(), index));
    return out;
  }
  /// The only element of a one-element array, as double.
  double item() const {
    if (size() != 1)
      detail::fail(CH_ERR_SHAPE,
                   "Array::item: the array has " + std::to_string(size()) + " elements, not one");
    return at(0);
  }

  /// Overwrite the elements from `values` (converted to the array's dtype).
  template <class T>
  void write(const std::vector<T>& values) {
    require_valid("write");
    if (static_cast<int64_t>(values.size()) != size())
      detail::fail(CH_ERR_SHAPE, "Array::write: " + std::to_string(values.size()) +
                                     " values for an array of " + std::to_string(size()));
    dispatch(dtype(), [&](auto tag) {
      using U = decltype(tag);
      std::vector<U> native(values.begin(), values.end());
      check(ch_array_write(get(), native.data(), nbytes()));
    });
  }
  /// Set every element to `value`.
  void fill(double value) { check(ch_array_fill(get(), value)); }
  /// A deep copy.
  Array copy() const {
    ch_array* out = nullptr;
    check(ch_array_copy(&out, get()));
    return adopt(out);
  }
  /// An array sharing this one's memory with another shape of the same size.
  Array reshape(const Shape& shape) const {
    ch_array* out = nullptr;
    check(ch_array_reshape(&out, get(), shape.data(), detail::shape_ndim(shape)));
    return adopt(out);
  }
  /// A copy on `device` (host to device, device to host, between devices; always a new
  /// buffer), complete on return (the seed's to_gpu / to_cpu / cuda.copy).
  Array to_device(ch_device device) const {
    ch_array* out = nullptr;
    check(ch_array_to_device(&out, get(), device));
    return adopt(out);
  }
  /// A copy on the CPU.
  Array to_cpu() const { return to_device(cpu()); }
  /// Copy the elements of `src` (same dtype and size, any device) into this array.
  void copy_from(const Array& src) { check(ch_array_copy_from(get(), src.get())); }
  /// Fill a float array from U[low, high) / N(mean, stddev^2): the process generator for
  /// CPU arrays, the device's cuRAND generator for CUDA arrays.
  void fill_uniform(double low, double high) { check(ch_array_fill_uniform(get(), low, high)); }
  void fill_normal(double mean, double stddev) { check(ch_array_fill_normal(get(), mean, stddev)); }
  /// A CPU array in page-locked memory (for asynchronous copies); needs a CUDA device.
  static Array pinned(const Shape& shape, ch_dtype dtype = CH_FLOAT32) {
    ch_array* out = nullptr;
    check(ch_array_new_pinned(&out, dtype, shape.data(), detail::shape_ndim(shape)));
    return adopt(out);
  }
  /// Whether the memory is page-locked.
  bool is_pinned() const noexcept { return ch_array_is_pinned(get()) != 0; }

 private:
  explicit Array(ch_array* adopted) noexcept : Handle(adopted) {}

  void require_valid(const char* who) const {
    if (!valid()) detail::fail(CH_ERR_NULL_HANDLE, std::string("Array::") + who + ": empty array");
  }
  template <class T>
  void require_dtype(const char* who) const {
    require_valid(who);
    if (dtype() != dtype_of<T>)
      detail::fail(CH_ERR_DTYPE, std::string("Array::") + who + "<" + dtype_name(dtype_of<T>) +
                                     ">: the array is " + dtype_name(dtype()));
  }
};

/// Prints e.g. "array(float32, (2, 3), [1, 2, 3, 4, 5, 6])" (at most 32 elements).
inline std::ostream& operator<<(std::ostream& os, const Array& a) {
  if (!a) return os << "array(empty)";
  os << "array(" << dtype_name(a.dtype()) << ", " << detail::shape_string(a.shape()) << ", [";
  if (a.on_cpu()) {
    const int64_t n = std::min<int64_t>(a.size(), 32);
    for (int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << a.at(i);
    if (a.size() > n) os << ", ...";
  } else {
    os << "on device";
  }
  return os << "])";
}

// ===========================================================================================
// Variable and Function handles
// ===========================================================================================

class Function;

/// A variable (ch_variable): an array with the history of the computation that made it.
/// A handle: copies refer to the same variable. May be empty (`if (v)` tells).
class Variable : public detail::Handle<ch_variable, ch_variable_retain, ch_variable_release> {
 public:
  /// An empty (invalid) variable.
  Variable() noexcept = default;
  /// A new root variable holding `data` (shared, not copied). A volatile variable records
  /// no history.
  explicit Variable(const Array& data, bool is_volatile = false) {
    ch_variable* out = nullptr;
    check(ch_variable_new(&out, data.get(), is_volatile ? 1 : 0));
    reset(out);
  }

  /// Take ownership of a C handle (a new reference).
  static Variable adopt(ch_variable* handle) noexcept { return Variable(handle, 0); }
  /// Share a borrowed C handle: retains it.
  static Variable borrow(ch_variable* handle) noexcept {
    return Variable(handle ? ch_variable_retain(handle) : nullptr, 0);
  }

  /// The data array (shared with the variable).
  Array data() const {
    ch_array* out = nullptr;
    check(ch_variable_data(&out, get()));
    return Array::adopt(out);
  }
  /// Replace the data array (shared, not copied).
  void set_data(const Array& data) { check(ch_variable_set_data(get(), data.get())); }
  /// The gradient, or an empty Array when there is none.
  Array grad() const {
    ch_array* out = nullptr;
    check(ch_variable_grad(&out, get()));
    return Array::adopt(out);
  }
  /// Set the gradient (same shape and dtype as the data); an empty Array clears it.
  void set_grad(const Array& grad) { check(ch_variable_set_grad(get(), grad.get())); }
  /// Clear the gradient.
  void clear_grad() { check(ch_variable_set_grad(get(), nullptr)); }
  /// The function application that created this variable; empty for a root.
  Function creator() const;
  /// The graph behind this variable as Graphviz DOT text (see ch::graph_dot).
  std::string graph_dot(const std::string& name = "") const;

  /// Back-propagate from this variable (its grad is the initial error; ones if it has none
  /// and one element). Unless retain_grad, intermediate gradients are freed once used.
  void backward(bool retain_grad = false) {
    check(ch_variable_backward(get(), retain_grad ? 1 : 0));
  }
  /// Back-propagate with options: enable_double_backprop builds the gradients as graphs
  /// (read them with grad_var() and differentiate them again).
  void backward(bool retain_grad, bool enable_double_backprop) {
    ch_backward_options o = CH_BACKWARD_OPTIONS_INIT;
    o.retain_grad = retain_grad ? 1 : 0;
    o.enable_double_backprop = enable_double_backprop ? 1 : 0;
    check(ch_variable_backward_ex(get(), &o));
  }
  /// The gradient as a variable (Chainer's grad_var); empty when there is none.
  Variable grad_var() const {
    ch_variable* out = nullptr;
    check(ch_variable_grad_var(&out, get()));
    return Variable(out, 0);
  }
  /// Cut the graph before this variable: it becomes a root (truncated BPTT).
  void unchain_backward() { check(ch_variable_unchain_backward(get())); }

  bool is_volatile() const noexcept { return ch_variable_is_volatile(get()) != 0; }
  /// Whether backward computes this variable's gradient (default true). Mark data false:
  /// the first layer then skips its input gradient.
  bool requires_grad() const noexcept { return ch_variable_requires_grad(get()) != 0; }
  void set_requires_grad(bool requires_grad) {
    check(ch_variable_set_requires_grad(get(), requires_grad ? 1 : 0));
  }
  /// Number of elements of the data.
  int64_t size() const noexcept { return ch_variable_size(get()); }
  /// Shape and dtype of the data.
  Shape shape() const { return data().shape(); }
  ch_dtype dtype() const { return data().dtype(); }

 private:
  Variable(ch_variable* adopted, int) noexcept : Handle(adopted) {}
};

/// Chainer's chainer.grad: gradients of `outputs` with respect to `inputs` as new variables
/// (empty where none reaches an input); no grad field changes. grad_outputs: empty, or one
/// per output (an empty Variable means the output's grad, or ones for one element).
inline std::vector<Variable> grad(const std::vector<Variable>& outputs,
                                  const std::vector<Variable>& inputs,
                                  const std::vector<Variable>& grad_outputs = {},
                                  bool enable_double_backprop = false, bool retain_grad = false) {
  std::vector<ch_variable*> ys, xs, gys, out(inputs.size(), nullptr);
  for (const Variable& y : outputs) ys.push_back(y.get());
  for (const Variable& x : inputs) xs.push_back(x.get());
  for (const Variable& g : grad_outputs) gys.push_back(g.get());
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    detail::fail(CH_ERR_INVALID_ARGUMENT, "ch::grad: " + std::to_string(outputs.size()) +
                                              " outputs but " +
                                              std::to_string(grad_outputs.size()) +
                                              " grad_outputs");
  ch_backward_options o = CH_BACKWARD_OPTIONS_INIT;
  o.retain_grad = retain_grad ? 1 : 0;
  o.enable_double_backprop = enable_double_backprop ? 1 : 0;
  check(ch_grad(out.data(), ys.data(), ys.size(), xs.data(), xs.size(),
                gys.empty() ? nullptr : gys.data(), &o));
  std::vector<Variable> res;
  for (ch_variable* h : out) res.push_back(Variable::adopt(h));
  return res;
}

/// A scope in which functions record no graph on this thread (Chainer's no_backprop_mode);
/// BackpropMode(true) is force_backprop_mode.
class BackpropMode {
 public:
  explicit BackpropMode(bool enable) { check(ch_backprop_mode_push(enable ? 1 : 0)); }
  ~BackpropMode() { ch_backprop_mode_pop(); }
  BackpropMode(const BackpropMode&) = delete;
  BackpropMode& operator=(const BackpropMode&) = delete;
};
struct NoBackpropMode : BackpropMode {
  NoBackpropMode() : BackpropMode(false) {}
};

/// A parameter of a function object, with its gradient (both shared, not copied).
struct Parameter {
  std::string name;
  Array param;
  Array grad;
};

namespace detail {
// Outputs returned by one apply; more make CH_ERR_UNSUPPORTED (the C API cannot tell the
// count before the call, and outputs past the capacity are not returned).
inline constexpr size_t kMaxOutputs = 64;

inline std::vector<Variable> apply(ch_function* f, const std::vector<Variable>& inputs) {
  std::vector<ch_variable*> in;
  in.reserve(inputs.size());
  for (const Variable& v : inputs) in.push_back(v.get());
  std::array<ch_variable*, kMaxOutputs> out{};
  size_t n = 0;
  ch_status st = ch_function_apply(f, in.data(), in.size(), out.data(), out.size(), &n);
  // Adopt every returned handle before anything can throw (on failure there are none).
  std::array<Variable, kMaxOutputs> owned;
  for (size_t i = 0; i < out.size() && out[i]; ++i) owned[i] = Variable::adopt(out[i]);
  check(st);
  if (n > kMaxOutputs)
    fail(CH_ERR_UNSUPPORTED, std::string("function '") + ch_function_name(f) + "' produced " +
                                 std::to_string(n) + " outputs; ch.hpp returns at most " +
                                 std::to_string(kMaxOutputs));
  return std::vector<Variable>(std::make_move_iterator(owned.begin()),
                               std::make_move_iterator(owned.begin() + n));
}

template <class... V>
inline constexpr bool all_variables = (std::is_convertible_v<const V&, const Variable&> && ...);
}  // namespace detail

/// A function (ch_function): a function object (from ch::FunctionBase or the C API) or a
/// recorded application of one (a graph node, from Variable::creator()). A handle.
class Function : public detail::Handle<ch_function, ch_function_retain, ch_function_release> {
 public:
  /// An empty (invalid) function.
  Function() noexcept = default;
  /// Take ownership of a C handle (a new reference).
  static Function adopt(ch_function* handle) noexcept { return Function(handle); }
  /// Share a borrowed C handle: retains it.
  static Function borrow(ch_function* handle) noexcept {
    return Function(handle ? ch_function_retain(handle) : nullptr);
  }

  /// Name, e.g. "MulAdd" or a built-in's "Exp".
  std::string name() const { return ch_function_name(get()); }

  /// Apply to `inputs` (all volatile or none); every call is a new graph node. Returns all
  /// outputs.
  std::vector<Variable> apply(const std::vector<Variable>& inputs) const {
    return detail::apply(get(), inputs);
  }
  /// Apply to the inputs and return the only output (CH_ERR_INVALID_ARGUMENT if the function
  /// produced several: use apply()).
  template <class... V, class = std::enable_if_t<detail::all_variables<V...>>>
  Variable operator()(const V&... inputs) const {
    std::vector<Variable> out = apply({inputs...});
    if (out.size() != 1)
      detail::fail(CH_ERR_INVALID_ARGUMENT, "function '" + name() + "' produced " +
                                                std::to_string(out.size()) +
                                                " outputs; call apply() to get them all");
    return out[0];
  }

  /// Graph inspection of an application: inputs and outputs (empty Variables where unchained
  /// or freed).
  size_t input_count() const noexcept { return ch_function_input_count(get()); }
  size_t output_count() const noexcept { return ch_function_output_count(get()); }
  Variable input(size_t index) const {
    ch_variable* out = nullptr;
    check(ch_function_input(&out, get(), index));
    return Variable::adopt(out);
  }
  Variable output(size_t index) const {
    ch_variable* out = nullptr;
    check(ch_function_output(&out, get(), index));
    return Variable::adopt(out);
  }
  std::vector<Variable> inputs() const {
    std::vector<Variable> v;
    for (size_t i = 0, n = input_count(); i < n; ++i) v.push_back(input(i));
    return v;
  }
  std::vector<Variable> outputs() const {
    std::vector<Variable> v;
    for (size_t i = 0, n = output_count(); i < n; ++i) v.push_back(output(i));
    return v;
  }
  /// Remove this application from the graph.
  void unchain() { check(ch_function_unchain(get())); }

  /// Run the forward computation again on plain arrays, recording nothing (the seed's
  /// `func.forward((x.data,))`, e.g. inside numerical_grad). The graph this application
  /// belongs to stays usable (see ch_function_forward). Returns all outputs.
  std::vector<Array> forward(const std::vector<Array>& inputs) const {
    std::vector<ch_array*> in;
    in.reserve(inputs.size());
    for (const Array& a : inputs) in.push_back(a.get());
    std::array<ch_array*, detail::kMaxOutputs> out{};
    size_t n = 0;
    ch_status st = ch_function_forward(get(), in.data(), in.size(), out.data(), out.size(), &n);
    std::array<Array, detail::kMaxOutputs> owned;
    for (size_t i = 0; i < out.size() && out[i]; ++i) owned[i] = Array::adopt(out[i]);
    check(st);
    if (n > detail::kMaxOutputs)
      detail::fail(CH_ERR_UNSUPPORTED, "function '" + name() + "' produced " + std::to_string(n) +
                                           " outputs; ch.hpp returns at most " +
                                           std::to_string(detail::kMaxOutputs));
    return std::vector<Array>(std::make_move_iterator(owned.begin()),
                              std::make_move_iterator(owned.begin() + n));
  }

  /// Give the function object a parameter and its gradient (same shape and dtype), both
  /// shared: backward accumulates into `grad` in place, optimizers update `param` in place.
  void add_parameter(const std::string& name, const Array& param, const Array& grad) {
    check(ch_function_add_parameter(get(), name.c_str(), param.get(), grad.get()));
  }
  size_t parameter_count() const noexcept { return ch_function_parameter_count(get()); }
  Parameter parameter(size_t index) const {
    ch_array* p = nullptr;
    ch_array* g = nullptr;
    const char* name = nullptr;
    ch_status st = ch_function_parameter(&p, &g, &name, get(), index);
    Parameter out{std::string(), Array::adopt(p), Array::adopt(g)};
    check(st);
    out.name = name ? name : "";
    return out;
  }
  std::vector<Parameter> parameters() const {
    std::vector<Parameter> v;
    for (size_t i = 0, n = parameter_count(); i < n; ++i) v.push_back(parameter(i));
    return v;
  }

 private:
  explicit Function(ch_function* adopted) noexcept : Handle(adopted) {}
};

inline Function Variable::creator() const {
  ch_function* out = nullptr;
  check(ch_variable_creator(&out, get()));
  return Function::adopt(out);
}

/// Options of ch::graph_dot (see ch_graph_dot_options).
struct GraphDotOptions {
  std::vector<std::string> output_names;  ///< labels of the outputs, in order (may be shorter)
  bool show_parameters = true;            ///< parameters (W, b) as named nodes
  std::string rankdir = "TB";             ///< Graphviz rankdir: TB, BT, LR or RL
};

/// The computational graph behind `outputs` as Graphviz DOT text (Chainer's
/// build_computational_graph): variables as ovals "(shape), dtype", functions as boxes.
inline std::string graph_dot(const std::vector<Variable>& outputs,
                             const GraphDotOptions& options = GraphDotOptions()) {
  std::vector<ch_variable*> vs;
  for (const Variable& v : outputs) vs.push_back(v.get());
  std::vector<const char*> names;
  for (const std::string& n : options.output_names) names.push_back(n.c_str());
  names.resize(vs.size(), nullptr);
  ch_graph_dot_options o{CH_GRAPH_DOT_OPTIONS_VERSION, options.show_parameters ? 0 : 1,
                         options.rankdir.c_str(), names.data()};
  char* out = nullptr;
  check(ch_variable_graph_dot(&out, vs.data(), vs.size(), &o));
  std::string dot(out);
  ch_string_free(out);
  return dot;
}

inline std::string Variable::graph_dot(const std::string& name) const {
  GraphDotOptions o;
  if (!name.empty()) o.output_names.push_back(name);
  return ch::graph_dot({*this}, o);
}

// ===========================================================================================
// Built-in functions
// ===========================================================================================

namespace detail {
using UnaryFn = ch_status (*)(ch_variable**, ch_variable*);
using BinaryFn = ch_status (*)(ch_variable**, ch_variable*, ch_variable*);
using ScalarFn = ch_status (*)(ch_variable**, ch_variable*, double);

inline Variable call(UnaryFn f, const Variable& x) {
  ch_variable* out = nullptr;
  check(f(&out, x.get()));
  return Variable::adopt(out);
}
inline Variable call(BinaryFn f, const Variable& a, const Variable& b) {
  ch_variable* out = nullptr;
  check(f(&out, a.get(), b.get()));
  return Variable::adopt(out);
}
inline Variable call(ScalarFn f, const Variable& x, double s) {
  ch_variable* out = nullptr;
  check(f(&out, x.get(), s));
  return Variable::adopt(out);
}
}  // namespace detail

/// Elementwise arithmetic with NumPy broadcasting; scalars take the variable's dtype.
inline Variable operator+(const Variable& a, const Variable& b) {
  return detail::call(ch_functions_add, a, b);
}
inline Variable operator-(const Variable& a, const Variable& b) {
  return detail::call(ch_functions_sub, a, b);
}
inline Variable operator*(const Variable& a, const Variable& b) {
  return detail::call(ch_functions_mul, a, b);
}
inline Variable operator/(const Variable& a, const Variable& b) {
  return detail::call(ch_functions_div, a, b);
}
inline Variable operator+(const Variable& x, double s) {
  return detail::call(ch_functions_add_scalar, x, s);
}
inline Variable operator+(double s, const Variable& x) {
  return detail::call(ch_functions_add_scalar, x, s);
}
inline Variable operator-(const Variable& x, double s) {
  return detail::call(ch_functions_sub_scalar, x, s);
}
inline Variable operator-(double s, const Variable& x) {
  return detail::call(ch_functions_rsub_scalar, x, s);
}
inline Variable operator*(const Variable& x, double s) {
  return detail::call(ch_functions_mul_scalar, x, s);
}
inline Variable operator*(double s, const Variable& x) {
  return detail::call(ch_functions_mul_scalar, x, s);
}
inline Variable operator/(const Variable& x, double s) {
  return detail::call(ch_functions_div_scalar, x, s);
}
inline Variable operator/(double s, const Variable& x) {
  return detail::call(ch_functions_rdiv_scalar, x, s);
}
/// -x
inline Variable operator-(const Variable& x) { return detail::call(ch_functions_neg, x); }

/// Named forms of the operators.
inline Variable add(const Variable& a, const Variable& b) { return a + b; }
inline Variable sub(const Variable& a, const Variable& b) { return a - b; }
inline Variable mul(const Variable& a, const Variable& b) { return a * b; }
inline Variable div(const Variable& a, const Variable& b) { return a / b; }
inline Variable neg(const Variable& x) { return -x; }

/// x ** p for a scalar exponent.
inline Variable pow(const Variable& x, double p) {
  return detail::call(ch_functions_pow_scalar, x, p);
}
/// s ** x for a scalar base s > 0.
inline Variable pow(double s, const Variable& x) {
  return detail::call(ch_functions_rpow_scalar, x, s);
}
/// Elementwise e ** x.
inline Variable exp(const Variable& x) { return detail::call(ch_functions_exp, x); }
/// Elementwise natural logarithm.
inline Variable log(const Variable& x) { return detail::call(ch_functions_log, x); }
/// Sum of all elements: a 0-d variable.
inline Variable sum(const Variable& x) { return detail::call(ch_functions_sum, x); }
/// Sum along `axis` (negative counts from the end); keepdims keeps the axis with extent 1.
inline Variable sum(const Variable& x, int32_t axis, bool keepdims = false) {
  ch_variable* out = nullptr;
  check(ch_functions_sum_axis(&out, x.get(), axis, keepdims ? 1 : 0));
  return Variable::adopt(out);
}
/// Same data with another shape of the same size; one extent may be -1 (inferred).
inline Variable reshape(const Variable& x, const Shape& shape) {
  ch_variable* out = nullptr;
  check(ch_functions_reshape(&out, x.get(), shape.data(), detail::shape_ndim(shape)));
  return Variable::adopt(out);
}
/// The input's data as a new variable; the gradient passes through.
inline Variable identity(const Variable& x) { return detail::call(ch_functions_identity, x); }
/// Broadcast to `shape` by NumPy's rules; backward sums over the broadcast axes.
inline Variable broadcast_to(const Variable& x, const Shape& shape) {
  ch_variable* out = nullptr;
  check(ch_functions_broadcast_to(&out, x.get(), shape.data(), detail::shape_ndim(shape)));
  return Variable::adopt(out);
}

// ===========================================================================================
// User-defined functions
// ===========================================================================================

class FunctionBase;

namespace detail {

// Shared by the C function object's user data and every application. ~FunctionBase clears
// `target`, so a graph node that outlives a (non-shared) C++ object fails cleanly.
struct FunctionLink {
  FunctionBase* target = nullptr;
  std::string name;
};

// Per-application user data: keeps a shared_ptr-owned FunctionBase alive as long as the
// graph node that applied it.
struct ApplicationData {
  std::shared_ptr<FunctionLink> link;
  std::shared_ptr<FunctionBase> keep_alive;
};

inline ch_context*& current_context() {
  thread_local ch_context* ctx = nullptr;
  return ctx;
}

class ContextScope {
 public:
  explicit ContextScope(ch_context* ctx) noexcept : saved_(current_context()) {
    current_context() = ctx;
  }
  ~ContextScope() { current_context() = saved_; }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  ch_context* saved_;
};

inline std::vector<Array> borrow_all(ch_array* const* arrays, size_t n) {
  std::vector<Array> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.push_back(Array::borrow(arrays[i]));
  return v;
}

inline bool all_on_cpu(const std::vector<Array>& arrays) {
  return std::all_of(arrays.begin(), arrays.end(), [](const Array& a) { return !a || a.on_cpu(); });
}

}  // namespace detail

/// Base class of differentiable functions written in C++ (the seed's chainer.Function).
///
/// Override forward() and backward() (device-independent), or forward_cpu()/backward_cpu()
/// (and forward_gpu()/backward_gpu()): the default forward() and backward() dispatch on the
/// inputs' device. backward() returns one gradient per input; an empty Array means no
/// gradient for that input. The default backward returns none (not differentiable).
/// Arrays passed in are the engine's, not copies: never write to them.
///
///   struct MulAdd : ch::FunctionBase {
///     MulAdd() : FunctionBase("MulAdd") {}
///     std::vector<ch::Array> forward(const std::vector<ch::Array>& in) override;
///     std::vector<ch::Array> backward(const std::vector<ch::Array>& in,
///                                     const std::vector<ch::Array>& out,
///                                     const std::vector<ch::Array>& gout) override;
///   };
///   MulAdd f;
///   ch::Variable w = f(x, y, z);
///
/// Every application is a separate graph node sharing this object and its parameters, so
/// keep per-application state with save_for_backward()/saved(), not in members.
///
/// Lifetime: create it with std::make_shared and the graph keeps it alive as long as any
/// node made by it. An object not owned by a shared_ptr (on the stack, a member) must
/// outlive the graphs it built; a backward through a node whose object is gone fails with
/// CH_ERR_CALLBACK (it never touches freed memory). Not copyable, not movable.
///
/// Exceptions thrown by the overrides are caught before they reach the C library and
/// rethrown by ch::check() to the caller of apply()/backward() with their original type.
class FunctionBase : public std::enable_shared_from_this<FunctionBase> {
 public:
  /// A function object named `name` (used in error messages and graph inspection).
  /// With graph_backward, backward_graph() is the function's backward over variables, used
  /// by double backprop (Variable::backward(retain, true), ch::grad(..., true)); without
  /// it double backprop through the function is CH_ERR_GRAPH naming it.
  explicit FunctionBase(const std::string& name = "Function", bool graph_backward = false)
      : link_(std::make_shared<detail::FunctionLink>()) {
    link_->target = this;
    link_->name = name;
    auto* user_data = new std::shared_ptr<detail::FunctionLink>(link_);
    ch_function_def def{};
    def.version = CH_FUNCTION_DEF_VERSION;
    def.name = name.c_str();
    def.forward = &FunctionBase::forward_callback;
    def.backward = &FunctionBase::backward_callback;
    if (graph_backward) def.graph_backward = &FunctionBase::graph_backward_callback;
    def.user_data = user_data;
    def.destroy = &FunctionBase::destroy_user_data;
    ch_function* out = nullptr;
    ch_status st = ch_function_new(&out, &def);
    if (st != CH_OK) delete user_data;  // on failure the library does not call destroy
    check(st);
    function_ = Function::adopt(out);
  }
  virtual ~FunctionBase() { link_->target = nullptr; }

  FunctionBase(const FunctionBase&) = delete;
  FunctionBase& operator=(const FunctionBase&) = delete;
  FunctionBase(FunctionBase&&) = delete;
  FunctionBase& operator=(FunctionBase&&) = delete;

  /// Compute the outputs. Default: forward_cpu() if every input is on the CPU, else
  /// forward_gpu().
  virtual std::vector<Array> forward(const std::vector<Array>& inputs) {
    return detail::all_on_cpu(inputs) ? forward_cpu(inputs) : forward_gpu(inputs);
  }
  /// Compute the input gradients (one per input; empty Array = none). Default:
  /// backward_cpu() if every input and gradient is on the CPU, else backward_gpu().
  virtual std::vector<Array> backward(const std::vector<Array>& inputs,
                                      const std::vector<Array>& outputs,
                                      const std::vector<Array>& grad_outputs) {
    return detail::all_on_cpu(inputs) && detail::all_on_cpu(grad_outputs)
               ? backward_cpu(inputs, outputs, grad_outputs)
               : backward_gpu(inputs, outputs, grad_outputs);
  }
  /// Forward on CPU arrays. Default: CH_ERR_UNSUPPORTED.
  virtual std::vector<Array> forward_cpu(const std::vector<Array>&) {
    detail::fail(CH_ERR_UNSUPPORTED, "function '" + name() + "' implements no CPU forward");
  }
  /// Forward on GPU arrays. Default: CH_ERR_UNSUPPORTED.
  virtual std::vector<Array> forward_gpu(const std::vector<Array>&) {
    detail::fail(CH_ERR_UNSUPPORTED, "function '" + name() + "' implements no GPU forward");
  }
  /// Backward on CPU arrays. Default: no gradient for any input.
  virtual std::vector<Array> backward_cpu(const std::vector<Array>& inputs,
                                          const std::vector<Array>&, const std::vector<Array>&) {
    return std::vector<Array>(inputs.size());
  }
  /// Backward on GPU arrays. Default: no gradient for any input.
  virtual std::vector<Array> backward_gpu(const std::vector<Array>& inputs,
                                          const std::vector<Array>&, const std::vector<Array>&) {
    return std::vector<Array>(inputs.size());
  }

  /// The input gradients as variables built with ch:: functions (one per input; an empty
  /// Variable = none), for objects constructed with graph_backward.
  virtual std::vector<Variable> backward_graph(const std::vector<Variable>& inputs,
                                               const std::vector<Variable>& outputs,
                                               const std::vector<Variable>& grad_outputs) {
    (void)outputs;
    (void)grad_outputs;
    detail::fail(CH_ERR_GRAPH, "function '" + name() + "' overrides no backward_graph");
    return std::vector<Variable>(inputs.size());
  }

  /// The name given to the constructor.
  const std::string& name() const noexcept { return link_->name; }
  /// The C function object (for the C API or ch::check_backward).
  const Function& function() const noexcept { return function_; }

  /// Apply to `inputs`: a new graph node. Returns every output.
  std::vector<Variable> apply(const std::vector<Variable>& inputs) const {
    return function_.apply(inputs);
  }
  /// Apply and return the only output.
  template <class... V, class = std::enable_if_t<detail::all_variables<V...>>>
  Variable operator()(const V&... inputs) const {
    return function_(inputs...);
  }

  /// Register a parameter and its gradient (same shape and dtype, both shared).
  void add_parameter(const std::string& name, const Array& param, const Array& grad) {
    function_.add_parameter(name, param, grad);
  }
  /// The registered parameters, in order.
  std::vector<Parameter> parameters() const { return function_.parameters(); }

 protected:
  /// During forward(): keep `array` for this application's backward.
  static void save_for_backward(const Array& array) {
    check(ch_context_save(require_context("save_for_backward"), array.get()));
  }
  /// During forward() or backward(): the device the callback runs for (the
  /// CUDA device of its inputs, current while it runs, or the CPU).
  static ch_device context_device() { return ch_context_device(require_context("context_device")); }
  /// In forward_gpu()/backward_gpu(): the cudaStream_t to queue the host's own
  /// device work on (the stream chainerc's kernels use: the default stream,
  /// nullptr, today). See ch_context_stream in <ch/function.h>.
  static void* context_stream() { return ch_context_stream(require_context("context_stream")); }
  /// During backward() (or forward()): the arrays this application saved, in order.
  static std::vector<Array> saved() {
    ch_context* ctx = require_context("saved");
    std::vector<Array> v;
    for (size_t i = 0, n = ch_context_saved_count(ctx); i < n; ++i) {
      ch_array* out = nullptr;
      check(ch_context_saved(&out, ctx, i));
      v.push_back(Array::adopt(out));
    }
    return v;
  }

 private:
  static ch_context* require_context(const char* who) {
    ch_context* ctx = detail::current_context();
    if (!ctx)
      detail::fail(CH_ERR_CALLBACK, std::string("FunctionBase::") + who +
                                        " is callable only inside forward or backward");
    return ctx;
  }

  static FunctionBase& target_of(void* user_data) {
    const detail::FunctionLink& link =
        **static_cast<std::shared_ptr<detail::FunctionLink>*>(user_data);
    if (!link.target)
      detail::fail(CH_ERR_CALLBACK, "the C++ object of function '" + link.name +
                                        "' was destroyed while graph nodes made by it were "
                                        "alive (own it with std::make_shared)");
    return *link.target;
  }

  static void destroy_user_data(void* user_data) {
    delete static_cast<std::shared_ptr<detail::FunctionLink>*>(user_data);
  }
  static void destroy_application_data(void* data) {
    delete static_cast<detail::ApplicationData*>(data);
  }

  static ch_status forward_callback(void* user_data, ch_context* ctx, ch_array* const* inputs,
                                    size_t n_inputs) {
    return detail::guard([&] {
      FunctionBase& self = target_of(user_data);
      std::vector<Array> xs = detail::borrow_all(inputs, n_inputs);
      std::vector<Array> ys;
      {
        detail::ContextScope scope(ctx);
        ys = self.forward(xs);
      }
      for (size_t i = 0; i < ys.size(); ++i) {
        if (!ys[i])
          detail::fail(CH_ERR_CALLBACK, "function '" + self.name() +
                                            "': forward returned an "
                                            "empty array as output " +
                                            std::to_string(i));
        check(ch_context_add_output(ctx, ys[i].get()));
      }
      // Keep a shared_ptr-owned object alive as long as this graph node.
      auto data = std::make_unique<detail::ApplicationData>();
      data->link = *static_cast<std::shared_ptr<detail::FunctionLink>*>(user_data);
      data->keep_alive = self.weak_from_this().lock();
      if (data->keep_alive) {
        check(ch_context_set_user_data(ctx, data.get(), &FunctionBase::destroy_application_data));
        data.release();
      }
    });
  }

  static ch_status backward_callback(void* user_data, ch_context* ctx, ch_array* const* inputs,
                                     size_t n_inputs, ch_array* const* outputs, size_t n_outputs,
                                     ch_array* const* grad_outputs, size_t n_grad_outputs) {
    return detail::guard([&] {
      FunctionBase& self = target_of(user_data);
      std::vector<Array> xs = detail::borrow_all(inputs, n_inputs);
      std::vector<Array> ys = detail::borrow_all(outputs, n_outputs);
      std::vector<Array> gys = detail::borrow_all(grad_outputs, n_grad_outputs);
      std::vector<Array> gxs;
      {
        detail::ContextScope scope(ctx);
        gxs = self.backward(xs, ys, gys);
      }
      if (gxs.size() != n_inputs)
        detail::fail(CH_ERR_CALLBACK, "function '" + self.name() + "': backward returned " +
                                          std::to_string(gxs.size()) + " gradients for " +
                                          std::to_string(n_inputs) + " inputs");
      for (size_t i = 0; i < gxs.size(); ++i)
        if (gxs[i]) check(ch_context_set_grad_input(ctx, i, gxs[i].get()));
    });
  }

  static ch_status graph_backward_callback(void* user_data, ch_context* ctx,
                                           ch_variable* const* inputs, size_t n_inputs,
                                           ch_variable* const* outputs, size_t n_outputs,
                                           ch_variable* const* grad_outputs,
                                           size_t n_grad_outputs, ch_variable** grad_inputs) {
    return detail::guard([&] {
      FunctionBase& self = target_of(user_data);
      auto borrow = [](ch_variable* const* hs, size_t n) {
        std::vector<Variable> v;
        for (size_t i = 0; i < n; ++i) v.push_back(Variable::borrow(hs[i]));
        return v;
      };
      std::vector<Variable> gxs;
      {
        detail::ContextScope scope(ctx);
        gxs = self.backward_graph(borrow(inputs, n_inputs), borrow(outputs, n_outputs),
                                  borrow(grad_outputs, n_grad_outputs));
      }
      if (gxs.size() != n_inputs)
        detail::fail(CH_ERR_CALLBACK, "function '" + self.name() +
                                          "': backward_graph returned " +
                                          std::to_string(gxs.size()) + " gradients for " +
                                          std::to_string(n_inputs) + " inputs");
      for (size_t i = 0; i < gxs.size(); ++i)
        grad_inputs[i] = gxs[i] ? ch_variable_retain(gxs[i].get()) : nullptr;
    });
  }

  std::shared_ptr<detail::FunctionLink> link_;
  Function function_;
};

// ===========================================================================================
// Gradient checking
// ===========================================================================================

namespace detail {
inline std::vector<ch_array*> handles_of(const std::vector<Array>& arrays) {
  std::vector<ch_array*> v;
  v.reserve(arrays.size());
  for (const Array& a : arrays) v.push_back(a.get());
  return v;
}
}  // namespace detail

/// Numerical gradients by central differences (the seed's gradient_check.numerical_grad):
/// each element of each input is moved by +eps and -eps in place (and restored), `f` is
/// evaluated, and grad = sum(grad_outputs * (f+ - f-)) / 2eps. `f` must compute from the
/// same `inputs` arrays (capture them). One gradient per input, in the input's dtype.
inline std::vector<Array> numerical_grad(const std::function<std::vector<Array>()>& f,
                                         const std::vector<Array>& inputs,
                                         const std::vector<Array>& grad_outputs,
                                         double eps = 1e-3) {
  struct Eval {
    static ch_status call(void* user_data, ch_context* ctx) {
      return detail::guard([&] {
        const auto& fn = *static_cast<const std::function<std::vector<Array>()>*>(user_data);
        for (const Array& y : fn()) check(ch_context_add_output(ctx, y.get()));
      });
    }
  };
  std::vector<ch_array*> xs = detail::handles_of(inputs);
  std::vector<ch_array*> gys = detail::handles_of(grad_outputs);
  std::vector<ch_array*> out(inputs.size(), nullptr);
  check(ch_numerical_grad(out.data(), &Eval::call,
                          const_cast<std::function<std::vector<Array>()>*>(&f), xs.data(),
                          xs.size(), gys.data(), gys.size(), eps));
  std::vector<Array> grads;
  grads.reserve(out.size());
  for (ch_array* g : out) grads.push_back(Array::adopt(g));
  return grads;
}

/// Whether |a - b| <= atol + rtol * |b| everywhere (numpy.allclose). Shapes must be equal
/// (ch::Error otherwise).
inline bool allclose(const Array& a, const Array& b, double atol = 1e-5, double rtol = 1e-4) {
  ch_status st = ch_allclose(a.get(), b.get(), atol, rtol, nullptr);
  if (st == CH_ERR_NOT_CLOSE) return false;
  check(st);
  return true;
}

/// As allclose, but throws ch::Error (CH_ERR_NOT_CLOSE) naming the worst element.
inline void assert_allclose(const Array& a, const Array& b, double atol = 1e-5,
                            double rtol = 1e-4) {
  check(ch_allclose(a.get(), b.get(), atol, rtol, nullptr));
}

/// Check a function's backward against numerical gradients (the seed's check_backward):
/// apply `function` to copies of `inputs`, back-propagate `grad_outputs` (one per output;
/// an empty list or empty Arrays mean ones) and compare every float input's gradient with
/// numerical_grad under (atol, rtol). Throws ch::Error (CH_ERR_NOT_CLOSE) on a mismatch.
inline void check_backward(const Function& function, const std::vector<Array>& inputs,
                           const std::vector<Array>& grad_outputs = {}, double eps = 1e-3,
                           double atol = 1e-5, double rtol = 1e-4) {
  std::vector<ch_array*> xs = detail::handles_of(inputs);
  std::vector<ch_array*> gys = detail::handles_of(grad_outputs);
  check(ch_check_backward(function.get(), xs.data(), xs.size(),
                          grad_outputs.empty() ? nullptr : gys.data(), gys.size(), eps, atol,
                          rtol));
}

/// check_backward for a C++ function object.
inline void check_backward(const FunctionBase& function, const std::vector<Array>& inputs,
                           const std::vector<Array>& grad_outputs = {}, double eps = 1e-3,
                           double atol = 1e-5, double rtol = 1e-4) {
  check_backward(function.function(), inputs, grad_outputs, eps, atol, rtol);
}

/// A graph to check: outputs built from input variables with any functions.
using GraphBuilder = std::function<std::vector<Variable>(const std::vector<Variable>&)>;

/// check_backward for a whole graph built by `build` (called several times, on root and on
/// volatile variables). An empty grad_outputs means ones for every output.
inline void check_backward(const GraphBuilder& build, const std::vector<Array>& inputs,
                           std::vector<Array> grad_outputs = {}, double eps = 1e-3,
                           double atol = 1e-5, double rtol = 1e-4) {
  struct Build {
    static ch_status call(void* user_data, ch_variable* const* in, size_t n_in, ch_variable** out,
                          size_t n_out) {
      return detail::guard([&] {
        const GraphBuilder& fn = *static_cast<const GraphBuilder*>(user_data);
        std::vector<Variable> xs;
        xs.reserve(n_in);
        for (size_t i = 0; i < n_in; ++i) xs.push_back(Variable::borrow(in[i]));
        std::vector<Variable> ys = fn(xs);
        if (ys.size() != n_out)
          detail::fail(CH_ERR_CALLBACK, "check_backward: the graph returned " +
                                            std::to_string(ys.size()) + " outputs but " +
                                            std::to_string(n_out) + " grad_outputs were given");
        for (size_t j = 0; j < n_out; ++j)
          if (!ys[j])
            detail::fail(CH_ERR_CALLBACK,
                         "check_backward: the graph returned an "
                         "empty variable as output " +
                             std::to_string(j));
        for (size_t j = 0; j < n_out; ++j) out[j] = ys[j].release();  // new references
      });
    }
  };
  if (grad_outputs.empty()) {  // learn the number of outputs from a volatile evaluation
    std::vector<Variable> probe;
    for (const Array& x : inputs) probe.emplace_back(x.copy(), true);
    grad_outputs.resize(build(probe).size());
  }
  std::vector<ch_array*> xs = detail::handles_of(inputs);
  std::vector<ch_array*> gys = detail::handles_of(grad_outputs);
  check(ch_check_backward_graph(&Build::call, const_cast<GraphBuilder*>(&build), xs.data(),
                                xs.size(), gys.data(), gys.size(), eps, atol, rtol));
}

// ===========================================================================================
// Training: function sets, optimizers, .npz checkpoints, data sets
// ===========================================================================================

/// A parameter of a function set or optimizer: its path ("l1/W") and the shared arrays.
struct NamedParameter {
  std::string path;
  Array param, grad;
};

/// A function set (ch_function_set, the seed's FunctionSet): named, nested parameterized
/// functions whose parameters are collected members-sorted-by-name. A handle: copies refer to
/// the same set. See <ch/function_set.h>.
class FunctionSet
    : public detail::Handle<ch_function_set, ch_function_set_retain, ch_function_set_release> {
 public:
  /// An empty (invalid) handle; use create() for a new set.
  FunctionSet() noexcept = default;
  /// A new empty set.
  static FunctionSet create() {
    ch_function_set* out = nullptr;
    check(ch_function_set_new(&out));
    return FunctionSet(out);
  }
  /// A new set with the given function members.
  static FunctionSet create(const std::vector<std::pair<std::string, Function>>& members) {
    FunctionSet s = create();
    for (const auto& m : members) s.add(m.first, m.second);
    return s;
  }
  /// Take ownership of a C handle (a new reference).
  static FunctionSet adopt(ch_function_set* handle) noexcept { return FunctionSet(handle); }
  /// Share a borrowed C handle: retains it.
  static FunctionSet borrow(ch_function_set* handle) noexcept {
    return FunctionSet(handle ? ch_function_set_retain(handle) : nullptr);
  }

  /// Add or replace the member `name` (a function object or a nested set). Returns *this.
  FunctionSet& add(const std::string& name, const Function& function) {
    check(ch_function_set_add_function(get(), name.c_str(), function.get()));
    return *this;
  }
  FunctionSet& add(const std::string& name, const FunctionSet& set) {
    check(ch_function_set_add_set(get(), name.c_str(), set.get()));
    return *this;
  }
  void remove(const std::string& name) { check(ch_function_set_remove(get(), name.c_str())); }
  /// The member `name` as a function / as a nested set.
  Function function(const std::string& name) const {
    ch_function* out = nullptr;
    check(ch_function_set_get_function(&out, get(), name.c_str()));
    return Function::adopt(out);
  }
  FunctionSet set(const std::string& name) const {
    ch_function_set* out = nullptr;
    check(ch_function_set_get_set(&out, get(), name.c_str()));
    return FunctionSet(out);
  }
  /// Direct member names, sorted.
  std::vector<std::string> member_names() const {
    std::vector<std::string> names;
    for (size_t i = 0, n = ch_function_set_member_count(get()); i < n; ++i) {
      const char* name = nullptr;
      check(ch_function_set_member_name(&name, get(), i));
      names.emplace_back(name);
    }
    return names;
  }
  size_t parameter_count() const noexcept { return ch_function_set_parameter_count(get()); }
  /// Every parameter with its gradient and path, in the set's order.
  std::vector<NamedParameter> parameters() const {
    std::vector<NamedParameter> out;
    for (size_t i = 0, n = parameter_count(); i < n; ++i) {
      ch_array *p = nullptr, *g = nullptr;
      const char* path = nullptr;
      check(ch_function_set_parameter(&p, &g, &path, get(), i));
      out.push_back(NamedParameter{path, Array::adopt(p), Array::adopt(g)});
    }
    return out;
  }
  /// The seed's collect_parameters(): (parameters, gradients).
  std::pair<std::vector<Array>, std::vector<Array>> collect_parameters() const {
    std::pair<std::vector<Array>, std::vector<Array>> out;
    for (NamedParameter& p : parameters()) {
      out.first.push_back(std::move(p.param));
      out.second.push_back(std::move(p.grad));
    }
    return out;
  }
  /// Copy parameter values from a set of the same structure (checked first).
  void copy_parameters_from(const FunctionSet& source) {
    check(ch_function_set_copy_parameters_from(get(), source.get()));
  }
  void copy_parameters_from(const std::vector<Array>& params) {
    std::vector<ch_array*> hs = detail::handles_of(params);
    check(ch_function_set_copy_parameters_from_arrays(get(), hs.data(), hs.size()));
  }
  FunctionSet& to_cpu() {
    check(ch_function_set_to_cpu(get()));
    return *this;
  }
  FunctionSet& to_gpu(ch_device device = cuda(0)) {
    check(ch_function_set_to_gpu(get(), device));
    return *this;
  }
  /// .npz checkpoint keyed by parameter path (readable by numpy.load and Chainer).
  void save_npz(const std::string& path, bool compress = false) const {
    check(ch_function_set_save_npz(get(), path.c_str(),
                                   compress ? CH_NPZ_COMPRESSED : CH_NPZ_STORED));
  }
  /// Load every parameter from an .npz (all checked before any is written).
  void load_npz(const std::string& path) { check(ch_function_set_load_npz(get(), path.c_str())); }

 private:
  explicit FunctionSet(ch_function_set* adopted) noexcept : Handle(adopted) {}
};

/// An optimizer (ch_optimizer): SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, RMSprop with the
/// seed's defaults. A handle: copies refer to the same optimizer. See <ch/optimizer.h>.
class Optimizer : public detail::Handle<ch_optimizer, ch_optimizer_retain, ch_optimizer_release> {
 public:
  Optimizer() noexcept = default;
  static Optimizer adopt(ch_optimizer* handle) noexcept { return Optimizer(handle); }
  static Optimizer borrow(ch_optimizer* handle) noexcept {
    return Optimizer(handle ? ch_optimizer_retain(handle) : nullptr);
  }

  static Optimizer sgd(double lr = CH_SGD_DEFAULT_LR) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_sgd_new(&out, lr));
    return Optimizer(out);
  }
  static Optimizer momentum_sgd(double lr = CH_MOMENTUM_SGD_DEFAULT_LR,
                                double momentum = CH_MOMENTUM_SGD_DEFAULT_MOMENTUM) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_momentum_sgd_new(&out, lr, momentum));
    return Optimizer(out);
  }
  static Optimizer adagrad(double lr = CH_ADAGRAD_DEFAULT_LR, double eps = CH_ADAGRAD_DEFAULT_EPS) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_adagrad_new(&out, lr, eps));
    return Optimizer(out);
  }
  static Optimizer adadelta(double rho = CH_ADADELTA_DEFAULT_RHO,
                            double eps = CH_ADADELTA_DEFAULT_EPS) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_adadelta_new(&out, rho, eps));
    return Optimizer(out);
  }
  static Optimizer adam(double alpha = CH_ADAM_DEFAULT_ALPHA, double beta1 = CH_ADAM_DEFAULT_BETA1,
                        double beta2 = CH_ADAM_DEFAULT_BETA2, double lam = CH_ADAM_DEFAULT_LAM,
                        double eps = CH_ADAM_DEFAULT_EPS) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_adam_new(&out, alpha, beta1, beta2, lam, eps));
    return Optimizer(out);
  }
  static Optimizer rmsprop(double lr = CH_RMSPROP_DEFAULT_LR,
                           double alpha = CH_RMSPROP_DEFAULT_ALPHA,
                           double eps = CH_RMSPROP_DEFAULT_EPS) {
    ch_optimizer* out = nullptr;
    check(ch_optimizer_rmsprop_new(&out, lr, alpha, eps));
    return Optimizer(out);
  }

  std::string name() const { return ch_optimizer_name(get()); }
  double hyperparam(const std::string& name) const {
    double v = 0;
    check(ch_optimizer_get_hyperparam(&v, get(), name.c_str()));
    return v;
  }
  void set_hyperparam(const std::string& name, double value) {
    check(ch_optimizer_set_hyperparam(get(), name.c_str(), value));
  }
  /// Set up with every parameter of `set` (t = 0, fresh state). Returns *this.
  Optimizer& setup(const FunctionSet& set) {
    check(ch_optimizer_setup(get(), set.get()));
    return *this;
  }
  Optimizer& setup(const std::vector<Array>& params, const std::vector<Array>& grads) {
    if (params.size() != grads.size())
      detail::fail(CH_ERR_INVALID_ARGUMENT, "Optimizer::setup: " + std::to_string(params.size()) +
                                                " parameters but " + std::to_string(grads.size()) +
                                                " gradients");
    std::vector<ch_array*> ps = detail::handles_of(params), gs = detail::handles_of(grads);
    check(ch_optimizer_setup_arrays(get(), ps.data(), gs.data(), ps.size()));
    return *this;
  }
  void zero_grads() { check(ch_optimizer_zero_grads(get())); }
  void update() { check(ch_optimizer_update(get())); }
  /// Plain SGD's step taken inside backward (ch_optimizer_set_step_in_backward):
  /// each Linear weight applied once is stepped by one GEMM into W; its
  /// gradient is not written, so the gradient utilities throw until update().
  Optimizer& set_step_in_backward(bool enable) {
    check(ch_optimizer_set_step_in_backward(get(), enable ? 1 : 0));
    return *this;
  }
  bool step_in_backward() const noexcept { return ch_optimizer_step_in_backward(get()) != 0; }
  int64_t t() const noexcept { return ch_optimizer_t(get()); }
  void set_t(int64_t t) { check(ch_optimizer_set_t(get(), t)); }
  int64_t epoch() const noexcept { return ch_optimizer_epoch(get()); }
  void new_epoch() { check(ch_optimizer_new_epoch(get())); }
  void accumulate_grads(const std::vector<Array>& grads) {
    std::vector<ch_array*> gs = detail::handles_of(grads);
    check(ch_optimizer_accumulate_grads(get(), gs.data(), gs.size()));
  }
  double compute_grads_norm() const {
    double norm = 0;
    check(ch_optimizer_compute_grads_norm(&norm, get()));
    return norm;
  }
  void clip_grads(double maxnorm) { check(ch_optimizer_clip_grads(get(), maxnorm)); }
  void weight_decay(double decay) { check(ch_optimizer_weight_decay(get(), decay)); }
  /// State arrays by checkpoint key ("l1/W/v"), shared with the optimizer.
  std::vector<std::pair<std::string, Array>> state() const {
    std::vector<std::pair<std::string, Array>> out;
    for (size_t i = 0, n = ch_optimizer_state_count(get()); i < n; ++i) {
      ch_array* a = nullptr;
      const char* key = nullptr;
      check(ch_optimizer_state(&a, &key, get(), i));
      out.emplace_back(key, Array::adopt(a));
    }
    return out;
  }
  void save_npz(const std::string& path, bool compress = false) const {
    check(ch_optimizer_save_npz(get(), path.c_str(), compress ? CH_NPZ_COMPRESSED : CH_NPZ_STORED));
  }
  void load_npz(const std::string& path) { check(ch_optimizer_load_npz(get(), path.c_str())); }

 private:
  explicit Optimizer(ch_optimizer* adopted) noexcept : Handle(adopted) {}
};

namespace datasets {
/// Read an IDX file (plain or gzip): float32/float64 values times `scale`, or int32 labels.
inline Array read_idx(const std::string& path, ch_dtype dtype = CH_FLOAT32, double scale = 1.0) {
  ch_array* out = nullptr;
  check(ch_datasets_read_idx(&out, path.c_str(), dtype, scale));
  return Array::adopt(out);
}
}  // namespace datasets

// ===========================================================================================
// Neural networks: ch::F (Chainer's chainer.functions) and ch::config
// ===========================================================================================

/// Chainer's `F.`: the built-in neural-network functions as free functions over Variables,
/// and the parameterized ones (Linear, Convolution2D, ...) as factories of function objects
/// applied with their call operator:
///
///   ch::Function l1 = ch::F::Linear(784, 100), l2 = ch::F::Linear(100, 10);
///   ch::Variable y = l2(ch::F::relu(l1(x)));
///   ch::Variable loss = ch::F::softmax_cross_entropy(y, t);
///
/// Defaults are the seed's (Chainer 1.0.1). Parameterized functions hold float32 parameters
/// unless a dtype is given (last argument). Errors throw ch::Error with the library's message.
namespace F {

/// A pair of extents (height, width): from one int (both) or two ({kh, kw}, a std::pair).
struct Int2 {
  int64_t h = 0, w = 0;
  Int2(int64_t both) noexcept : h(both), w(both) {}  // NOLINT: implicit on purpose
  Int2(int64_t h_, int64_t w_) noexcept : h(h_), w(w_) {}
  template <class A, class B>
  Int2(const std::pair<A, B>& p) noexcept  // NOLINT: implicit on purpose
      : h(static_cast<int64_t>(p.first)), w(static_cast<int64_t>(p.second)) {}
};

// ---- activation

inline Variable relu(const Variable& x) { return detail::call(ch_functions_relu, x); }
/// y = x (x >= 0), slope * x (x < 0).
inline Variable leaky_relu(const Variable& x, double slope = 0.2) {
  return detail::call(ch_functions_leaky_relu, x, slope);
}
inline Variable sigmoid(const Variable& x) { return detail::call(ch_functions_sigmoid, x); }
inline Variable tanh(const Variable& x) { return detail::call(ch_functions_tanh, x); }
/// Softmax over axis 1.
inline Variable softmax(const Variable& x) { return detail::call(ch_functions_softmax, x); }
/// LSTM activation: returns (c, h) from the previous cell state c_prev (N, U) and the
/// signal x (N, 4U), gates interleaved as Chainer 1.0.1.
inline std::pair<Variable, Variable> lstm(const Variable& c_prev, const Variable& x) {
  ch_variable* c = nullptr;
  ch_variable* h = nullptr;
  ch_status st = ch_functions_lstm(&c, &h, c_prev.get(), x.get());
  std::pair<Variable, Variable> out(Variable::adopt(c), Variable::adopt(h));
  check(st);
  return out;
}

// ---- array

/// Permute the axes (output axis i = input axis axes[i]); no axes reverses them.
inline Variable transpose(const Variable& x, const std::vector<int32_t>& axes = {}) {
  ch_variable* out = nullptr;
  check(ch_functions_transpose(&out, x.get(), axes.empty() ? nullptr : axes.data(),
                               static_cast<int32_t>(axes.size())));
  return Variable::adopt(out);
}
/// Concatenate along `axis` (default 1).
inline Variable concat(const std::vector<Variable>& xs, int32_t axis = 1) {
  std::vector<ch_variable*> hs;
  hs.reserve(xs.size());
  for (const Variable& v : xs) hs.push_back(v.get());
  ch_variable* out = nullptr;
  check(ch_functions_concat(&out, hs.data(), hs.size(), axis));
  return Variable::adopt(out);
}
/// Copy to the device `dst` (gradient copied back).
inline Variable copy(const Variable& x, ch_device dst) {
  ch_variable* out = nullptr;
  check(ch_functions_copy(&out, x.get(), dst));
  return Variable::adopt(out);
}

// ---- math

/// op(a) op(b) for 2-D operands (a 1-D one is a column vector).
inline Variable matmul(const Variable& a, const Variable& b, bool transa = false,
                       bool transb = false) {
  ch_variable* out = nullptr;
  check(ch_functions_matmul(&out, a.get(), b.get(), transa ? 1 : 0, transb ? 1 : 0));
  return Variable::adopt(out);
}
/// Batched op(a[i]) op(b[i]) for (B, m, k) and (B, k, n) operands.
inline Variable batch_matmul(const Variable& a, const Variable& b, bool transa = false,
                             bool transb = false) {
  ch_variable* out = nullptr;
  check(ch_functions_batch_matmul(&out, a.get(), b.get(), transa ? 1 : 0, transb ? 1 : 0));
  return Variable::adopt(out);
}

// ---- loss and evaluation

/// Mean over the batch of -log softmax(x)[i, t[i]]; t: int32 labels.
inline Variable softmax_cross_entropy(const Variable& x, const Variable& t) {
  return detail::call(ch_functions_softmax_cross_entropy, x, t);
}
/// mean((x0 - x1)^2) over all elements.
inline Variable mean_squared_error(const Variable& x0, const Variable& x1) {
  return detail::call(ch_functions_mean_squared_error, x0, x1);
}
/// Fraction of rows of y whose arg-max is the int32 label.
inline Variable accuracy(const Variable& y, const Variable& t) {
  return detail::call(ch_functions_accuracy, y, t);
}

// ---- noise

/// Dropout with probability `ratio`; train: CH_MODE_TRAIN / CH_MODE_TEST (or true / false), or
/// CH_MODE_DEFAULT for ch::config::train(). In test mode returns x itself.
inline Variable dropout(const Variable& x, double ratio = 0.5, int32_t train = CH_MODE_DEFAULT) {
  ch_variable* out = nullptr;
  check(ch_functions_dropout(&out, x.get(), ratio, train));
  return Variable::adopt(out);
}

// ---- normalization and pooling

inline Variable local_response_normalization(const Variable& x, int32_t n = 5, double k = 2,
                                             double alpha = 1e-4, double beta = 0.75) {
  ch_variable* out = nullptr;
  check(ch_functions_local_response_normalization(&out, x.get(), n, k, alpha, beta));
  return Variable::adopt(out);
}
/// Max pooling of NCHW x; stride 0 means the window size (the seed's stride=None).
inline Variable max_pooling_2d(const Variable& x, Int2 ksize, Int2 stride = 0, Int2 pad = 0,
                               bool cover_all = true) {
  ch_variable* out = nullptr;
  check(ch_functions_max_pooling_2d(&out, x.get(), ksize.h, ksize.w, stride.h, stride.w, pad.h,
                                    pad.w, cover_all ? 1 : 0));
  return Variable::adopt(out);
}
/// Average pooling of NCHW x (padding counts as zeros); stride 0 means the window size.
inline Variable average_pooling_2d(const Variable& x, Int2 ksize, Int2 stride = 0, Int2 pad = 0) {
  ch_variable* out = nullptr;
  check(ch_functions_average_pooling_2d(&out, x.get(), ksize.h, ksize.w, stride.h, stride.w, pad.h,
                                        pad.w));
  return Variable::adopt(out);
}

// ---- parameterized functions (factories of function objects)

/// y = x W^T + b; W (out_size, in_size) ~ N(0, wscale^2 / in_size) unless initialW, b = bias
/// unless initial_bias; nobias drops b. Parameters "W", "b".
inline Function Linear(int64_t in_size, int64_t out_size, double wscale = 1, double bias = 0,
                       bool nobias = false, const Array& initialW = Array(),
                       const Array& initial_bias = Array(), ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_linear_new(&out, in_size, out_size, dtype, wscale, bias, nobias ? 1 : 0,
                                initialW.get(), initial_bias.get()));
  return Function::adopt(out);
}
/// 2-D convolution of NCHW input; ksize, stride, pad: one int or {h, w}.
inline Function Convolution2D(int64_t in_channels, int64_t out_channels, Int2 ksize,
                              Int2 stride = 1, Int2 pad = 0, double wscale = 1, double bias = 0,
                              bool nobias = false, const Array& initialW = Array(),
                              const Array& initial_bias = Array(), ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_convolution_2d_new(&out, in_channels, out_channels, ksize.h, ksize.w, stride.h,
                                        stride.w, pad.h, pad.w, dtype, wscale, bias, nobias ? 1 : 0,
                                        initialW.get(), initial_bias.get()));
  return Function::adopt(out);
}
/// Embedding: W (in_size, out_size) ~ N(0, 1) unless initialW; applied to int32 ids.
inline Function EmbedID(int64_t in_size, int64_t out_size, const Array& initialW = Array(),
                        ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_embed_id_new(&out, in_size, out_size, dtype, initialW.get()));
  return Function::adopt(out);
}
/// Parametric ReLU with slopes W of `shape` (empty: one slope) filled with `init`.
inline Function PReLU(const Shape& shape = {}, double init = 0.25, ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_prelu_new(&out, shape.data(), detail::shape_ndim(shape), dtype, init));
  return Function::adopt(out);
}
/// A function of no inputs that outputs its parameter "W" (a copy of `array`): p().
inline Function Parameter(const Array& array) {
  ch_function* out = nullptr;
  check(ch_functions_parameter_new(&out, array.get()));
  return Function::adopt(out);
}
/// GoogLeNet's inception module (12 parameters).
inline Function Inception(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3,
                          int64_t proj5, int64_t out5, int64_t proj_pool,
                          ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_inception_new(&out, in_channels, out1, proj3, out3, proj5, out5, proj_pool,
                                   dtype));
  return Function::adopt(out);
}
/// Hierarchical softmax over a binary tree given flat (see <ch/functions.h>): tree[2k],
/// tree[2k + 1] are the children of internal node k; a code c < 0 is word -c - 1. Applied
/// to (x, t), it returns the summed loss.
inline Function BinaryHierarchicalSoftmax(int64_t in_size, const std::vector<int32_t>& tree,
                                          const Array& initialW = Array(),
                                          ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_binary_hierarchical_softmax_new(
      &out, in_size, tree.data(), static_cast<int64_t>(tree.size() / 2), dtype, initialW.get()));
  return Function::adopt(out);
}
/// The seed's BinaryHierarchicalSoftmax.create_huffman_tree for words 0..counts.size()-1,
/// in the flat encoding BinaryHierarchicalSoftmax takes.
inline std::vector<int32_t> create_huffman_tree(const std::vector<double>& counts) {
  std::vector<int32_t> tree(counts.empty() ? 0 : 2 * (counts.size() - 1));
  check(ch_functions_binary_hierarchical_softmax_create_huffman_tree(
      tree.data(), static_cast<int64_t>(tree.size()), counts.data(),
      static_cast<int64_t>(counts.size())));
  return tree;
}

/// Batch normalization over the batch axis (and trailing axes) per feature of shape `size`
/// ({C} for NCHW input, {D} for (N, D)). A Function: bn(x) runs in the process default mode;
/// bn(x, train, finetune) in a given one.
class BatchNormalization : public Function {
 public:
  explicit BatchNormalization(const Shape& size, double decay = 0.9, double eps = 1e-5,
                              ch_dtype dtype = CH_FLOAT32)
      : Function(create(size, decay, eps, dtype)) {}
  /// View a function object made by the C API as a BatchNormalization (checked on use).
  explicit BatchNormalization(const Function& bn) : Function(bn) {}

  using Function::operator();
  /// Apply in mode `train` (CH_MODE_TRAIN / CH_MODE_TEST / CH_MODE_DEFAULT, or a bool).
  Variable operator()(const Variable& x, int32_t train, bool finetune = false) const {
    ch_variable* out = nullptr;
    check(ch_functions_batch_normalization_apply(&out, get(), x.get(), train, finetune ? 1 : 0));
    return Variable::adopt(out);
  }
  /// Running mean and variance (shared with the function: writing them changes them).
  Array avg_mean() const { return state().first; }
  Array avg_var() const { return state().second; }
  std::pair<Array, Array> state() const {
    ch_array* mean = nullptr;
    ch_array* var = nullptr;
    ch_status st = ch_functions_batch_normalization_state(&mean, &var, get());
    std::pair<Array, Array> out(Array::adopt(mean), Array::adopt(var));
    check(st);
    return out;
  }
  /// The seed's start_finetuning().
  void start_finetuning() { check(ch_functions_batch_normalization_start_finetuning(get())); }

 private:
  static Function create(const Shape& size, double decay, double eps, ch_dtype dtype) {
    ch_function* out = nullptr;
    check(ch_functions_batch_normalization_new(&out, size.data(), detail::shape_ndim(size), decay,
                                               eps, dtype));
    return Function::adopt(out);
  }
};

}  // namespace F

/// Process-wide settings (<ch/config.h>).
namespace config {
/// Default mode of dropout and batch normalization called with CH_MODE_DEFAULT.
inline void set_train(bool train) noexcept { ch_config_set_train(train ? 1 : 0); }
inline bool train() noexcept { return ch_config_train() != 0; }
/// Threads of the CPU kernels and BLAS (>= 1).
inline void set_num_threads(int32_t n) { check(ch_config_set_num_threads(n)); }
inline int32_t num_threads() noexcept { return ch_config_num_threads(); }
/// Reseed the engine's generator (parameter initialisation, dropout).
inline void seed(uint64_t seed) noexcept { ch_config_seed(seed); }
/// The CPU's GEMM: the candidate libraries, the mode, the choice per shape class.
inline std::string blas() { return ch_config_blas(); }
/// The library of the CPU's matrix products ("openblas", "onednn", "blis",
/// "libxsmm", "onednn-matmul"), or "auto" (the default: the fastest measured per shape class).
inline void set_gemm(const std::string& library) { check(ch_config_set_gemm(library.c_str())); }
inline std::string gemm() { return ch_config_gemm(); }
/// Where the GEMM choices are kept on disk: a directory, "" (not kept), or
/// nullptr (the environment's: $CH_GEMM_CACHE_DIR, else ~/.cache/chainerc/gemm).
inline void set_gemm_cache(const char* directory) { check(ch_config_set_gemm_cache(directory)); }
inline void set_gemm_cache(const std::string& directory) { set_gemm_cache(directory.c_str()); }
/// The directory in use; "" when the choices are not kept on disk.
inline std::string gemm_cache() { return ch_config_gemm_cache(); }
/// One switch for deterministic results (the seed's deterministic mode).
inline void set_deterministic(bool on) noexcept { ch_config_set_deterministic(on ? 1 : 0); }
inline bool deterministic() noexcept { return ch_config_deterministic() != 0; }
/// Whether the CUDA backend may use cuDNN (default true; the seed's use_cudnn).
inline void set_use_cudnn(bool on) noexcept { ch_config_set_use_cudnn(on ? 1 : 0); }
inline bool use_cudnn() noexcept { return ch_config_use_cudnn() != 0; }
/// Whether float32 GEMMs and convolutions on CUDA may use TF32 (default false).
inline void set_allow_tf32(bool on) noexcept { ch_config_set_allow_tf32(on ? 1 : 0); }
inline bool allow_tf32() noexcept { return ch_config_allow_tf32() != 0; }

/// Sets the default mode for its lifetime and restores the previous one:
///   { ch::config::TrainMode test(false); ... evaluate ... }
class TrainMode {
 public:
  explicit TrainMode(bool train) noexcept : saved_(ch::config::train()) { set_train(train); }
  ~TrainMode() { set_train(saved_); }
  TrainMode(const TrainMode&) = delete;
  TrainMode& operator=(const TrainMode&) = delete;

 private:
  bool saved_;
};
}  // namespace config

// ===========================================================================================
// CUDA devices, streams and device memory (<ch/cuda.h>)
// ===========================================================================================

namespace gpu {
/// Number of usable CUDA devices (0 without the backend, a driver or a GPU).
inline int32_t device_count() noexcept { return ch_cuda_device_count(); }
/// Why device_count() is 0 ("" when devices are there).
inline std::string unavailable_reason() { return ch_cuda_unavailable_reason(); }
/// The calling thread's current CUDA device.
inline int32_t current_device() {
  int32_t out = 0;
  check(ch_cuda_current_device(&out));
  return out;
}
/// Wait for all work on device `index`.
inline void synchronize(int32_t index) { check(ch_cuda_synchronize(index)); }
/// Reseed device `index`'s generator (-1: every device) as CH_SEED=seed would.
inline void seed(int32_t index, uint64_t seed) { check(ch_cuda_seed(index, seed)); }

/// Makes a device current on this thread for a scope (the seed's cuda.using_device):
///   { ch::gpu::DeviceScope on(1); ... }
class DeviceScope {
 public:
  explicit DeviceScope(int32_t index) { check(ch_cuda_device_push(index)); }
  ~DeviceScope() { ch_cuda_device_pop(); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
};
}  // namespace gpu

/// A CUDA stream (ch_stream), ordered with the device's default stream. A handle: copies
/// share the stream; the last one waits for its work and destroys it.
class Stream : public detail::Handle<ch_stream, ch_stream_retain, ch_stream_release> {
 public:
  Stream() noexcept = default;
  /// A new stream on CUDA device `device`.
  explicit Stream(ch_device device) {
    ch_stream* out = nullptr;
    check(ch_stream_new(&out, device));
    reset(out);
  }
  /// Wait for the stream's work; drops the arrays its copies kept alive.
  void synchronize() { check(ch_stream_synchronize(get())); }
  ch_device device() const noexcept { return ch_stream_device(get()); }
  /// The cudaStream_t (borrowed).
  void* native() const noexcept { return ch_stream_native(get()); }
};

/// A copy of `a` on `device` queued on `stream` (a CPU result is page-locked); read it
/// only after stream.synchronize().
inline Array to_device_async(const Array& a, ch_device device, Stream& stream) {
  ch_array* out = nullptr;
  check(ch_array_to_device_async(&out, a.get(), device, stream.get()));
  return Array::adopt(out);
}
/// Copy `src` into `dst` on `stream`.
inline void copy_async(Array& dst, const Array& src, Stream& stream) {
  check(ch_array_copy_from_async(dst.get(), src.get(), stream.get()));
}

namespace memory {
/// Statistics of `device`'s caching allocator.
inline ch_memory_stats stats(ch_device device) {
  ch_memory_stats out{};
  check(ch_memory_stats_get(&out, device));
  return out;
}
/// Return `device`'s cached blocks.
inline void empty_cache(ch_device device) { check(ch_memory_empty_cache(device)); }
/// Cap the bytes a CUDA device's allocator holds (0 = none).
inline void set_limit(ch_device device, size_t bytes) { check(ch_memory_set_limit(device, bytes)); }
inline size_t limit(ch_device device) {
  size_t out = 0;
  check(ch_memory_limit(&out, device));
  return out;
}
/// The process-wide out-of-memory hook (see ch_memory_set_oom_hook); nullptr removes it.
inline void set_oom_hook(ch_oom_hook hook, void* user_data) noexcept {
  ch_memory_set_oom_hook(hook, user_data);
}
}  // namespace memory
// User kernels from source strings
// ===========================================================================================

namespace detail {
// Run a kernel call on output slots (invalid entries = allocate) and collect every output:
// given ones shared, allocated ones adopted.
template <class F>
std::vector<Array> call_with_outputs(size_t n_out, const std::vector<Array>& given, F&& call) {
  if (!given.empty() && given.size() != n_out)
    fail(CH_ERR_INVALID_ARGUMENT, "kernel call: " + std::to_string(given.size()) +
                                      " output slots given for " + std::to_string(n_out) +
                                      " outputs");
  std::vector<ch_array*> slots(n_out, nullptr);
  for (size_t j = 0; j < given.size(); ++j) slots[j] = given[j].get();
  check(call(slots.data(), slots.size()));
  std::vector<Array> out;
  out.reserve(n_out);
  for (size_t j = 0; j < n_out; ++j)
    out.push_back(j < given.size() && given[j] ? given[j] : Array::adopt(slots[j]));
  return out;
}
}  // namespace detail

/// A user elementwise kernel (ch_elementwise_kernel; the seed's cuda.elementwise), e.g.
/// `ElementwiseKernel("T x, T y, T z", "T w", "w = x * y + z", "muladd")`. Runs on the
/// arguments' device; see <ch/kernel.h> for the parameter syntax and the caches. A handle:
/// copies refer to the same kernel; calls are thread-safe.
class ElementwiseKernel : public detail::Handle<ch_elementwise_kernel, ch_elementwise_kernel_retain,
                                                ch_elementwise_kernel_release> {
 public:
  ElementwiseKernel() noexcept = default;
  ElementwiseKernel(const std::string& in_params, const std::string& out_params,
                    const std::string& operation, const std::string& name = "kernel") {
    ch_elementwise_kernel* out = nullptr;
    check(ch_elementwise_kernel_new(&out, in_params.c_str(), out_params.c_str(), operation.c_str(),
                                    name.c_str()));
    reset(out);
  }
  /// Run with every output allocated; returns the outputs in order.
  std::vector<Array> operator()(const std::vector<Array>& inputs) const { return call(inputs, {}); }
  /// Run writing into `outputs` (one per output parameter; invalid entries are allocated, an
  /// empty vector allocates all); returns every output.
  std::vector<Array> call(const std::vector<Array>& inputs,
                          const std::vector<Array>& outputs) const {
    std::vector<ch_array*> xs = detail::handles_of(inputs);
    return detail::call_with_outputs(outputs.empty() ? output_count() : outputs.size(), outputs,
                                     [&](ch_array** slots, size_t n) {
                                       return ch_elementwise_kernel_call(get(), xs.data(),
                                                                         xs.size(), slots, n);
                                     });
  }
  /// Number of output parameters (the size of what the call operators return).
  size_t output_count() const noexcept { return ch_elementwise_kernel_output_count(get()); }
};

/// A user reduction kernel (ch_reduction_kernel; the seed's cuda.reduce, CuPy's
/// ReductionKernel), e.g. sum of squares:
/// `ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "sum_sq")`.
class ReductionKernel : public detail::Handle<ch_reduction_kernel, ch_reduction_kernel_retain,
                                              ch_reduction_kernel_release> {
 public:
  ReductionKernel() noexcept = default;
  ReductionKernel(const std::string& in_params, const std::string& out_params,
                  const std::string& map_expr, const std::string& reduce_expr,
                  const std::string& post_map_expr, const std::string& identity,
                  const std::string& name = "reduce_kernel", const std::string& reduce_type = "") {
    ch_reduction_kernel* out = nullptr;
    check(ch_reduction_kernel_new(&out, in_params.c_str(), out_params.c_str(), map_expr.c_str(),
                                  reduce_expr.c_str(), post_map_expr.c_str(), identity.c_str(),
                                  name.c_str(), reduce_type.c_str()));
    reset(out);
  }
  /// Reduce over every axis; returns the outputs.
  std::vector<Array> operator()(const std::vector<Array>& inputs) const {
    return run(inputs, nullptr, CH_REDUCE_ALL_AXES, false, {});
  }
  /// Reduce over `axes` (negative ones count from the end); outputs as in
  /// ElementwiseKernel::call.
  std::vector<Array> call(const std::vector<Array>& inputs, const std::vector<int32_t>& axes,
                          bool keepdims = false, const std::vector<Array>& outputs = {}) const {
    return run(inputs, axes.data(), static_cast<int32_t>(axes.size()), keepdims, outputs);
  }
  /// Number of output parameters (the size of what the call operators return).
  size_t output_count() const noexcept { return ch_reduction_kernel_output_count(get()); }

 private:
  std::vector<Array> run(const std::vector<Array>& inputs, const int32_t* axes, int32_t n_axes,
                         bool keepdims, const std::vector<Array>& outputs) const {
    std::vector<ch_array*> xs = detail::handles_of(inputs);
    return detail::call_with_outputs(outputs.empty() ? output_count() : outputs.size(), outputs,
                                     [&](ch_array** slots, size_t n) {
                                       return ch_reduction_kernel_call(get(), xs.data(), xs.size(),
                                                                       slots, n, axes, n_axes,
                                                                       keepdims ? 1 : 0);
                                     });
  }
};

// ===========================================================================================
// Debugging
// ===========================================================================================

namespace debug {
/// Live handles of every kind, and per kind (for leak checks).
inline int64_t live_handles() noexcept { return ch_debug_live_handles(); }
inline int64_t live_arrays() noexcept { return ch_debug_live_arrays(); }
inline int64_t live_variables() noexcept { return ch_debug_live_variables(); }
inline int64_t live_functions() noexcept { return ch_debug_live_functions(); }
/// Print every live handle to stderr.
inline void report_live_handles() noexcept { ch_debug_report_live_handles(); }
}  // namespace debug

}  // namespace ch

#include <ch/cuda_graph.hpp>  // ch::CudaGraph

#endif  // CH_CH_HPP
