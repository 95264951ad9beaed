#!/usr/bin/env python3
"""Checks that the C++ snippets of the README and of docs/troubleshooting.md compile and run
as written: each ```cpp block
starts with a `// examples/NAME.cpp` line naming the example program it comes from (built
and run under ctest), and its other lines appear in that file, in order (a snippet may
leave lines out, never change or add one). Usage: check_snippets.py REPO_ROOT."""
import os
import re
import sys

FILE_LINE = re.compile(r"^// (examples/[\w/]+\.cpp)\s*$")


def snippets(readme):
    lines = open(readme, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```cpp":
            start = i + 1
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            yield start + 1, lines[start:i]
        i += 1


def is_subsequence(needle, haystack):
    it = iter(haystack)
    for n in needle:
        for h in it:
            if h == n:
                break
        else:
            return n
    return None


PAGES = ["README.md", "docs/troubleshooting.md"]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    problems, count = [], 0
    for page in PAGES:
        for lineno, body in snippets(os.path.join(root, page)):
            count += 1
            m = FILE_LINE.match(body[0]) if body else None
            if not m:
                problems.append("%s:%d: a C++ snippet must start with '// examples/NAME.cpp'" % (page, lineno))
                continue
            path = os.path.join(root, m.group(1))
            if not os.path.exists(path):
                problems.append("%s:%d: %s does not exist" % (page, lineno, m.group(1)))
                continue
            source = [l.rstrip() for l in open(path, encoding="utf-8").read().splitlines()]
            missing = is_subsequence([l.rstrip() for l in body[1:] if l.strip()], source)
            if missing is not None:
                problems.append("%s:%d: this line is not in %s (in this order): %s" % (page, lineno, m.group(1), missing))
    for p in problems:
        print(p)
    print("doc snippets: %d snippets, %d problems" % (count, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
