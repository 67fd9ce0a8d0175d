#!/usr/bin/env python3
"""Every repository path the documentation names must exist in the tree.

    check_doc_paths.py SOURCE_ROOT

Reads README.md, docs/*.md (not docs/_incoming/, which holds drafts not yet
folded in), wrappers/*/README.md, bench/README.md and bench/results/README.md.
Checks two kinds of references:

  * Markdown links [text](target) that are not URLs or bare anchors: the
    target, relative to the file that links it, must exist;
  * code spans (`...`) whose words look like repository paths: a word whose
    first component is a top-level entry of the tree (src/..., cuda/...,
    tests/...), or a file name with an extension that starts with one
    (README.md), must exist relative to the root or to the file's folder.
    Words with placeholders (<group>, *, $VAR, ...) are skipped, brace lists
    are expanded (kernel_list.{h,cpp}), and a trailing :LINE is dropped.

Prints each missing path with the file and line that names it; exit status 1
if any is missing. Cheap: a few hundred small reads.
"""

import glob
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
SKIP_CHARS = set("<>*$?[]|=")
IGNORED_TOP = {".git"}


def docs(root):
    names = ["README.md", "bench/README.md", "bench/results/README.md"]
    names += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    names += sorted(
        os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "wrappers", "*", "README.md"))
    )
    return [n for n in names if os.path.isfile(os.path.join(root, n))]


def top_level(root):
    return {
        e
        for e in os.listdir(root)
        if e not in IGNORED_TOP and not e.startswith("build") and not e.startswith(".")
    } | {".ci"}


def expand_braces(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(word[: m.start()] + alt + word[m.end() :])
    return out


def path_words(span, tops):
    for word in span.split():
        word = word.strip("\"'(),;:.")
        word = re.sub(r":\d+$", "", word)
        if not word or "..." in word or SKIP_CHARS & set(word) or "://" in word:
            continue
        if word.startswith("docs/_incoming"):
            continue  # other work's drafts: may be empty or absent
        first = word.split("/", 1)[0]
        if "/" in word and first in tops:
            yield from expand_braces(word)
        elif "/" not in word and word in tops and "." in word:
            yield word


SOURCE_EXTS = (".c", ".cpp", ".cu", ".py", ".sh", ".rs", ".go")


def exists(root, doc_dir, path):
    """The path itself, or, for a word without an extension (a program the
    build makes: bench/train, tests/core/test_gemm), its source file."""
    path = path.split("#", 1)[0]
    if not path:
        return True
    for base in (root, doc_dir):
        full = os.path.normpath(os.path.join(base, path))
        if os.path.exists(full):
            return True
        if "." not in os.path.basename(full) and any(os.path.isfile(full + e) for e in SOURCE_EXTS):
            return True
    return False


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    tops = top_level(root)
    missing = []
    checked = 0
    for name in docs(root):
        doc_dir = os.path.dirname(os.path.join(root, name))
        in_fence = False
        with open(os.path.join(root, name), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.lstrip().startswith("```"):
                    in_fence = not in_fence
                    continue
                if in_fence:
                    continue
                for target in LINK.findall(line):
                    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                        continue
                    checked += 1
                    if not os.path.exists(os.path.normpath(os.path.join(doc_dir, target.split("#", 1)[0]))):
                        missing.append(f"{name}:{lineno}: link to {target}")
                for span in CODE.findall(line):
                    for word in path_words(span, tops):
                        checked += 1
                        if not exists(root, doc_dir, word):
                            missing.append(f"{name}:{lineno}: {word}")
    for m in missing:
        print("missing:", m)
    print(f"{checked} paths checked, {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
