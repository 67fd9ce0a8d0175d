#!/usr/bin/env python3
"""Every CUDA kernel of chainerc within its resource budget (issue 12, part 4).

    ptxas_check.py NVCC SOURCE_ROOT ARCHS [MAX_REGISTERS]

Compiles the device code of every .cu file under SOURCE_ROOT/cuda
(cuda/emulation excluded) to a cubin with `nvcc -cubin -Xptxas -v` for each
architecture of ARCHS (as -Dcuda-arch: "80;90"; no host compilation, the
files in parallel, one per core)
and reads ptxas's report of each kernel: no local-memory spills (spill stores
or loads), no stack frame, and at most MAX_REGISTERS registers per thread
(default 64: 65536 registers per SM / 1024 threads, so every kernel can be
launched with a full 1024-thread block). Needs no GPU. Prints one line per
kernel; exit status 1 when any kernel is over budget or nvcc fails.
"""

import concurrent.futures
import io
import os
import re
import subprocess
import sys
import tempfile

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+)'")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
REGS = re.compile(r"Used (\d+) registers")


def check(nvcc, root, source, arch, max_regs, out):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-std=c++17", "-O3", "-I" + root, "-I" + os.path.join(root, "include"),
               "-I" + os.path.join(root, "src"),
               "-arch=sm_{}".format(arch), "-cubin", "-Xptxas", "-v",
               source, "-o", os.path.join(tmp, "k.cubin")]
        p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL nvcc on {} for sm_{}:\n{}".format(source, arch, p.stderr), file=out)
        return 1
    failures, kernel, frame = 0, None, None
    kernels = 0
    for line in p.stderr.splitlines():
        m = ENTRY.search(line)
        if m:
            kernel, frame = m.group(1), None
            continue
        m = FRAME.search(line)
        if m and kernel:
            frame = tuple(int(x) for x in m.groups())
            continue
        m = REGS.search(line)
        if m and kernel:
            regs = int(m.group(1))
            stack, spill_st, spill_ld = frame or (0, 0, 0)
            bad = []
            if regs > max_regs:
                bad.append("{} registers > {}".format(regs, max_regs))
            if stack:
                bad.append("{} bytes stack frame".format(stack))
            if spill_st or spill_ld:
                bad.append("spills ({} B stored, {} B loaded)".format(spill_st, spill_ld))
            print("{} sm_{} {}: {} registers, stack {}, spills {}/{}{}".format(
                "FAIL" if bad else "ok", arch, kernel, regs, stack, spill_st, spill_ld,
                " -- " + "; ".join(bad) if bad else ""), file=out)
            failures += bool(bad)
            kernels += 1
            kernel = None
    if kernels == 0:
        print("note: {} has no kernels for sm_{}".format(source, arch), file=out)
    return failures


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    nvcc, root, archs = sys.argv[1], sys.argv[2], sys.argv[3]
    max_regs = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    sources = []
    for d, dirs, files in os.walk(os.path.join(root, "cuda")):
        dirs[:] = sorted(x for x in dirs if x != "emulation")
        sources += [os.path.join(d, f) for f in sorted(files) if f.endswith(".cu")]
    jobs = [(s, a) for s in sources for a in [x.strip() for x in archs.split(";") if x.strip()]]

    def run(job):
        out = io.StringIO()
        n = check(nvcc, root, job[0], job[1], max_regs, out)
        return n, out.getvalue()

    failures = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for n, text in pool.map(run, jobs):  # in order, as they were listed
            sys.stdout.write(text)
            failures += n
    print("{} source(s), {} kernel(s) over budget".format(len(sources), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
