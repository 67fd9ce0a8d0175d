"""Checks the ccall signatures of wrappers/julia/README.md against the C headers.

No Julia toolchain installs on our machines, so the notes' ccall lines have
never run; this keeps them true to include/ch/*.h: for every row of the
README's signature table whose right column gives a ccall argument tuple, the
C function exists, the tuple has one Julia type per C parameter, and each
Julia type is one that passes that C type (Int32 for int32_t and the enums,
Ref{Ptr{Cvoid}} or Ptr{Ptr{Cvoid}} for a handle's out-pointer, ...). Prints
"ok: NAME" or "FAIL: NAME: why" per row and a last line "N passed, N failed"."""
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

SCALARS = {
    "int32_t": {"Int32", "Cint"}, "ch_status": {"Int32", "Cint"}, "ch_dtype": {"Int32", "Cint"},
    "int64_t": {"Int64"}, "uint32_t": {"UInt32"}, "size_t": {"Csize_t", "UInt"},
    "double": {"Cdouble", "Float64"}, "float": {"Cfloat", "Float32"}, "ch_device": {"ChDevice"},
    "void": {"Cvoid"},
}


def header_functions():
    decls = {}
    for path in glob.glob(os.path.join(ROOT, "include", "ch", "*.h")):
        text = open(path).read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        for m in re.finditer(r"CH_API\s+([^;{]*?)\b(ch_\w+)\s*\(([^)]*)\)\s*;", text):
            ret, name, params = m.group(1), m.group(2), m.group(3)
            params = " ".join(params.split())
            plist = [] if params in ("", "void") else [p.strip() for p in params.split(",")]
            decls[name] = (" ".join(ret.split()), [param_type(p) for p in plist])
    return decls


def param_type(param):
    """'const int64_t* shape' -> 'int64_t*'; 'ch_variable* const* in' -> 'ch_variable**'."""
    p = re.sub(r"\bconst\b", " ", param)
    p = p.replace("*", " * ")
    toks = p.split()
    if len(toks) >= 2 and toks[-1] != "*" and re.match(r"^[A-Za-z_]\w*$", toks[-1]) \
            and toks[-1] not in SCALARS and not toks[-1].startswith("ch_"):
        toks = toks[:-1]  # the parameter's name
    base = [t for t in toks if t != "*"]
    return " ".join(base) + "*" * toks.count("*")


def allowed(ctype):
    stars = len(ctype) - len(ctype.rstrip("*"))
    base = ctype.rstrip("*")
    if stars == 0:
        return SCALARS.get(base, set())
    if stars == 1:
        if base in SCALARS and base not in ("void", "ch_device"):
            jl = next(iter(sorted(SCALARS[base])))
            return {"Ptr{%s}" % j for j in SCALARS[base]} | {"Ref{%s}" % j for j in SCALARS[base]} \
                | {"Ptr{%s}" % jl}
        if base == "char":
            return {"Cstring", "Ptr{UInt8}", "Ptr{Cchar}"}
        if base == "ch_function_def":
            return {"Ref{ChFunctionDef}", "Ptr{ChFunctionDef}", "Ptr{Cvoid}"}
        return {"Ptr{Cvoid}"}  # a handle or an opaque struct
    if stars == 2:
        if base == "char":
            return {"Ref{Ptr{UInt8}}", "Ptr{Ptr{UInt8}}", "Ref{Cstring}"}
        return {"Ref{Ptr{Cvoid}}", "Ptr{Ptr{Cvoid}}"}
    return set()


def split_tuple(text):
    """'(A, B{C, D}, E)' -> ['A', 'B{C, D}', 'E'] (a trailing comma allowed)."""
    inner = text.strip()[1:-1]
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def main():
    decls = header_functions()
    readme = open(os.path.join(HERE, "README.md")).read()
    passed = failed = 0
    for line in readme.splitlines():
        cols = [c.strip() for c in line.split("|")[1:-1]]
        if len(cols) != 2 or not cols[0].startswith("`"):
            continue
        m = re.search(r"\b(ch_\w+)\s*\(", cols[0])
        t = re.search(r"`(?:ccall\(\(:\w+, \w+\), [^,]+, )?(\([^`]*?\))[,)]?", cols[1])
        if not m or not t or not t.group(1).startswith("(") or "Cvoid}" not in t.group(1) \
                and "Int32" not in t.group(1):
            continue
        name = m.group(1)
        why = None
        if name not in decls:
            why = "not declared in include/ch/*.h"
        else:
            ctypes = decls[name][1]
            jtypes = split_tuple(t.group(1))
            if len(jtypes) != len(ctypes):
                why = "%d Julia argument types for %d C parameters (%s)" % (
                    len(jtypes), len(ctypes), ", ".join(ctypes))
            else:
                for i, (c, j) in enumerate(zip(ctypes, jtypes)):
                    if j not in allowed(c):
                        why = "argument %d: %s does not pass C %s (one of %s)" % (
                            i + 1, j, c, ", ".join(sorted(allowed(c))) or "nothing known")
                        break
        if why:
            failed += 1
            print("FAIL: %s: %s" % (name, why))
        else:
            passed += 1
            print("ok: %s" % name)
    if passed + failed == 0:
        failed = 1
        print("FAIL: no ccall rows found in README.md")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
