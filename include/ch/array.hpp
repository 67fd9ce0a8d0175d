// chainerc's C++ API: dtypes, devices and ch::Array (over <ch/array.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_ARRAY_HPP
#define CH_ARRAY_HPP

#include <ch/common.hpp>

namespace ch {
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

namespace detail {
inline std::vector<ch_array*> handles_of(const std::vector<Array>& arrays) {
  std::vector<ch_array*> v;
  v.reserve(arrays.size());
  for (const Array& a : arrays) v.push_back(a.get());
  return v;
}
}  // namespace detail

}  // namespace ch

#endif  // CH_ARRAY_HPP
