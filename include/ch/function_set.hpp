// chainerc's C++ API: ch::FunctionSet (over <ch/function_set.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_FUNCTION_SET_HPP
#define CH_FUNCTION_SET_HPP

#include <ch/variable.hpp>

namespace ch {
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

}  // namespace ch

#endif  // CH_FUNCTION_SET_HPP
