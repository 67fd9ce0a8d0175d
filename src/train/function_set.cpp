#include "function_set.h"

#include <cstring>

#include "core/device_backend.h"
#include "core/error.h"

namespace chainerc {

void FunctionSet::add(const std::string& name, SetMember member, const char* who) {
  if (name.empty()) fail(CH_ERR_INVALID_ARGUMENT, who, ": the member name is empty");
  if (name.find('/') != std::string::npos)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": the member name '", name,
         "' contains '/', which separates the parts of parameter paths");
  if (member.set && member.set->contains(this))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": adding the set as member '", name,
         "' would make a cycle (it is this set or contains it)");
  std::lock_guard<std::mutex> lock(mutex_);
  members_[name] = std::move(member);
}

void FunctionSet::remove(const std::string& name, const char* who) {
  SetMember doomed;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = members_.find(name);
  if (it == members_.end())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": the set has no member '", name, "'");
  doomed = std::move(it->second);
  members_.erase(it);
}

std::vector<std::pair<std::string, SetMember>> FunctionSet::members() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {members_.begin(), members_.end()};
}

SetMember FunctionSet::member(const std::string& name, const char* who) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = members_.find(name);
  if (it == members_.end()) {
    std::string known;
    for (const auto& m : members_) known += (known.empty() ? "" : ", ") + m.first;
    fail(CH_ERR_INVALID_ARGUMENT, who, ": the set has no member '", name,
         "' (members: ", known.empty() ? "none" : known, ")");
  }
  return it->second;
}

void FunctionSet::collect(const std::string& prefix, std::vector<NamedParameter>& out) const {
  for (const auto& [name, m] : members()) {
    std::string path = prefix + name;
    if (m.set) {
      m.set->collect(path + "/", out);
    } else if (m.function && m.function->parameters) {
      for (const Parameter& p : *m.function->parameters)
        out.push_back(NamedParameter{path + "/" + p.name, p.param, p.grad});
    }
  }
}

std::vector<NamedParameter> FunctionSet::parameters() const {
  std::vector<NamedParameter> out;
  collect("", out);
  return out;
}

void FunctionSet::collect_functions(std::vector<Function*>& out) const {
  for (const auto& [name, m] : members()) {
    if (m.set)
      m.set->collect_functions(out);
    else if (m.function && m.function->parameters)
      out.push_back(m.function.get());
  }
}

void FunctionSet::move_parameters(Device device) {
  std::vector<Function*> functions;
  collect_functions(functions);
  // A function object (or a parameter list) reached twice moves once.
  std::set<Parameters*> seen;
  std::vector<Parameter*> targets;
  for (Function* f : functions)
    if (seen.insert(f->parameters.get()).second)
      for (Parameter& p : *f->parameters) targets.push_back(&p);
  std::vector<std::pair<Array, Array>> moved;
  moved.reserve(targets.size());
  for (const Parameter* p : targets)
    moved.emplace_back(p->param.device() == device ? p->param : p->param.to_device(device),
                       p->grad.device() == device ? p->grad : p->grad.to_device(device));
  for (size_t i = 0; i < targets.size(); ++i) {
    targets[i]->param = std::move(moved[i].first);
    targets[i]->grad = std::move(moved[i].second);
  }
}

bool FunctionSet::contains(const FunctionSet* s) const {
  if (s == this) return true;
  for (const auto& [name, m] : members())
    if (m.set && m.set->contains(s)) return true;
  return false;
}

const char* FunctionSet::intern(const std::string& s) const {
  std::lock_guard<std::mutex> lock(intern_mutex_);
  return interned_.insert(s).first->c_str();
}

void copy_parameters(const std::vector<NamedParameter>& dst, const std::vector<Array>& src,
                     const std::vector<std::string>& src_paths, const char* who) {
  if (dst.size() != src.size())
    fail(CH_ERR_SHAPE, who, ": the set has ", dst.size(), " parameters but the source has ",
         src.size());
  auto source_name = [&](size_t i) {
    return i < src_paths.size() ? "source '" + src_paths[i] + "'"
                                : "source array " + std::to_string(i);
  };
  for (size_t i = 0; i < dst.size(); ++i) {
    const Array& d = dst[i].param;
    const Array& s = src[i];
    if (!s.defined()) fail(CH_ERR_INVALID_ARGUMENT, who, ": ", source_name(i), " is undefined");
    if (d.dtype() != s.dtype())
      fail(CH_ERR_DTYPE, who, ": parameter '", dst[i].path, "' is a ", d.describe(), " but ",
           source_name(i), " is a ", s.describe());
    if (d.shape() != s.shape())
      fail(CH_ERR_SHAPE, who, ": parameter '", dst[i].path, "' has shape ", d.shape().to_string(),
           " but ", source_name(i), " has shape ", s.shape().to_string());
  }
  // Across devices through the devices' backends (the seed's copy_parameters_from
  // of a GPU model into a CPU one, or between GPUs); overlap only on the CPU.
  for (size_t i = 0; i < dst.size(); ++i) {
    const Array& d = dst[i].param;
    const Array& s = src[i];
    if (d.raw() == s.raw() || d.nbytes() == 0) continue;
    d.buffer()->before_write();
    if (d.device().is_cpu() && s.device().is_cpu())
      std::memmove(d.raw(), s.raw(), d.nbytes());
    else
      copy_bytes(d.raw(), d.device(), s.raw(), s.device(), d.nbytes());
  }
}

}  // namespace chainerc
