#!/usr/bin/env python3
"""The rules scripts/gen_functions.py enforces on src/ops/manifest.py: a
manifest that breaks one is refused with a message naming the function.

    check_manifest_rules.py REPOSITORY_ROOT

Each case is the real manifest with one entry changed; the generator's
loader and renderers must raise ManifestError (not write anything).
"""
import copy
import importlib.util
import os
import sys


def main(argv):
    root = argv[0]
    spec = importlib.util.spec_from_file_location(
        "gen_functions", os.path.join(root, "scripts", "gen_functions.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    env = {}
    path = os.path.join(root, "src", "ops", "manifest.py")
    exec(compile(open(path).read(), path, "exec"), env)
    base = env["FUNCTIONS"]
    relu = next(d for d in base if d["name"] == "relu")

    def refused(name, change, fragment):
        fns = copy.deepcopy(base)
        entry = dict(copy.deepcopy(relu), name="probe_" + name)
        change(entry)
        fns.append(entry)
        manifest = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                "manifest_rules_%d.py" % os.getpid())
        with open(manifest, "w") as f:
            f.write("GROUPS = %r\nFUNCTIONS = %r\n" % (env["GROUPS"], fns))
        try:
            groups, loaded = gen.load_manifest(manifest)
            gen.render_capi(groups, loaded)
            gen.render_python(groups, loaded)
            gen.render_rust("nn", loaded)
            gen.render_all_ops(loaded)
        except gen.ManifestError as e:
            named = entry["name"] in str(e) or fragment == "declared twice"
            if fragment not in str(e) or not named:
                print("%s: refused, but the message %r lacks %r" % (name, str(e), fragment))
                return False
            print("%s: refused: %s" % (name, e))
            return True
        finally:
            os.unlink(manifest)
        print("%s: accepted, expected a refusal naming %r" % (name, fragment))
        return False

    # More than four options make a versioned options struct
    # (check_options_struct.py compiles one); its fields need a default and a
    # kind that is one C field.
    def struct_no_default(e):
        e["args"] = [("x", "var")] + [("o%d" % i, "f64", 0.0) for i in range(4)] + [
            ("o4", "f64")]
        e["test"] = ["0"] * 5

    def struct_shape(e):
        e["args"] = [("x", "var")] + [("o%d" % i, "f64", 0.0) for i in range(4)] + [
            ("s", "shape", 1)]
        e["test"] = ["0"] * 4 + [(1,)]

    results = [
        refused("struct_no_default", struct_no_default, "needs one"),
        refused("struct_shape", struct_shape, "cannot be a field of a versioned options struct"),
        refused("unknown_kind", lambda e: e.update(args=[("x", "complex")]), "unknown kind"),
        refused("unknown_group", lambda e: e.update(group="nogroup"), "unknown group"),
        refused("unknown_layer", lambda e: e.update(hand=("java",)), "unknown layer"),
        refused("test_arity", lambda e: e.update(args=[("x", "var"), ("s", "f64")], test=[]),
                "test gives 0 values for 1 options"),
        refused("capi_not_mechanical",
                lambda e: e.update(args=[("x", "var"), ("p", "c:const int32_t*")], test=["0"]),
                "not mechanical"),
        refused("duplicate", lambda e: e.update(name="relu"), "declared twice"),
    ]
    ok = all(results)
    print("%d of %d malformed manifests refused" % (sum(results), len(results)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
