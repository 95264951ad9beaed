#!/usr/bin/env python3
"""Checks that the README and every page under docs/ stand on their own: each relative
Markdown link (and image) resolves to a file or folder inside the repository, and no
page points outside it (a `../` path that leaves the repository, in a link or in code).
Usage: check_links.py REPO_ROOT. Exit status 1 with one line per broken link."""
import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# A path in the prose or inline code that climbs out of the repository, e.g.
# `../shared/DESIGN.md` (fenced blocks show programs' output, with their own working
# directories, and are not checked for this).
OUTSIDE = re.compile(r"(?<![\w./])\.\./[\w./-]+")


def pages(root):
    yield os.path.join(root, "README.md")
    for dirpath, _, files in os.walk(os.path.join(root, "docs")):
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(dirpath, f)


def inside(root, path):
    root = os.path.realpath(root)
    return os.path.realpath(path) == root or os.path.realpath(path).startswith(root + os.sep)


def check(root):
    problems = []
    for page in pages(root):
        text = open(page, encoding="utf-8").read()
        rel_page = os.path.relpath(page, root)
        fenced = False
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            for m in LINK.finditer("" if fenced else line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a URL or an anchor on the same page
                path = os.path.normpath(os.path.join(os.path.dirname(page), target.split("#")[0]))
                if not inside(root, path):
                    problems.append("%s:%d: link leaves the repository: %s" % (rel_page, lineno, target))
                elif not os.path.exists(path):
                    problems.append("%s:%d: link to a missing file: %s" % (rel_page, lineno, target))
            for m in OUTSIDE.finditer("" if fenced else line):
                path = os.path.normpath(os.path.join(os.path.dirname(page), m.group(0)))
                if not inside(root, path):
                    problems.append("%s:%d: path outside the repository: %s" % (rel_page, lineno, m.group(0)))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    problems = check(root)
    for p in problems:
        print(p)
    n = sum(1 for _ in pages(root))
    print("docs links: %d pages, %d problems" % (n, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
