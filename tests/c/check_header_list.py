#!/usr/bin/env python3
"""Every public header in include/ch is covered by the header tests.

    check_header_list.py INCLUDE_CH_DIR HEADER...

Fails when INCLUDE_CH_DIR holds a *.h or *.hpp that is not among HEADER (the
list in tests/c/meson.build), or when a listed header does not exist.
"""
import os
import sys


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    inc_dir, listed = argv[0], set(argv[1:])
    present = {f for f in os.listdir(inc_dir) if f.endswith((".h", ".hpp"))}
    status = 0
    for name in sorted(present - listed):
        print(f"include/ch/{name} is not in tests/c/meson.build's header list: add it "
              "(and to include/ch/meson.build's install_headers)", file=sys.stderr)
        status = 1
    for name in sorted(listed - present):
        print(f"tests/c/meson.build lists include/ch/{name}, which does not exist",
              file=sys.stderr)
        status = 1
    if status == 0:
        print(f"{len(present)} public headers, all covered: {' '.join(sorted(present))}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
