/* chainerc._speedups: optional C paths of the Python wrapper's hot loop (user
 * Functions, Variables made from NumPy arrays, NumPy views of engine arrays).
 *
 * The pure-ctypes code in function.py, variable.py and _array.py is the
 * reference: each function here does what its Python counterpart does, and
 * returns None (or -1) where it does not handle a case, so that the caller
 * runs the Python path, which also produces every error message. The module
 * is not linked against libchainerc: setup() receives the addresses of the
 * C functions from the library ctypes loaded (CHAINERC_LIBRARY, the
 * package's own copy, build/src), so both paths always talk to one library.
 *
 * Python objects behind engine `void*` user data (a NumPy array behind a
 * wrapped ch_array, a Function copy per application, the weak reference to a
 * Function object) are the objects themselves, held by one reference that the
 * C release/destroy callbacks drop (taking the GIL), where the ctypes path
 * uses registry keys and Python callbacks.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "ch/array.h"
#include "ch/function.h"
#include "ch/variable.h"

#define FN(name) static __typeof__(name)* p_##name
FN(ch_array_retain);
FN(ch_array_release);
FN(ch_array_data);
FN(ch_array_dtype);
FN(ch_array_ndim);
FN(ch_array_shape);
FN(ch_array_wrap);
FN(ch_array_new);
FN(ch_variable_new);
FN(ch_variable_release);
FN(ch_variable_set_grad);
FN(ch_function_apply);
FN(ch_context_add_output);
FN(ch_context_set_grad_input);
FN(ch_context_set_user_data);
FN(ch_context_user_data);
FN(ch_context_device);           /* optional */
FN(ch_context_needs_input_grad); /* optional */
#undef FN

#define MAX_OUTPUTS 64
#define N_SLOTS 6 /* forward, backward, forward_cpu, backward_cpu, forward_gpu, backward_gpu */

static int ready;
static int cpu_only;             /* the library has no CUDA symbols: every array is on the CPU */
static Py_ssize_t copy_below;    /* _array.COPY_BELOW */
static PyObject* impls[N_SLOTS]; /* the Python bodies of the callbacks, per slot */
static PyObject* fail_fn;        /* _capi.fail_in_callback */
static PyObject* raise_fn;       /* _capi.raise_status */
static PyTypeObject* variable_type;
static PyObject *s_h, *s_data; /* "_h", "_data" */
/* Function.__call__'s input Variables, for the forward callback it causes on
 * this thread (function.py's _pending). */
static _Thread_local PyObject* pending;

/* --- the base object of NumPy views of a ch_array ------------------------ */
typedef struct {
  PyObject_HEAD ch_array* handle;
} Owner;

static void owner_dealloc(PyObject* self) {
  Owner* o = (Owner*)self;
  ch_array* h = o->handle;
  o->handle = NULL;
  if (h) p_ch_array_release(h);
  Py_TYPE(self)->tp_free(self);
}

static PyObject* owner_get_handle(PyObject* self, void* closure) {
  (void)closure;
  Owner* o = (Owner*)self;
  if (!o->handle) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(o->handle);
}

static PyGetSetDef owner_getset[] = {
    {"handle", owner_get_handle, NULL, "the ch_array reference the views hold", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject OwnerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "chainerc._speedups.Owner",
    .tp_basicsize = sizeof(Owner),
    .tp_dealloc = owner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Base object of NumPy views of a chainerc array: owns one reference to it.",
    .tp_getset = owner_getset,
};

/* --- callbacks the engine calls ------------------------------------------- */
static int python_alive(void) {
  if (!Py_IsInitialized()) return 0;
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return 0;
#else
  if (_Py_IsFinalizing()) return 0;
#endif
  return 1;
}

/* ch_release_callback of wrapped NumPy arrays; ch_context_set_user_data's and
 * ch_function_def's destroy: drop the reference behind `user`. At shutdown
 * the object is left alone (as the ctypes callbacks leave the registry). */
static void release_cb(void* data, void* user) {
  (void)data;
  if (!python_alive()) return;
  PyGILState_STATE g = PyGILState_Ensure();
  Py_DECREF((PyObject*)user);
  PyGILState_Release(g);
}

static void destroy_cb(void* user) { release_cb(NULL, user); }

/* --- arrays --------------------------------------------------------------- */
static int ch_code_of(PyArrayObject* a) {
  PyArray_Descr* d = PyArray_DESCR(a);
  if (!PyArray_ISNBO(d->byteorder)) return -1;
  switch (d->type_num) {
    case NPY_FLOAT32:
      return CH_FLOAT32;
    case NPY_FLOAT64:
      return CH_FLOAT64;
    case NPY_INT32:
      return CH_INT32;
    default:
      return -1;
  }
}

static int typenum_of(ch_dtype code) {
  return code == CH_FLOAT32 ? NPY_FLOAT32 : code == CH_FLOAT64 ? NPY_FLOAT64 : NPY_INT32;
}

/* Whether `o` is an array this module handles: an exact, C-contiguous NumPy
 * array of a chainerc dtype with at most 8 dimensions. */
static int plain(PyObject* o, int* code) {
  if (!PyArray_CheckExact(o)) return 0;
  PyArrayObject* a = (PyArrayObject*)o;
  if (!PyArray_IS_C_CONTIGUOUS(a) || PyArray_NDIM(a) > 8) return 0;
  *code = ch_code_of(a);
  return *code >= 0;
}

static ch_device cpu_device(void) {
  ch_device d;
  d.type = CH_DEVICE_CPU;
  d.index = 0;
  return d;
}

/* _array.handle_of_view for views made here: the handle (borrowed) if `o`
 * is a whole view of it with its layout, else NULL. */
static ch_array* handle_of_view(PyObject* o) {
  if (!PyArray_CheckExact(o)) return NULL;
  PyArrayObject* a = (PyArrayObject*)o;
  PyObject* base = PyArray_BASE(a);
  if (!base || Py_TYPE(base) != &OwnerType) return NULL;
  ch_array* h = ((Owner*)base)->handle;
  if (!h || PyArray_DATA(a) != p_ch_array_data(h) || !PyArray_IS_C_CONTIGUOUS(a)) return NULL;
  int nd = PyArray_NDIM(a);
  if (nd != p_ch_array_ndim(h) || ch_code_of(a) != p_ch_array_dtype(h)) return NULL;
  const int64_t* sp = p_ch_array_shape(h);
  const npy_intp* dims = PyArray_DIMS(a);
  for (int i = 0; i < nd; ++i)
    if (dims[i] != sp[i]) return NULL;
  return h;
}

/* numpy_to_handle: a new ch_array sharing `o`'s memory (o is plain()); NULL
 * when the library refuses (the caller's Python path then reports why). */
static ch_array* wrap(PyObject* o, int code) {
  PyArrayObject* a = (PyArrayObject*)o;
  int nd = PyArray_NDIM(a);
  int64_t shape[8];
  const npy_intp* dims = PyArray_DIMS(a);
  for (int i = 0; i < nd; ++i) shape[i] = dims[i];
  ch_array* out = NULL;
  Py_INCREF(o);
  if (p_ch_array_wrap(&out, code, shape, nd, PyArray_DATA(a), cpu_device(), release_cb, o)) {
    Py_DECREF(o); /* on failure the release callback is not called */
    return NULL;
  }
  return out;
}

/* to_handle for a plain array: the view's own handle retained, else wrapped. */
static ch_array* to_handle(PyObject* o, int code) {
  ch_array* h = handle_of_view(o);
  if (h) return p_ch_array_retain(h);
  return wrap(o, code);
}

/* owned_handle: an array a callback returns, retained if it is a view, copied
 * if small (numpy_to_owned_handle), else wrapped. */
static ch_array* owned_handle(PyObject* o, int code) {
  ch_array* h = handle_of_view(o);
  if (h) return p_ch_array_retain(h);
  PyArrayObject* a = (PyArrayObject*)o;
  Py_ssize_t nbytes = PyArray_NBYTES(a);
  if (nbytes > copy_below || PyArray_SIZE(a) == 0) return wrap(o, code);
  int nd = PyArray_NDIM(a);
  int64_t shape[8];
  const npy_intp* dims = PyArray_DIMS(a);
  for (int i = 0; i < nd; ++i) shape[i] = dims[i];
  ch_array* out = NULL;
  if (p_ch_array_new(&out, code, shape, nd, PyArray_DATA(a), cpu_device())) return NULL;
  return out;
}

/* cpu_view: a NumPy view of CPU array `h`, taking over the reference `h`. */
static PyObject* make_view(ch_array* h, int readonly) {
  int nd = p_ch_array_ndim(h);
  const int64_t* sp = p_ch_array_shape(h);
  npy_intp dims[8];
  for (int i = 0; i < nd && i < 8; ++i) dims[i] = (npy_intp)sp[i];
  int typenum = typenum_of(p_ch_array_dtype(h));
  void* ptr = p_ch_array_data(h);
  if (!ptr) { /* empty array: nothing to share */
    p_ch_array_release(h);
    return PyArray_EMPTY(nd, dims, typenum, 0);
  }
  Owner* owner = PyObject_New(Owner, &OwnerType);
  if (!owner) {
    p_ch_array_release(h);
    return NULL;
  }
  owner->handle = h;
  PyObject* a = PyArray_New(&PyArray_Type, nd, dims, typenum, NULL, ptr, 0,
                            readonly ? NPY_ARRAY_CARRAY_RO : NPY_ARRAY_CARRAY, NULL);
  if (!a) {
    Py_DECREF(owner);
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject*)a, (PyObject*)owner) < 0) { /* steals owner */
    Py_DECREF(a);
    return NULL;
  }
  return a;
}

/* A read-only view of the NumPy array `o` (forward's view of x.data). */
static PyObject* ro_view(PyObject* o) {
  PyObject* v = PyArray_View((PyArrayObject*)o, NULL, NULL);
  if (v) PyArray_CLEARFLAGS((PyArrayObject*)v, NPY_ARRAY_WRITEABLE);
  return v;
}

static int is_cpu_ctx(const ch_context* ctx) {
  if (cpu_only) return 1;
  if (!p_ch_context_device) return 0;
  return p_ch_context_device(ctx).type == CH_DEVICE_CPU;
}

static PyObject* handles_tuple(ch_array* const* hs, size_t n) {
  PyObject* t = PyTuple_New((Py_ssize_t)n);
  if (!t) return NULL;
  for (size_t i = 0; i < n; ++i) {
    PyObject* v = PyLong_FromVoidPtr(hs[i]);
    if (!v) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
  }
  return t;
}

/* Read-only views of borrowed CPU handles. */
static PyObject* views_tuple(ch_array* const* hs, size_t n) {
  PyObject* t = PyTuple_New((Py_ssize_t)n);
  if (!t) return NULL;
  for (size_t i = 0; i < n; ++i) {
    PyObject* v = make_view(p_ch_array_retain(hs[i]), 1);
    if (!v) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
  }
  return t;
}

/* A Python exception raised here (not by the Python body, which reports its
 * own): handed to fail_in_callback as the body's are. */
static ch_status fail_current(void) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb && value) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  ch_status st = CH_ERR_CALLBACK;
  if (value) {
    PyObject* r = PyObject_CallOneArg(fail_fn, value);
    Py_DECREF(value);
    if (r) {
      st = (ch_status)PyLong_AsLong(r);
      Py_DECREF(r);
    }
  }
  if (PyErr_Occurred()) PyErr_WriteUnraisable(fail_fn);
  return st ? st : CH_ERR_CALLBACK;
}

static ch_status status_of(PyObject* r) {
  if (!r) return fail_current();
  long st = PyLong_AsLong(r);
  Py_DECREF(r);
  if (st == -1 && PyErr_Occurred()) return fail_current();
  return (ch_status)st;
}

/* Forward: the body gets (weakref to the Function, ctx, xs, handles, pending
 * arrays). On the CPU xs are the input views (read-only views of the input
 * Variables' NumPy arrays where Function.__call__ passed them, else views of
 * the engine's arrays); elsewhere xs is None and the body makes them. */
static ch_status forward_tramp(int slot, void* user_data, ch_context* ctx, ch_array* const* inputs,
                               size_t n) {
  PyGILState_STATE g = PyGILState_Ensure();
  ch_status st;
  PyObject* pend = NULL;
  if (pending && PyTuple_GET_SIZE(pending) == (Py_ssize_t)n) {
    pend = pending; /* this application's; a nested one sets its own */
    pending = NULL;
  }
  PyObject *xs = NULL, *hs = NULL, *args[6];
  int cpu = slot == 2 || is_cpu_ctx(ctx);
  if (cpu) {
    xs = PyTuple_New((Py_ssize_t)n);
    if (!xs) goto error;
    for (size_t i = 0; i < n; ++i) {
      PyObject* v = NULL;
      if (pend) {
        PyObject* d = PyObject_GetAttr(PyTuple_GET_ITEM(pend, (Py_ssize_t)i), s_data);
        if (!d) goto error;
        if (PyArray_CheckExact(d)) v = ro_view(d);
        Py_DECREF(d);
        if (!v && PyErr_Occurred()) goto error;
      }
      if (!v) v = make_view(p_ch_array_retain(inputs[i]), 1);
      if (!v) goto error;
      PyTuple_SET_ITEM(xs, (Py_ssize_t)i, v);
    }
  } else {
    hs = handles_tuple(inputs, n);
    if (!hs) goto error;
  }
  {
    PyObject* c = PyLong_FromVoidPtr(ctx);
    if (!c) goto error;
    args[1] = (PyObject*)user_data;
    args[2] = c;
    args[3] = xs ? xs : Py_None;
    args[4] = hs ? hs : Py_None;
    args[5] = pend ? pend : Py_None;
    PyObject* r =
        PyObject_Vectorcall(impls[slot], args + 1, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(c);
    st = status_of(r);
  }
  goto done;
error:
  st = fail_current();
done:
  Py_XDECREF(xs);
  Py_XDECREF(hs);
  Py_XDECREF(pend);
  PyGILState_Release(g);
  return st;
}

/* Backward: the body gets (the application's Function copy, ctx, input
 * handles, grad output views or None, grad output handles, needs_input_grad). */
static ch_status backward_tramp(int slot, void* user_data, ch_context* ctx, ch_array* const* inputs,
                                size_t n_in, ch_array* const* outputs, size_t n_out,
                                ch_array* const* gouts, size_t n_gout) {
  (void)user_data;
  (void)outputs;
  (void)n_out;
  PyGILState_STATE g = PyGILState_Ensure();
  ch_status st;
  PyObject *hs = NULL, *gys = NULL, *ghs = NULL, *needs = NULL, *args[7];
  PyObject* node = (PyObject*)p_ch_context_user_data(ctx);
  if (!node) {
    PyErr_SetString(PyExc_RuntimeError,
                    "the application's Function object is missing (forward did not finish)");
    goto error;
  }
  hs = handles_tuple(inputs, n_in);
  if (!hs) goto error;
  if (slot == 3 || is_cpu_ctx(ctx)) {
    gys = views_tuple(gouts, n_gout);
    if (!gys) goto error;
  } else {
    ghs = handles_tuple(gouts, n_gout);
    if (!ghs) goto error;
  }
  if (p_ch_context_needs_input_grad) {
    needs = PyTuple_New((Py_ssize_t)n_in);
    if (!needs) goto error;
    for (size_t i = 0; i < n_in; ++i) {
      PyObject* b = p_ch_context_needs_input_grad(ctx, i) ? Py_True : Py_False;
      Py_INCREF(b);
      PyTuple_SET_ITEM(needs, (Py_ssize_t)i, b);
    }
  }
  {
    PyObject* c = PyLong_FromVoidPtr(ctx);
    if (!c) goto error;
    args[1] = node;
    args[2] = c;
    args[3] = hs;
    args[4] = gys ? gys : Py_None;
    args[5] = ghs ? ghs : Py_None;
    args[6] = needs ? needs : Py_None;
    PyObject* r =
        PyObject_Vectorcall(impls[slot], args + 1, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(c);
    st = status_of(r);
  }
  goto done;
error:
  st = fail_current();
done:
  Py_XDECREF(hs);
  Py_XDECREF(gys);
  Py_XDECREF(ghs);
  Py_XDECREF(needs);
  PyGILState_Release(g);
  return st;
}

#define FWD(k)                                                                          \
  static ch_status forward_##k(void* u, ch_context* c, ch_array* const* in, size_t n) { \
    return forward_tramp(k, u, c, in, n);                                               \
  }
#define BWD(k)                                                                          \
  static ch_status backward_##k(void* u, ch_context* c, ch_array* const* in, size_t ni, \
                                ch_array* const* out, size_t no, ch_array* const* gout, \
                                size_t ng) {                                            \
    return backward_tramp(k, u, c, in, ni, out, no, gout, ng);                          \
  }
FWD(0)
BWD(1)
FWD(2)
BWD(3)
FWD(4)
BWD(5)

static void* const slot_fns[N_SLOTS] = {(void*)forward_0,  (void*)backward_1, (void*)forward_2,
                                        (void*)backward_3, (void*)forward_4,  (void*)backward_5};

/* --- module functions ----------------------------------------------------- */
static int not_ready(void) {
  if (ready) return 0;
  PyErr_SetString(PyExc_RuntimeError, "chainerc._speedups: setup() was not called");
  return 1;
}

static void* addr(PyObject* table, const char* name, int optional) {
  PyObject* v = PyDict_GetItemString(table, name);
  if (!v || v == Py_None) {
    if (!optional) PyErr_Format(PyExc_KeyError, "chainerc._speedups.setup: no %s", name);
    return NULL;
  }
  return PyLong_AsVoidPtr(v);
}

static PyObject* sp_setup(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* table;
  int cpu_only_arg;
  Py_ssize_t below;
  if (!PyArg_ParseTuple(args, "O!pn", &PyDict_Type, &table, &cpu_only_arg, &below)) return NULL;
#define GET(name, opt)                                        \
  p_##name = (__typeof__(p_##name))addr(table, #name, (opt)); \
  if (!p_##name && !(opt)) return NULL;
  GET(ch_array_retain, 0)
  GET(ch_array_release, 0)
  GET(ch_array_data, 0)
  GET(ch_array_dtype, 0)
  GET(ch_array_ndim, 0)
  GET(ch_array_shape, 0)
  GET(ch_array_wrap, 0)
  GET(ch_array_new, 0)
  GET(ch_variable_new, 0)
  GET(ch_variable_release, 0)
  GET(ch_variable_set_grad, 0)
  GET(ch_function_apply, 0)
  GET(ch_context_add_output, 0)
  GET(ch_context_set_grad_input, 0)
  GET(ch_context_set_user_data, 0)
  GET(ch_context_user_data, 0)
  GET(ch_context_device, 1)
  GET(ch_context_needs_input_grad, 1)
#undef GET
  if (PyErr_Occurred()) return NULL;
  cpu_only = cpu_only_arg;
  copy_below = below;
  ready = 1;
  Py_RETURN_NONE;
}

/* set_bodies(bodies, fail_in_callback, raise_status, Variable): what the
 * callbacks and apply() call into (function.py sets them). */
static PyObject* sp_set_bodies(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *impl_tuple, *fail, *raise, *vtype;
  if (!PyArg_ParseTuple(args, "O!OOO!", &PyTuple_Type, &impl_tuple, &fail, &raise, &PyType_Type,
                        &vtype))
    return NULL;
  if (PyTuple_GET_SIZE(impl_tuple) != N_SLOTS) {
    PyErr_SetString(PyExc_ValueError, "chainerc._speedups.set_bodies: 6 callback bodies");
    return NULL;
  }
  for (int i = 0; i < N_SLOTS; ++i)
    Py_XSETREF(impls[i], Py_NewRef(PyTuple_GET_ITEM(impl_tuple, i)));
  Py_XSETREF(fail_fn, Py_NewRef(fail));
  Py_XSETREF(raise_fn, Py_NewRef(raise));
  Py_XSETREF(variable_type, (PyTypeObject*)Py_NewRef(vtype));
  Py_RETURN_NONE;
}

/* set_copy_below(n): _array.COPY_BELOW changed. */
static PyObject* sp_set_copy_below(PyObject* self, PyObject* o) {
  (void)self;
  Py_ssize_t n = PyLong_AsSsize_t(o);
  if (n == -1 && PyErr_Occurred()) return NULL;
  copy_below = n;
  Py_RETURN_NONE;
}

/* The addresses of the C callbacks: a tuple of the 6 slot functions, the
 * release callback and the destroy callback. */
static PyObject* sp_callbacks(PyObject* self, PyObject* noargs) {
  (void)self;
  (void)noargs;
  PyObject* t = PyTuple_New(N_SLOTS + 2);
  if (!t) return NULL;
  for (int i = 0; i < N_SLOTS; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromVoidPtr(slot_fns[i]));
  PyTuple_SET_ITEM(t, N_SLOTS, PyLong_FromVoidPtr((void*)release_cb));
  PyTuple_SET_ITEM(t, N_SLOTS + 1, PyLong_FromVoidPtr((void*)destroy_cb));
  return t;
}

/* hold(obj): a new reference to obj as an integer, for user data that
 * destroy_cb drops. */
static PyObject* sp_hold(PyObject* self, PyObject* o) {
  (void)self;
  Py_INCREF(o);
  return PyLong_FromVoidPtr(o);
}

/* drop(address): drop a reference hold() made (user data the engine refused). */
static PyObject* sp_drop(PyObject* self, PyObject* a) {
  (void)self;
  void* p = PyLong_AsVoidPtr(a);
  if (!p && PyErr_Occurred()) return NULL;
  Py_XDECREF((PyObject*)p);
  Py_RETURN_NONE;
}

static ch_array* arg_handle(PyObject* o) { return (ch_array*)PyLong_AsVoidPtr(o); }

/* cpu_view(h, readonly=False): _array.cpu_view. */
static PyObject* sp_cpu_view(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  if (not_ready()) return NULL;
  if (n < 1 || n > 2) {
    PyErr_SetString(PyExc_TypeError, "cpu_view(h, readonly=False)");
    return NULL;
  }
  ch_array* h = arg_handle(args[0]);
  if (!h) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "cpu_view: a NULL handle");
    return NULL;
  }
  int ro = n > 1 ? PyObject_IsTrue(args[1]) : 0;
  if (ro < 0) return NULL;
  return make_view(h, ro);
}

/* handle_of_view(a): _array.handle_of_view for views made here (borrowed
 * handle), else None. */
static PyObject* sp_handle_of_view(PyObject* self, PyObject* o) {
  (void)self;
  if (not_ready()) return NULL;
  ch_array* h = handle_of_view(o);
  if (!h) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(h);
}

/* to_handle(a) / owned_handle(a): new ch_array reference, or None where the
 * Python path must run (not a plain array, or the library refused). */
static PyObject* sp_to_handle(PyObject* self, PyObject* o) {
  (void)self;
  int code;
  if (not_ready()) return NULL;
  if (!plain(o, &code)) Py_RETURN_NONE;
  ch_array* h = to_handle(o, code);
  if (!h) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(h);
}

static PyObject* sp_owned_handle(PyObject* self, PyObject* o) {
  (void)self;
  int code;
  if (not_ready()) return NULL;
  if (!plain(o, &code)) Py_RETURN_NONE;
  ch_array* h = owned_handle(o, code);
  if (!h) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(h);
}

/* init_variable(v, data, volatile): Variable.__init__ for a plain NumPy
 * array: v._h (a new ch_variable over the shared memory) and v._data = data.
 * False where the Python path must run. */
static PyObject* sp_init_variable(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  int code;
  if (not_ready()) return NULL;
  if (n != 3) {
    PyErr_SetString(PyExc_TypeError, "init_variable(v, data, volatile)");
    return NULL;
  }
  PyObject* data = args[1];
  if (!plain(data, &code)) Py_RETURN_FALSE;
  int vol = PyObject_IsTrue(args[2]);
  if (vol < 0) return NULL;
  ch_array* h = to_handle(data, code);
  if (!h) Py_RETURN_FALSE;
  ch_variable* v = NULL;
  ch_status st = p_ch_variable_new(&v, h, vol);
  p_ch_array_release(h);
  if (st) Py_RETURN_FALSE;
  PyObject* hv = PyLong_FromVoidPtr(v);
  if (!hv || PyObject_SetAttr(args[0], s_h, hv) < 0) {
    Py_XDECREF(hv);
    p_ch_variable_release(v);
    return NULL;
  }
  Py_DECREF(hv);
  /* Chainer's identity: x.data is the array given */
  if (PyObject_SetAttr(args[0], s_data, data) < 0) return NULL;
  Py_RETURN_TRUE;
}

/* set_grad(vh, a): Variable.grad = a for a plain array: the status, or -1
 * where the Python path must run. */
static PyObject* sp_set_grad(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  int code;
  if (not_ready()) return NULL;
  if (n != 2) {
    PyErr_SetString(PyExc_TypeError, "set_grad(vh, a)");
    return NULL;
  }
  if (args[0] == Py_None) return PyLong_FromLong(-1);
  ch_variable* v = (ch_variable*)PyLong_AsVoidPtr(args[0]);
  if (!v && PyErr_Occurred()) return NULL;
  if (!v || args[0] == Py_None || !plain(args[1], &code)) return PyLong_FromLong(-1);
  ch_array* h = to_handle(args[1], code);
  if (!h) return PyLong_FromLong(-1);
  ch_status st = p_ch_variable_set_grad(v, h);
  p_ch_array_release(h);
  return PyLong_FromLong(st);
}

/* release_variable(vh): ch_variable_release under the GIL (Variable.__del__). */
static PyObject* sp_release_variable(PyObject* self, PyObject* o) {
  (void)self;
  ch_variable* v = (ch_variable*)PyLong_AsVoidPtr(o);
  if (!v && PyErr_Occurred()) return NULL;
  return PyLong_FromLong(v ? p_ch_variable_release(v) : 0);
}

/* add_output(ctx, y) / set_grad_input(ctx, i, g): a callback's result for a
 * plain array: the status, or -1 where the Python path must run. */
static PyObject* sp_add_output(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  int code;
  if (n != 2) {
    PyErr_SetString(PyExc_TypeError, "add_output(ctx, y)");
    return NULL;
  }
  if (!plain(args[1], &code)) return PyLong_FromLong(-1);
  ch_context* ctx = (ch_context*)PyLong_AsVoidPtr(args[0]);
  if (!ctx && PyErr_Occurred()) return NULL;
  ch_array* h = owned_handle(args[1], code);
  if (!h) return PyLong_FromLong(-1);
  ch_status st = p_ch_context_add_output(ctx, h);
  p_ch_array_release(h);
  return PyLong_FromLong(st);
}

static PyObject* sp_set_grad_input(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  int code;
  if (n != 4) {
    PyErr_SetString(PyExc_TypeError, "set_grad_input(ctx, i, g, x)");
    return NULL;
  }
  if (!plain(args[2], &code)) return PyLong_FromLong(-1);
  /* a gradient of another dtype or shape than its input: the Python path
   * converts it (astype, np.full of a one-element gradient) */
  if (!PyArray_Check(args[3])) return PyLong_FromLong(-1);
  {
    PyArrayObject *g = (PyArrayObject*)args[2], *x = (PyArrayObject*)args[3];
    if (!PyArray_EquivTypes(PyArray_DESCR(g), PyArray_DESCR(x)) || !PyArray_SAMESHAPE(g, x))
      return PyLong_FromLong(-1);
  }
  ch_context* ctx = (ch_context*)PyLong_AsVoidPtr(args[0]);
  if (!ctx && PyErr_Occurred()) return NULL;
  size_t i = PyLong_AsSize_t(args[1]);
  if (i == (size_t)-1 && PyErr_Occurred()) return NULL;
  ch_array* h = owned_handle(args[2], code);
  if (!h) return PyLong_FromLong(-1);
  ch_status st = p_ch_context_set_grad_input(ctx, i, h);
  p_ch_array_release(h);
  return PyLong_FromLong(st);
}

/* set_user_data(ctx, node): the application's Function copy as its user
 * data (one reference, dropped by destroy_cb): the status. */
static PyObject* sp_set_user_data(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  if (n != 2) {
    PyErr_SetString(PyExc_TypeError, "set_user_data(ctx, node)");
    return NULL;
  }
  ch_context* ctx = (ch_context*)PyLong_AsVoidPtr(args[0]);
  if (!ctx && PyErr_Occurred()) return NULL;
  Py_INCREF(args[1]);
  ch_status st = p_ch_context_set_user_data(ctx, args[1], destroy_cb);
  if (st) Py_DECREF(args[1]); /* refused: not kept */
  return PyLong_FromLong(st);
}

/* input_views(hs, saved): backward's input views: saved[i] (forward's view)
 * where it is a view of exactly the memory, shape and dtype of hs[i], else a
 * new read-only view of hs[i] (CPU handles). */
static int same_array(PyObject* v, ch_array* h) {
  if (!PyArray_Check(v)) return 0;
  PyArrayObject* a = (PyArrayObject*)v;
  if (PyArray_DATA(a) != p_ch_array_data(h) || !PyArray_IS_C_CONTIGUOUS(a)) return 0;
  int nd = PyArray_NDIM(a);
  if (nd != p_ch_array_ndim(h) || ch_code_of(a) != p_ch_array_dtype(h)) return 0;
  const int64_t* sp = p_ch_array_shape(h);
  for (int i = 0; i < nd; ++i)
    if (PyArray_DIMS(a)[i] != sp[i]) return 0;
  return 1;
}

static PyObject* sp_input_views(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  if (n != 2 || !PyTuple_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "input_views(handles, saved)");
    return NULL;
  }
  PyObject* hs = args[0];
  PyObject* saved =
      PyTuple_Check(args[1]) && PyTuple_GET_SIZE(args[1]) == PyTuple_GET_SIZE(hs) ? args[1] : NULL;
  Py_ssize_t k = PyTuple_GET_SIZE(hs);
  PyObject* t = PyTuple_New(k);
  if (!t) return NULL;
  for (Py_ssize_t i = 0; i < k; ++i) {
    ch_array* h = arg_handle(PyTuple_GET_ITEM(hs, i));
    if (!h) {
      Py_DECREF(t);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "input_views: a NULL handle");
      return NULL;
    }
    PyObject* v;
    if (saved && same_array(PyTuple_GET_ITEM(saved, i), h)) {
      v = Py_NewRef(PyTuple_GET_ITEM(saved, i));
    } else {
      v = make_view(p_ch_array_retain(h), 1);
      if (!v) {
        Py_DECREF(t);
        return NULL;
      }
    }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

static PyObject* new_variable(ch_variable* h) {
  PyObject* v = variable_type->tp_alloc(variable_type, 0);
  PyObject* hv = PyLong_FromVoidPtr(h);
  if (!v || !hv || PyObject_SetAttr(v, s_h, hv) < 0 || PyObject_SetAttr(v, s_data, Py_None) < 0) {
    Py_XDECREF(hv);
    if (v) {
      /* v's finalizer releases h where _h was set */
      PyObject* cur = PyObject_GetAttr(v, s_h);
      if (!cur) {
        PyErr_Clear();
        p_ch_variable_release(h);
      }
      Py_XDECREF(cur);
      Py_DECREF(v);
    } else {
      p_ch_variable_release(h);
    }
    return NULL;
  }
  Py_DECREF(hv);
  return v;
}

/* apply(fh, inputs, function): Function.__call__ for a tuple of Variables: the
 * output Variable, or a tuple of them. */
static PyObject* sp_apply(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (not_ready()) return NULL;
  if (nargs != 3 || !PyTuple_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "apply(fh, inputs, function)");
    return NULL;
  }
  ch_function* fh = (ch_function*)PyLong_AsVoidPtr(args[0]);
  if (!fh && PyErr_Occurred()) return NULL;
  PyObject* ins = args[1];
  Py_ssize_t n = PyTuple_GET_SIZE(ins);
  ch_variable* stack_hs[16];
  ch_variable** hs = n <= 16 ? stack_hs : PyMem_Malloc(sizeof(ch_variable*) * (size_t)n);
  if (!hs) return PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* h = PyObject_GetAttr(PyTuple_GET_ITEM(ins, i), s_h);
    if (!h) goto fail;
    hs[i] = h == Py_None ? NULL : (ch_variable*)PyLong_AsVoidPtr(h);
    Py_DECREF(h);
    if (PyErr_Occurred()) goto fail;
  }
  ch_variable* outs[MAX_OUTPUTS];
  size_t n_out = 0;
  PyObject* saved = pending;
  pending = Py_NewRef(ins);
  ch_status st;
  PyThreadState* ts = PyEval_SaveThread(); /* as ctypes.CDLL calls: other threads run */
  st = p_ch_function_apply(fh, hs, (size_t)n, outs, MAX_OUTPUTS, &n_out);
  PyEval_RestoreThread(ts);
  Py_XDECREF(pending);
  pending = saved;
  if (hs != stack_hs) PyMem_Free(hs);
  hs = NULL;
  if (st) {
    PyObject* code = PyLong_FromLong(st);
    PyObject* r = code ? PyObject_CallOneArg(raise_fn, code) : NULL;
    Py_XDECREF(code);
    Py_XDECREF(r);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "chainerc: apply failed");
    return NULL;
  }
  if (n_out == 1) return new_variable(outs[0]);
  if (n_out > MAX_OUTPUTS) {
    for (size_t i = 0; i < MAX_OUTPUTS; ++i) p_ch_variable_release(outs[i]);
    PyErr_Format(PyExc_ValueError, "%s: %zu outputs; chainerc's Python wrapper returns at most %d",
                 Py_TYPE(args[2])->tp_name, n_out, MAX_OUTPUTS);
    return NULL;
  }
  PyObject* t = PyTuple_New((Py_ssize_t)n_out);
  if (!t) {
    for (size_t i = 0; i < n_out; ++i) p_ch_variable_release(outs[i]);
    return NULL;
  }
  for (size_t i = 0; i < n_out; ++i) {
    PyObject* v = new_variable(outs[i]);
    if (!v) {
      for (size_t j = i + 1; j < n_out; ++j) p_ch_variable_release(outs[j]);
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
  }
  return t;
fail:
  if (hs != stack_hs) PyMem_Free(hs);
  return NULL;
}

/* user_data(ctx): the object set_user_data stored (a new reference). */
static PyObject* sp_user_data(PyObject* self, PyObject* o) {
  (void)self;
  if (not_ready()) return NULL;
  ch_context* ctx = (ch_context*)PyLong_AsVoidPtr(o);
  if (!ctx && PyErr_Occurred()) return NULL;
  PyObject* u = (PyObject*)p_ch_context_user_data(ctx);
  if (!u) {
    PyErr_SetString(PyExc_KeyError, "the context has no user data");
    return NULL;
  }
  return Py_NewRef(u);
}

static PyMethodDef methods[] = {
    {"user_data", sp_user_data, METH_O, "the object behind a context's user data"},
    {"setup", sp_setup, METH_VARARGS, "setup(addresses, cpu_only, copy_below)"},
    {"set_bodies", sp_set_bodies, METH_VARARGS,
     "set_bodies(bodies, fail_in_callback, raise_status, Variable)"},
    {"set_copy_below", sp_set_copy_below, METH_O, "_array.COPY_BELOW"},
    {"callbacks", sp_callbacks, METH_NOARGS, "addresses of the C callbacks"},
    {"hold", sp_hold, METH_O, "a new reference as an integer (user data)"},
    {"drop", sp_drop, METH_O, "drop a reference hold() made"},
    {"cpu_view", (PyCFunction)(void (*)(void))sp_cpu_view, METH_FASTCALL, "_array.cpu_view"},
    {"handle_of_view", sp_handle_of_view, METH_O, "_array.handle_of_view"},
    {"to_handle", sp_to_handle, METH_O, "_array.to_handle for plain arrays, else None"},
    {"owned_handle", sp_owned_handle, METH_O, "_array.owned_handle for plain arrays, else None"},
    {"init_variable", (PyCFunction)(void (*)(void))sp_init_variable, METH_FASTCALL,
     "Variable.__init__ for plain arrays"},
    {"set_grad", (PyCFunction)(void (*)(void))sp_set_grad, METH_FASTCALL,
     "Variable.grad = a for plain arrays"},
    {"release_variable", sp_release_variable, METH_O, "ch_variable_release"},
    {"add_output", (PyCFunction)(void (*)(void))sp_add_output, METH_FASTCALL,
     "ch_context_add_output of a plain array"},
    {"set_grad_input", (PyCFunction)(void (*)(void))sp_set_grad_input, METH_FASTCALL,
     "ch_context_set_grad_input of a plain array matching its input"},
    {"set_user_data", (PyCFunction)(void (*)(void))sp_set_user_data, METH_FASTCALL,
     "the application's Function copy as its user data"},
    {"input_views", (PyCFunction)(void (*)(void))sp_input_views, METH_FASTCALL,
     "backward's input views"},
    {"apply", (PyCFunction)(void (*)(void))sp_apply, METH_FASTCALL, "Function.__call__"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "chainerc._speedups",
                                    "Optional C paths of chainerc's Python wrapper.",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__speedups(void) {
  import_array();
  if (PyType_Ready(&OwnerType) < 0) return NULL;
  s_h = PyUnicode_InternFromString("_h");
  s_data = PyUnicode_InternFromString("_data");
  if (!s_h || !s_data) return NULL;
  PyObject* m = PyModule_Create(&module);
  if (!m) return NULL;
  if (PyModule_AddIntConstant(m, "API_VERSION", 1) < 0) { /* _capi.SPEEDUPS_API_VERSION */
    Py_DECREF(m);
    return NULL;
  }
  Py_INCREF(&OwnerType);
  if (PyModule_AddObject(m, "Owner", (PyObject*)&OwnerType) < 0) {
    Py_DECREF(&OwnerType);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
