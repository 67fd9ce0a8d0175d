#!/usr/bin/env bash
# The Julia notes (README.md) have never run: no Julia toolchain installs on
# our machines. This checks their ccall signatures against include/ch/*.h
# (check_signatures.py) and ends with one line "N passed, N failed".
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python3 "$here/check_signatures.py"
