#include "user_kernel.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <sstream>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/parallel.h"
#include "codegen.h"
#include "core/error.h"
#include "cpu_jit.h"
#include "gpu.h"

namespace chainerc::kernels {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

bool dtype_from_name(const std::string& t, DType* out) {
  if (t == "float32" || t == "float")
    *out = DType::Float32;
  else if (t == "float64" || t == "double")
    *out = DType::Float64;
  else if (t == "int32" || t == "int")
    *out = DType::Int32;
  else
    return false;
  return true;
}

bool is_placeholder(const std::string& t) { return t.size() == 1 && t[0] >= 'A' && t[0] <= 'Z'; }

// Names a kernel may not take: on CUDA the kernel is an extern "C" function
// of that name beside CUDA's math functions and the prelude's, so `exp` would
// fail there only; refused on every device at creation.
bool is_reserved_name(const std::string& n) {
  static const std::set<std::string> reserved = {
      // C99 math and the prelude (both devices), float versions included
      "exp", "log", "log10", "log1p", "expm1", "exp2", "log2", "sqrt", "cbrt", "pow", "fabs", "sin",
      "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
      "atanh", "floor", "ceil", "round", "trunc", "fmod", "fmax", "fmin", "erf", "erfc", "hypot",
      "copysign", "abs", "labs", "llabs", "min", "max", "isnan", "isinf", "isfinite", "signbit",
      "fma", "fdim", "ldexp", "frexp", "modf", "nearbyint", "rint", "lrint", "llrint", "lround",
      "llround", "remainder", "remquo", "nextafter", "scalbn", "scalbln", "logb", "ilogb", "lgamma",
      "tgamma", "nan",
      // CUDA's own math functions
      "rsqrt", "rcbrt", "exp10", "sincos", "sinpi", "cospi", "sincospi", "normcdf", "normcdfinv",
      "erfinv", "erfcinv", "erfcx", "rhypot", "norm3d", "rnorm3d", "norm4d", "rnorm4d", "norm",
      "rnorm", "cyl_bessel_i0", "cyl_bessel_i1", "j0", "j1", "jn", "y0", "y1", "yn", "saturate",
      "umin", "umax", "llmin", "llmax", "ullmin", "ullmax",
      // C library functions a kernel may call, and the generated code's own names
      "printf", "malloc", "free", "memcpy", "memset", "memmove", "assert", "ch_kernel",
      "ch_offset_", "ch_args", "ch_max_", "ch_min_"};
  if (reserved.count(n)) return true;
  // The float versions: expf, sqrtf, ...
  return n.size() > 1 && n.back() == 'f' && reserved.count(n.substr(0, n.size() - 1)) > 0;
}

void check_name(const std::string& name, const char* who) {
  if (!is_identifier(name) || name[0] == '_')
    fail(CH_ERR_INVALID_ARGUMENT, who, ": kernel name '", name,
         "' is not a C identifier (letters, digits and '_', not starting with a digit or '_')");
  if (is_reserved_name(name))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": kernel name '", name,
         "' is the name of a math or library function the kernel code can call (on CUDA the "
         "kernel would take its place); choose another name, e.g. '",
         name, "_kernel'");
}

void check_unique(const std::vector<Param>& in, const std::vector<Param>& out, const char* who) {
  std::set<std::string> seen;
  for (const auto* list : {&in, &out})
    for (const Param& p : *list)
      if (!seen.insert(p.name).second)
        fail(CH_ERR_INVALID_ARGUMENT, who, ": parameter name '", p.name,
             "' appears more than once");
}

std::string names_of(const std::vector<Param>& ps) {
  std::string s;
  for (const Param& p : ps) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

// The type a param has for this call.
DType dtype_of(const Param& p, const TypeMap& types) {
  return p.placeholder ? types.at(p.type) : p.dtype;
}

// Resolve placeholders from the arrays bound to them (inputs, then given outputs)
// and check declared dtypes; every placeholder must end up resolved.
TypeMap resolve_types(const std::vector<Param>& in, const std::vector<Array>& inputs,
                      const std::vector<Param>& out, const std::vector<Array>& outputs,
                      const std::string& kname, const std::vector<std::string>& extra = {}) {
  TypeMap types;
  std::map<std::string, std::string> bound_by;
  auto bind = [&](const Param& p, const Array& a, const char* role) {
    if (!a.defined()) return;
    if (!p.placeholder) {
      if (a.dtype() != p.dtype)
        fail(CH_ERR_DTYPE, "kernel '", kname, "': ", role, " '", p.name, "' is declared ", p.type,
             " but the array is ", dtype_name(a.dtype()));
      return;
    }
    auto it = types.find(p.type);
    if (it == types.end()) {
      types[p.type] = a.dtype();
      bound_by[p.type] = p.name;
    } else if (it->second != a.dtype()) {
      fail(CH_ERR_DTYPE, "kernel '", kname, "': ", role, " '", p.name, "' is ",
           dtype_name(a.dtype()), " but '", bound_by[p.type], "' made type placeholder ", p.type,
           " ", dtype_name(it->second));
    }
  };
  for (size_t j = 0; j < in.size(); ++j) bind(in[j], inputs[j], "input");
  for (size_t j = 0; j < out.size(); ++j) bind(out[j], outputs[j], "output");
  for (const Param& p : out)
    if (p.placeholder && !types.count(p.type))
      fail(CH_ERR_INVALID_ARGUMENT, "kernel '", kname, "': type placeholder ", p.type,
           " of output '", p.name,
           "' cannot be resolved: no input uses it and the output array was not given");
  for (const std::string& t : extra)
    if (is_placeholder(t) && !types.count(t))
      fail(CH_ERR_INVALID_ARGUMENT, "kernel '", kname, "': type placeholder ", t,
           " of reduce_type cannot be resolved from the arguments");
  return types;
}

Device common_device(const std::vector<Array>& inputs, const std::vector<Array>& outputs,
                     const std::vector<Param>& in, const std::vector<Param>& out,
                     const std::string& kname) {
  const Array* first = nullptr;
  const Param* first_p = nullptr;
  auto visit = [&](const Array& a, const Param& p) {
    if (!a.defined()) return;
    if (!first) {
      first = &a;
      first_p = &p;
    } else if (a.device() != first->device()) {
      fail(CH_ERR_DEVICE, "kernel '", kname, "': '", p.name, "' is on ", a.device().to_string(),
           " but '", first_p->name, "' is on ", first->device().to_string());
    }
  };
  for (size_t j = 0; j < in.size(); ++j) visit(inputs[j], in[j]);
  for (size_t j = 0; j < out.size(); ++j) visit(outputs[j], out[j]);
  return first ? first->device() : Device{};
}

void check_counts(const std::vector<Array>& inputs, std::vector<Array>& outputs,
                  const std::vector<Param>& in, const std::vector<Param>& out,
                  const std::string& kname) {
  if (inputs.size() != in.size())
    fail(CH_ERR_INVALID_ARGUMENT, "kernel '", kname, "' takes ", in.size(), " input(s) (",
         names_of(in), "), got ", inputs.size());
  if (outputs.empty()) outputs.resize(out.size());
  if (outputs.size() != out.size())
    fail(CH_ERR_INVALID_ARGUMENT, "kernel '", kname, "' has ", out.size(), " output(s) (",
         names_of(out), "), got ", outputs.size());
  for (size_t j = 0; j < in.size(); ++j)
    if (!inputs[j].defined())
      fail(CH_ERR_INVALID_ARGUMENT, "kernel '", kname, "': input '", in[j].name, "' is missing");
}

std::string memo_key(char target, const TypeMap& types, const std::string& modes, DType extra) {
  std::string k(1, target);
  for (const auto& [l, d] : types) k += l + std::to_string(static_cast<int>(d));
  return k + "|" + std::to_string(static_cast<int>(extra)) + "|" + modes;
}

// The ch_args block of the CUDA kernels: the pointers, then the info padded.
std::vector<unsigned char> cuda_args(const std::vector<void*>& ptrs,
                                     const std::vector<long long>& info, int n_params,
                                     const std::string& kname) {
  const int max_info = kMaxInfo(n_params);
  if (static_cast<int>(info.size()) > max_info)
    fail(CH_ERR_INTERNAL, "kernel '", kname, "': index block of ", info.size(), " exceeds ",
         max_info);
  const size_t np = static_cast<size_t>(n_params > 0 ? n_params : 1);
  std::vector<unsigned char> block(
      np * sizeof(void*) + static_cast<size_t>(max_info) * sizeof(long long), 0);
  std::memcpy(block.data(), ptrs.data(), ptrs.size() * sizeof(void*));
  std::memcpy(block.data() + np * sizeof(void*), info.data(), info.size() * sizeof(long long));
  return block;
}

}  // namespace

const char* c_type(DType d) {
  switch (d) {
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
    case DType::Int32:
      return "int";
  }
  return "float";
}

std::vector<Param> parse_params(const std::string& text, const char* what, const char* who) {
  std::vector<Param> params;
  if (trim(text).empty()) return params;
  std::stringstream ss(text);
  std::string entry;
  while (std::getline(ss, entry, ',')) {
    std::istringstream ws(entry);
    std::vector<std::string> tok;
    for (std::string t; ws >> t;) tok.push_back(t);
    Param p;
    if (!tok.empty() && tok[0] == "raw") {
      p.raw = true;
      tok.erase(tok.begin());
    }
    if (tok.size() != 2)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": ", what, " entry '", trim(entry),
           "' is not of the form '[raw] type name' (e.g. 'float32 x' or 'T x')");
    p.type = tok[0];
    p.name = tok[1];
    if (is_placeholder(p.type)) {
      p.placeholder = true;
    } else if (!dtype_from_name(p.type, &p.dtype)) {
      fail(CH_ERR_INVALID_ARGUMENT, who, ": ", what, " entry '", trim(entry),
           "' has unknown type '", p.type,
           "' (expected float32, float64, int32, float, double, int, or one capital letter as a "
           "type placeholder)");
    }
    if (!is_identifier(p.name) || p.name[0] == '_' || p.name == "i")
      fail(CH_ERR_INVALID_ARGUMENT, who, ": ", what, " entry '", trim(entry),
           "' has invalid name '", p.name,
           "' (a C identifier not starting with '_', and not 'i', the element index)");
    params.push_back(p);
  }
  return params;
}

namespace {

// The parameter lists of a kernel named `name`: parsed, at least one output,
// no raw output, no name used twice.
void parse_signature(const std::string& in_params, const std::string& out_params,
                     const std::string& name, const char* who, std::vector<Param>& in,
                     std::vector<Param>& out) {
  check_name(name, who);
  in = parse_params(in_params, "in_params", who);
  out = parse_params(out_params, "out_params", who);
  if (out.empty())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": kernel '", name, "' has no output parameter");
  for (const Param& p : out)
    if (p.raw)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": output '", p.name,
           "' is raw; raw is supported for inputs only");
  check_unique(in, out, who);
}

}  // namespace

// ---- elementwise --------------------------------------------------------------

ElementwiseKernel::ElementwiseKernel(const std::string& in_params, const std::string& out_params,
                                     const std::string& operation, const std::string& name)
    : operation_(operation), name_(name) {
  const char* who = "ch_elementwise_kernel_new";
  parse_signature(in_params, out_params, name, who, in_, out_);
}

std::vector<Array> ElementwiseKernel::call(const std::vector<Array>& inputs,
                                           std::vector<Array> outputs) const {
  check_counts(inputs, outputs, in_, out_, name_);
  const Device device = common_device(inputs, outputs, in_, out_, name_);
  const TypeMap types = resolve_types(in_, inputs, out_, outputs, name_);

  // The iteration shape: the broadcast of the non-raw inputs (or the given outputs).
  bool have = false;
  Shape shape;
  std::string shape_from;
  for (size_t j = 0; j < in_.size(); ++j) {
    if (in_[j].raw) continue;
    if (!have) {
      shape = inputs[j].shape();
      have = true;
    } else {
      shape = broadcast_shapes(shape, inputs[j].shape(), ("kernel '" + name_ + "'").c_str());
    }
  }
  for (size_t j = 0; j < out_.size(); ++j) {
    if (!outputs[j].defined()) continue;
    if (!have) {
      shape = outputs[j].shape();
      have = true;
    } else if (outputs[j].shape() != shape) {
      fail(CH_ERR_SHAPE, "kernel '", name_, "': output '", out_[j].name, "' has shape ",
           outputs[j].shape().to_string(), " but the inputs broadcast to ", shape.to_string());
    }
  }
  if (!have)
    fail(CH_ERR_INVALID_ARGUMENT, "kernel '", name_,
         "': the iteration size is unknown: no non-raw input and no output array given");
  for (size_t j = 0; j < out_.size(); ++j)
    if (!outputs[j].defined()) outputs[j] = Array::empty(dtype_of(out_[j], types), shape, device);

  const int64_t n = shape.size();
  std::string modes;
  std::vector<long long> info{shape.ndim()};
  for (int32_t d = 0; d < shape.ndim(); ++d) info.push_back(shape[d]);
  for (size_t j = 0; j < in_.size(); ++j) {
    const Array& a = inputs[j];
    if (in_[j].raw) {
      modes += 'R';
    } else if (a.shape() == shape) {
      modes += 'C';
    } else if (a.size() == 1) {
      modes += 'S';
    } else {
      modes += 'G';
      int64_t st[CH_MAX_NDIM];
      cpu::broadcast_strides(a.shape(), shape, st);
      for (int32_t d = 0; d < shape.ndim(); ++d) info.push_back(st[d]);
    }
  }
  modes += std::string(out_.size(), 'C');
  std::vector<void*> ptrs;
  for (const Array& a : inputs) ptrs.push_back(a.raw());
  for (const Array& a : outputs) ptrs.push_back(a.raw());

  if (device.is_cpu()) {
    const auto& e = memo_.get(memo_key('c', types, modes, DType::Float32), [&] {
      SpecializationMemo::Entry m;
      m.source = elementwise_source(*this, types, modes, Target::C);
      m.cpu_fn = reinterpret_cast<void*>(cpu_jit::compile(m.source, name_));
      return m;
    });
    auto fn = reinterpret_cast<cpu_jit::KernelFn>(e.cpu_fn);
    if (n == 0) return outputs;
    void* const* p = ptrs.data();
    const long long* inf = info.data();
    cpu::parallel_for(n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) { fn(b, e, p, inf); });
    return outputs;
  }
  if (device.type != CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, "kernel '", name_, "': unsupported device ", device.to_string());
  const int n_params = static_cast<int>(in_.size() + out_.size());
  const std::string src =
      memo_
          .get(memo_key('g', types, modes, DType::Float32),
               [&] {
                 return SpecializationMemo::Entry{
                     elementwise_source(*this, types, modes, Target::Cuda), nullptr};
               })
          .source;
  if (n == 0) return outputs;
  const auto block = cuda_args(ptrs, info, n_params, name_);
  const long long threads = 256;
  long long grid = (n + threads - 1) / threads;
  grid = std::min<long long>(grid, 32LL * gpu::multiprocessor_count(device.index));
  // On the device's default (legacy) stream, where chainerc's own kernels run:
  // ordered with them, and with ch_stream_new's streams, which wait for it.
  gpu::launch(device.index, src, name_, n, block.data(), block.size(), static_cast<unsigned>(grid),
              static_cast<unsigned>(threads), nullptr);
  return outputs;
}

// ---- reduction -----------------------------------------------------------------

ReductionKernel::ReductionKernel(const std::string& in_params, const std::string& out_params,
                                 const std::string& map_expr, const std::string& reduce_expr,
                                 const std::string& post_map_expr, const std::string& identity,
                                 const std::string& name, const std::string& reduce_type)
    : map_expr_(map_expr),
      reduce_expr_(reduce_expr),
      post_map_expr_(post_map_expr),
      identity_(trim(identity)),
      name_(name),
      reduce_type_(trim(reduce_type)) {
  const char* who = "ch_reduction_kernel_new";
  parse_signature(in_params, out_params, name, who, in_, out_);
  if (trim(map_expr).empty())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": kernel '", name, "': map_expr is empty");
  if (trim(reduce_expr).empty())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": kernel '", name, "': reduce_expr is empty");
  if (trim(post_map_expr_).empty()) {
    if (out_.size() != 1)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": kernel '", name,
           "': post_map_expr is empty and there are ", out_.size(), " outputs");
    post_map_expr_ = out_[0].name + " = a";
  }
  DType d;
  if (!reduce_type_.empty() && !is_placeholder(reduce_type_) && !dtype_from_name(reduce_type_, &d))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": kernel '", name, "': unknown reduce_type '", reduce_type_,
         "'");
}

std::vector<Array> ReductionKernel::call(const std::vector<Array>& inputs,
                                         std::vector<Array> outputs,
                                         const std::vector<int32_t>& axes, bool all_axes,
                                         bool keepdims) const {
  check_counts(inputs, outputs, in_, out_, name_);
  const Device device = common_device(inputs, outputs, in_, out_, name_);
  std::vector<std::string> extra;
  if (!reduce_type_.empty()) extra.push_back(reduce_type_);
  const TypeMap types = resolve_types(in_, inputs, out_, outputs, name_, extra);
  DType rtype;
  if (reduce_type_.empty())
    rtype = dtype_of(out_[0], types);
  else if (is_placeholder(reduce_type_))
    rtype = types.at(reduce_type_);
  else
    dtype_from_name(reduce_type_, &rtype);

  bool have = false;
  Shape shape;
  const std::string who = "kernel '" + name_ + "'";
  for (size_t j = 0; j < in_.size(); ++j) {
    if (in_[j].raw) continue;
    shape = have ? broadcast_shapes(shape, inputs[j].shape(), who.c_str()) : inputs[j].shape();
    have = true;
  }
  if (!have) fail(CH_ERR_INVALID_ARGUMENT, who, ": a reduction needs at least one non-raw input");
  const int32_t nd = shape.ndim();
  bool reduced[CH_MAX_NDIM] = {};
  if (all_axes) {
    for (int32_t d = 0; d < nd; ++d) reduced[d] = true;
  } else {
    for (int32_t ax : axes) {
      int32_t a = normalize_axis(ax, nd, who.c_str());
      if (reduced[a]) fail(CH_ERR_INVALID_ARGUMENT, who, ": axis ", ax, " is given twice");
      reduced[a] = true;
    }
  }
  Shape kshape, rshape, oshape;
  for (int32_t d = 0; d < nd; ++d) {
    if (reduced[d]) {
      rshape.push_back(shape[d]);
      if (keepdims) oshape.push_back(1);
    } else {
      kshape.push_back(shape[d]);
      oshape.push_back(shape[d]);
    }
  }
  const int64_t out_n = kshape.size(), red_n = rshape.size();
  if (red_n == 0 && identity_.empty() && out_n > 0)
    fail(CH_ERR_SHAPE, who, ": reduction of input shape ", shape.to_string(),
         " over zero elements and the kernel has no identity");
  for (size_t j = 0; j < out_.size(); ++j) {
    if (!outputs[j].defined())
      outputs[j] = Array::empty(dtype_of(out_[j], types), oshape, device);
    else if (outputs[j].shape() != oshape)
      fail(CH_ERR_SHAPE, who, ": output '", out_[j].name, "' has shape ",
           outputs[j].shape().to_string(), " but the reduction of ", shape.to_string(), " gives ",
           oshape.to_string());
  }

  std::vector<long long> info{kshape.ndim()};
  for (int32_t d = 0; d < kshape.ndim(); ++d) info.push_back(kshape[d]);
  info.push_back(rshape.ndim());
  for (int32_t d = 0; d < rshape.ndim(); ++d) info.push_back(rshape[d]);
  info.push_back(red_n);
  std::string modes;
  for (size_t j = 0; j < in_.size(); ++j) {
    if (in_[j].raw) {
      modes += 'R';
      continue;
    }
    int64_t st[CH_MAX_NDIM];
    cpu::broadcast_strides(inputs[j].shape(), shape, st);
    std::vector<long long> ks, rs;
    for (int32_t d = 0; d < nd; ++d) (reduced[d] ? rs : ks).push_back(st[d]);
    bool dense = true;
    for (size_t d = 0; d + 1 < rs.size(); ++d)
      if (rs[d] != rs[d + 1] * rshape[static_cast<int32_t>(d + 1)]) dense = false;
    modes += dense ? 'L' : 'G';
    info.insert(info.end(), ks.begin(), ks.end());
    info.insert(info.end(), rs.begin(), rs.end());
  }
  modes += std::string(out_.size(), 'C');
  std::vector<void*> ptrs;
  for (const Array& a : inputs) ptrs.push_back(a.raw());
  for (const Array& a : outputs) ptrs.push_back(a.raw());

  if (device.is_cpu()) {
    const auto& e = memo_.get(memo_key('c', types, modes, rtype), [&] {
      SpecializationMemo::Entry m;
      m.source = reduction_source(*this, types, rtype, modes, Target::C);
      m.cpu_fn = reinterpret_cast<void*>(cpu_jit::compile(m.source, name_));
      return m;
    });
    auto fn = reinterpret_cast<cpu_jit::KernelFn>(e.cpu_fn);
    if (out_n == 0) return outputs;
    void* const* p = ptrs.data();
    const long long* inf = info.data();
    const int64_t grain =
        std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, red_n));
    cpu::parallel_for(out_n, grain, [&](int64_t b, int64_t e) { fn(b, e, p, inf); });
    return outputs;
  }
  if (device.type != CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, who, ": unsupported device ", device.to_string());
  const int n_params = static_cast<int>(in_.size() + out_.size());
  const std::string src =
      memo_
          .get(memo_key('g', types, modes, rtype),
               [&] {
                 return SpecializationMemo::Entry{
                     reduction_source(*this, types, rtype, modes, Target::Cuda), nullptr};
               })
          .source;
  if (out_n == 0) return outputs;
  const auto block = cuda_args(ptrs, info, n_params, name_);
  long long grid = std::min<long long>(out_n, 32LL * gpu::multiprocessor_count(device.index));
  gpu::launch(device.index, src, name_, out_n, block.data(), block.size(),
              static_cast<unsigned>(grid), static_cast<unsigned>(kReduceBlock), nullptr);
  return outputs;
}

}  // namespace chainerc::kernels
