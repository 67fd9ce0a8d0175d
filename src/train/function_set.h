// FunctionSet: named, nested collections of parameterized function objects
// (the seed's FunctionSet), behind ch_function_set.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/variable.h"

namespace chainerc {

class FunctionSet;
using FunctionSetPtr = std::shared_ptr<FunctionSet>;

// One member: exactly one of `function` and `set` is set.
struct SetMember {
  FuncPtr function;
  FunctionSetPtr set;
};

// A parameter as seen from a set: its path ("l1/W") and the shared arrays.
struct NamedParameter {
  std::string path;
  Array param, grad;
};

class FunctionSet {
 public:
  // Adds or replaces `name`. Error for a bad name or a cycle.
  void add(const std::string& name, SetMember member, const char* who);
  void remove(const std::string& name, const char* who);
  // Sorted snapshot of the direct members.
  std::vector<std::pair<std::string, SetMember>> members() const;
  SetMember member(const std::string& name, const char* who) const;
  // Every parameter, members sorted by name, nested sets recursively.
  std::vector<NamedParameter> parameters() const;
  // Moves every parameter and gradient (members sorted by name, nested sets
  // recursively) to `device` (the seed's to_gpu / to_cpu): all copies are
  // made first, then the function objects' arrays are replaced, so nothing
  // changes on error. Arrays already there are kept. A BatchNormalization's
  // running averages follow its parameters at its next application.
  void move_parameters(Device device);
  // True if `s` is this set or is contained in it at any depth.
  bool contains(const FunctionSet* s) const;
  // A copy of `s` that lives as long as this set (for borrowed strings).
  const char* intern(const std::string& s) const;

 private:
  void collect(const std::string& prefix, std::vector<NamedParameter>& out) const;
  void collect_functions(std::vector<Function*>& out) const;

  mutable std::mutex mutex_;
  std::map<std::string, SetMember> members_;
  mutable std::mutex intern_mutex_;
  mutable std::set<std::string> interned_;
};

// Copy parameter values position by position after checking every shape and
// dtype (Error naming the path and both arrays; nothing copied on error).
void copy_parameters(const std::vector<NamedParameter>& dst, const std::vector<Array>& src,
                     const std::vector<std::string>& src_paths, const char* who);

}  // namespace chainerc
