"""Python forms of the versioned options structs of include/ch/functions.h.

A built-in function with more than four options takes `const ch_<name>_options*`
(libgit2's pattern: `uint32_t version` first, then one field per option in the
manifest's order). Python callers never see the struct: the generated binding
takes the options as keyword (or positional) arguments with the manifest's
defaults and fills a ctypes mirror of the struct built here.

ctypes only, no library: tests/ops/check_options_struct.py loads this file on
its own to compare the mirror's layout with the C compiler's.
"""

import ctypes

# Signature kinds (see chainerc.functions) that can be struct fields, and their C
# field types: f64 -> double, i32 / bool / mode -> int32_t, i64 -> int64_t.
FIELD_TYPES = {"d": ctypes.c_double, "i": ctypes.c_int32, "q": ctypes.c_int64,
               "b": ctypes.c_int32, "m": ctypes.c_int32}


def options_struct(struct_name, fields):
    """A ctypes.Structure mirroring C struct `struct_name`: `version` (uint32)
    and then `fields`, a list of (name, signature kind)."""
    bad = [(n, k) for n, k in fields if k not in FIELD_TYPES]
    if bad:
        raise TypeError("%s: field kinds %r cannot be options-struct fields" % (struct_name, bad))
    return type(struct_name, (ctypes.Structure,),
                {"_fields_": [("version", ctypes.c_uint32)] +
                             [(n, FIELD_TYPES[k]) for n, k in fields]})


def struct_fields(signature):
    """The options-struct fields of a `_define` signature ('f(x, a:d=1.0, n:i=2)'):
    its non-variable arguments as (name, kind), in order."""
    params = [p.strip() for p in signature.split("(", 1)[1].rstrip(")").split(",")]
    fields = []
    for p in params:
        name, _, kind = p.split("=", 1)[0].partition(":")
        if kind:
            fields.append((name.strip(), kind.strip()))
    return fields
