#!/usr/bin/env python3
"""Count test cases over one or more `meson test` runs and print the closing line.

    summarize.py [--pass NAME=BUILD_DIR]... [--external NAME=LOG]... [--stage-failed TEXT]...

For every test meson knows in BUILD_DIR (meson-info/intro-tests.json) this reads
the result meson logged (meson-logs/testlog.json) and, for GoogleTest programs
(protocol 'gtest'), the XML report the program wrote (<workdir>/<test name>.xml,
which meson passes as --gtest_output). Counting rules:

  * each GoogleTest case counts once: passed, failed (a <failure> or <error>)
    or skipped (GTEST_SKIP, or a DISABLED_ test);
  * a GoogleTest program that failed as a process (crash, sanitizer report,
    leak report at exit, timeout) without a failed case in its report adds one
    failed case, so a crash can never read as a pass; a report older than the
    run is ignored (stale);
  * any other test (exit-code protocol) counts once: exit 0 passed, 77 skipped,
    anything else failed;
  * an --external suite (a language wrapper's own test runner) counts what the
    last "N passed, N failed[, N skipped]" line of its LOG says; a LOG without
    such a line counts as one failed case;
  * a test that meson knows but did not run, a missing log, and each
    --stage-failed TEXT (a configuration or a build that failed) count as one
    failed case each.

The last line printed is "N passed, N failed" plus ", N skipped" when some
were skipped; the exit status is 1 when anything failed, else 0.
"""

import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

PASS_RESULTS = {"OK", "EXPECTEDFAIL"}
SKIP_RESULTS = {"SKIP", "IGNORED"}


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.failures = []  # names of failed cases

    def add(self, other):
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped
        self.failures += other.failures

    def fail(self, name):
        self.failed += 1
        self.failures.append(name)


def load_json_lines(path):
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line:
                records.append(json.loads(line))
    return records


def gtest_cases(path):
    """(passed, failed names, skipped) of a GoogleTest XML report."""
    tree = ET.parse(path)
    passed, failed, skipped = 0, [], 0
    for case in tree.iter("testcase"):
        name = "{}.{}".format(case.get("classname", "?"), case.get("name", "?"))
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        elif (
            case.find("skipped") is not None
            or case.get("result") in ("skipped", "suppressed")
            or case.get("status") == "notrun"
        ):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def pretty_name(test):
    """The name meson test logs: "[suite+suite - ]project:name" (mtest's get_pretty_suite)."""
    raw = test.get("suite") or [""]
    project = raw[0].split(":", 1)[0]
    suites = [s.split(":", 1)[1] for s in raw if ":" in s and s.split(":", 1)[1]]
    full = f"{project}:{test['name']}"
    if suites:
        full = "{} - {}".format("+".join(suites), full)
    return full


def summarize_pass(label, build_dir):
    tally = Tally()
    intro_path = os.path.join(build_dir, "meson-info", "intro-tests.json")
    log_path = os.path.join(build_dir, "meson-logs", "testlog.json")
    try:
        with open(intro_path, encoding="utf-8") as f:
            known = json.load(f)
    except (OSError, ValueError) as e:
        tally.fail(f"[{label}] cannot read {intro_path}: {e}")
        return tally
    try:
        logged = load_json_lines(log_path)
    except (OSError, ValueError) as e:
        tally.fail(f"[{label}] cannot read {log_path} (did meson test run?): {e}")
        return tally

    runs = {}
    for rec in logged:
        runs.setdefault(rec.get("name"), []).append(rec)

    programs = 0
    for test in known:
        name = test["name"]
        full = pretty_name(test)
        recs = runs.pop(full, None)
        if not recs:
            tally.fail(f"[{label}] {full}: did not run")
            continue
        for rec in recs:
            programs += 1
            result = rec.get("result", "ERROR")
            process_failed = bool(rec.get("is_fail", result not in PASS_RESULTS | SKIP_RESULTS))
            if test.get("protocol") == "gtest":
                workdir = test.get("workdir") or build_dir
                xml_path = os.path.join(workdir, name + ".xml")
                cases = None
                try:
                    start = float(rec.get("starttime") or 0)
                    # Written by this run, not left over from an earlier one.
                    if os.path.getmtime(xml_path) + 2 >= start:
                        cases = gtest_cases(xml_path)
                except (OSError, ET.ParseError, ValueError):
                    cases = None
                if cases is not None:
                    p, f, s = cases
                    tally.passed += p
                    tally.skipped += s
                    for case in f:
                        tally.fail(f"[{label}] {full}: {case}")
                    if process_failed and not f:
                        tally.fail(
                            f"[{label}] {full}: program failed after its cases "
                            f"(result {result}, exit status {rec.get('returncode')})"
                        )
                    continue
                if result in SKIP_RESULTS:
                    tally.skipped += 1
                elif process_failed:
                    tally.fail(
                        f"[{label}] {full}: no GoogleTest report (result {result}, "
                        f"exit status {rec.get('returncode')}; crashed or did not start?)"
                    )
                else:
                    tally.passed += 1
                continue
            if result in SKIP_RESULTS:
                tally.skipped += 1
            elif process_failed or result not in PASS_RESULTS:
                tally.fail(f"[{label}] {full}: {result} (exit status {rec.get('returncode')})")
            else:
                tally.passed += 1
    # Logged but unknown to the build's test list (should not happen).
    for full, recs in runs.items():
        for rec in recs:
            if rec.get("is_fail"):
                tally.fail(f"[{label}] {full}: {rec.get('result')}")
    print(
        f"pass '{label}' ({build_dir}): {tally.passed} ok, {tally.failed} failing, "
        f"{tally.skipped} skipped, from {programs} test programs"
    )
    return tally


CLOSING_LINE = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$")


def summarize_external(label, log_path):
    """The counts of a suite whose runner printed the plain closing line."""
    tally = Tally()
    counts = None
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = CLOSING_LINE.match(line.strip())
                if m:
                    counts = m
    except OSError as e:
        tally.fail(f"[{label}] cannot read its log {log_path}: {e}")
        return tally
    if counts is None:
        tally.fail(f"[{label}] printed no 'N passed, N failed' line (see {log_path})")
        return tally
    tally.passed = int(counts.group(1))
    tally.skipped = int(counts.group(3) or 0)
    for i in range(int(counts.group(2))):
        tally.fail(f"[{label}] failing case {i + 1} (see {log_path})")
    print(f"suite '{label}': {tally.passed} ok, {tally.failed} failing, {tally.skipped} skipped")
    return tally


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pass", dest="passes", action="append", default=[],
                    metavar="NAME=BUILD_DIR", help="a build folder whose tests ran")
    ap.add_argument("--external", action="append", default=[], metavar="NAME=LOG",
                    help="a suite run by its own runner, its output in LOG")
    ap.add_argument("--stage-failed", action="append", default=[], metavar="TEXT",
                    help="a configuration or build that failed (one failed case)")
    args = ap.parse_args(argv)

    total = Tally()
    for spec in args.passes:
        label, sep, build_dir = spec.partition("=")
        if not sep:
            label, build_dir = spec, spec
        total.add(summarize_pass(label, build_dir))
    for spec in args.external:
        label, _, log_path = spec.partition("=")
        total.add(summarize_external(label, log_path))
    for text in args.stage_failed:
        total.fail(text)
    if not args.passes and not args.external and not args.stage_failed:
        total.fail("no test pass was given")

    if total.failures:
        print("failed:")
        for name in total.failures:
            print(f"  {name}")
    line = f"{total.passed} passed, {total.failed} failed"
    if total.skipped:
        line += f", {total.skipped} skipped"
    sys.stdout.flush()
    print(line, flush=True)
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
