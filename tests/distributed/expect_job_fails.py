#!/usr/bin/env python3
"""expect_job_fails.py MARKER STATUS -- COMMAND...

Runs COMMAND (an mpirun job in which one rank dies on purpose) and passes
(exit 0) only when the job ends by itself within 45 s, with a non-zero
status (STATUS exactly, unless STATUS is 'any'), and its output shows MARKER
(the dying rank's own line), so that a job failing for another reason, or
hanging, fails the test."""
import os
import signal
import subprocess
import sys


def main():
    marker, want = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    # A session of its own, so that a hung job is ended whole (mpirun and its
    # ranks), never left spinning.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        raw, _ = p.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                raw, _ = p.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                raw = b""
        print(raw.decode("utf-8", "replace"))
        print("FAIL: the job did not end within 45 s (hang)")
        return 1
    out = raw.decode("utf-8", "replace")
    print(out)
    r = p
    if r.returncode == 0:
        print("FAIL: the job ended with status 0")
        return 1
    if want != "any" and r.returncode != int(want):
        print("FAIL: the job ended with status %d, expected %s" % (r.returncode, want))
        return 1
    if marker not in out:
        print("FAIL: the output lacks %r" % marker)
        return 1
    print("ok: the job ended with status %d" % r.returncode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
