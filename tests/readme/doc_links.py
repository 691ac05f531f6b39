#!/usr/bin/env python3
"""Every relative link of README.md and of the Markdown files under docs/ leads somewhere: the
file or directory it names exists, and a `#anchor` names a heading of that file, as GitHub
spells a heading's anchor. Links to other sites are not followed. Code blocks and inline code
are not read. Exit 0 when every link holds; otherwise each broken one is named, file and line.

  tests/readme/doc_links.py --source .
"""

import argparse
import re
import sys
from pathlib import Path

kLink = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
kHeading = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
kFence = re.compile(r"^\s*(```|~~~)")


def documents(source):
    root = Path(source)
    return [root / "README.md"] + sorted((root / "docs").rglob("*.md"))


def prose(path):
    """The text of `path` with fenced code blocks blanked and inline code removed; the lines
    stay where they were, so a match's line number is the file's."""
    fenced = False
    lines = []
    for line in path.read_text().splitlines():
        if kFence.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else re.sub(r"`[^`]*`", "", line))
    return "\n".join(lines)


def slug(heading):
    """GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found = set()
        seen = {}
        fenced = False
        for line in path.read_text().splitlines():
            if kFence.match(line):
                fenced = not fenced
                continue
            heading = None if fenced else kHeading.match(line)
            if heading:
                base = slug(heading.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def check(source):
    broken = []
    root = Path(source).resolve()
    for document in documents(source):
        shown = document.resolve().relative_to(root)
        text = prose(document)
        for match in kLink.finditer(text):
            number = text.count("\n", 0, match.start()) + 1
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:
            path_part, _, anchor = target.partition("#")
            path = (document.parent / path_part).resolve() if path_part else document.resolve()
            if not path.exists():
                broken.append(f"{shown}:{number}: {target}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{shown}:{number}: {target}: no heading '#{anchor}' in "
                              f"{path.relative_to(root)}")
    return broken


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    broken = check(args.source)
    for line in broken:
        print(line, file=sys.stderr)
    if broken:
        print(f"{len(broken)} broken link(s)", file=sys.stderr)
        return 1
    print(f"{len(documents(args.source))} documents, every relative link holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
