#!/usr/bin/env python3
"""libchainerc.so loads and works on the CPU without the CUDA libraries.

    no_cuda_libraries.py LIBCHAINERC_SO

1. Its dynamic section needs none of libcudart, libcublas, libcublasLt,
   libcurand, libnvrtc, libcudnn (they are opened on first GPU use).
2. A process that loads it, does CPU work and asks for the CUDA device count
   has none of them mapped (/proc/self/maps), so a machine without them runs
   CPU programs, and they pay nothing for the GPU code.
"""

import ctypes
import re
import subprocess
import sys

CUDA_LIBS = re.compile(r"lib(cudart|cublas|cublasLt|curand|nvrtc|cudnn)[^/]*\.so")


def main():
    lib = sys.argv[1]
    out = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    bad = [n for n in needed if CUDA_LIBS.search(n)]
    if bad:
        print("FAIL: {} needs {}".format(lib, ", ".join(bad)))
        return 1
    print("NEEDED: " + ", ".join(needed))
    class Device(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int32), ("index", ctypes.c_int32)]

    c = ctypes.CDLL(lib)
    c.ch_cuda_device_count.restype = ctypes.c_int32
    c.ch_device_cpu.restype = Device
    c.ch_array_new_full.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int32,
                                    ctypes.POINTER(ctypes.c_int64), ctypes.c_int32,
                                    ctypes.c_double, Device]
    arr = ctypes.c_void_p()
    shape = (ctypes.c_int64 * 1)(1000)
    if c.ch_array_new_full(ctypes.byref(arr), 0, shape, 1, 2.5, c.ch_device_cpu()) != 0:
        print("FAIL: ch_array_new_full on the CPU")
        return 1
    c.ch_array_release(arr)
    print("CUDA devices: {}".format(c.ch_cuda_device_count()))
    with open("/proc/self/maps") as f:
        mapped = sorted(set(m.group(0) for m in CUDA_LIBS.finditer(f.read())))
    if mapped:
        print("FAIL: CUDA libraries mapped after CPU work: " + ", ".join(mapped))
        return 1
    print("ok: no CUDA library needed or mapped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
