#!/usr/bin/env python3
"""The layering rules of src/ (docs/architecture.md, "The layers"):

  core      includes only core/ and <ch/common.h>
  kernels   (the kernel interface) includes core/ and kernels/
  backend   includes core/, kernels/ and backend/
  ops       includes core/, kernels/ and ops/; never calls cpu::, never tests is_cpu(),
            never reads element pointers (data<T>()) or loops with parallel_for
  train     includes core/, kernels/, ops/ and train/
  capi      may include everything below it and the public headers

Prints each violation as FILE:LINE: rule, and exits 1 when there is any.
"""
import re
import sys
from pathlib import Path

ALLOWED = {
    "core": {"core"},
    "kernels": {"core", "kernels"},
    "backend": {"core", "kernels", "backend"},
    "ops": {"core", "kernels", "ops"},
    "train": {"core", "kernels", "ops", "train"},
}
PUBLIC_OK = {"ch/common.h"}  # the shared enums, status codes and plain types
OPS_FORBIDDEN = [
    (re.compile(r"\bcpu::"), "an op calls the CPU backend (cpu::)"),
    (re.compile(r"\bis_cpu\(\)"), "an op tests is_cpu()"),
    (re.compile(r"\bdata<"), "an op reads element pointers (data<T>())"),
    (re.compile(r"\bparallel_for\b"), "an op loops over elements (parallel_for)"),
]
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path: Path, src: Path) -> str:
    return path.relative_to(src).parts[0]


def main() -> int:
    src = Path(sys.argv[1])
    problems = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu"):
            continue
        layer = layer_of(path, src)
        allowed = ALLOWED.get(layer)
        if allowed is None:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if m:
                kind, name = m.groups()
                if kind == "<":
                    if name.startswith("ch/") and name not in PUBLIC_OK:
                        problems.append(f"{path}:{n}: {layer}/ includes the API header <{name}>")
                    continue
                # Quoted includes: "dir/file.h" from src/, or a sibling file.
                first = name.split("/")[0]
                if "/" not in name:
                    continue  # a file of the same folder
                if first in ALLOWED or first in ("capi", "user_kernels"):
                    if first not in allowed:
                        problems.append(f"{path}:{n}: {layer}/ includes {name}")
            if layer == "ops":
                code = line.split("//")[0]
                for pattern, rule in OPS_FORBIDDEN:
                    if pattern.search(code):
                        problems.append(f"{path}:{n}: {rule}")
    for p in problems:
        print(p)
    print(f"{len(problems)} layering violation(s) in {src}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
