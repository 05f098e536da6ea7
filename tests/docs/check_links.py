#!/usr/bin/env python3
"""Checks the relative links of the documentation: README.md and docs/*.md.

    python3 tests/docs/check_links.py SOURCE_ROOT

Every Markdown link [text](target) (and image, and reference definition [name]: target) outside
code must lead to a file or folder that exists, relative to the file that links (a target starting
with / is relative to SOURCE_ROOT), inside SOURCE_ROOT. A #anchor into a .md file (or a bare
#anchor, into the linking file) must match one of that file's headings, slugged as GitHub does:
lowercase, punctuation other than - and _ dropped, each space a -, and -1, -2, ... after repeats.
http://, https:// and mailto: links are not checked.

Prints one line per broken link, "file:line: target: why", and exits 1 if there is any; else prints
how many links it checked and exits 0. Python's standard library only.
"""

import os
import re
import sys
import urllib.parse

INLINE_LINK = re.compile(r"!?\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(?P<target><[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[(?P<name>[^\]]+)\]:\s*(?P<target><[^>]*>|\S+)")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
EXTERNAL = ("http://", "https://", "mailto:")


def blank_code_spans(line):
    """The line with each inline code span replaced by spaces (links are not read inside code)."""
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def prose_lines(text):
    """(line number, line) of every line outside fenced code blocks, code spans blanked."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip()[len(match.group(1)):].strip():
                fence = None
            continue
        yield number, blank_code_spans(line)


def heading_text(raw):
    """What GitHub renders of a heading's source: links as their text, code without backticks."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", raw)
    text = re.sub(r"<[^>]+>", "", text)
    return text.strip()


def slug(text):
    """GitHub's anchor for a heading (github-slugger): lowercase, only letters, digits, _, - and
    spaces kept, then each space a -."""
    kept = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def anchors(path, cache={}):
    """The anchors of a Markdown file's headings, repeats numbered as GitHub does."""
    if path in cache:
        return cache[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found, seen = set(), {}
    previous = None
    fence = None
    for line in text.split("\n"):
        match = FENCE.match(line)
        if fence is None and match:
            fence, previous = match.group(1), None
            continue
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        heading = None
        atx = ATX_HEADING.match(line)
        if atx:
            heading = atx.group(2) or ""
        elif previous and SETEXT_UNDERLINE.match(line) and not previous.lstrip().startswith(("-", "|", ">")):
            heading = previous
        if heading is not None:
            base = slug(heading_text(heading))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
            previous = None
        else:
            previous = line if line.strip() else None
    cache[path] = found
    return found


def links(path):
    """(line number, target) of every link of a Markdown file, outside code."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for number, line in prose_lines(text):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            yield number, definition.group("target").strip("<>")
            continue
        for match in INLINE_LINK.finditer(line):
            yield number, match.group("target").strip("<>")


def problem(root, source, target):
    """Why a link of `source` to `target` is broken, or None."""
    path_part, _, anchor = target.partition("#")
    path_part = urllib.parse.unquote(path_part)
    if not path_part:
        resolved = source
    elif path_part.startswith("/"):
        resolved = os.path.normpath(os.path.join(root, path_part.lstrip("/")))
    else:
        resolved = os.path.normpath(os.path.join(os.path.dirname(source), path_part))
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(resolved)]) != real_root:
        return "outside the source tree"
    if not os.path.exists(resolved):
        return f"no such file or folder ({os.path.relpath(resolved, root)})"
    if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
        if urllib.parse.unquote(anchor).lower() not in anchors(resolved):
            return f"no heading with the anchor #{anchor} in {os.path.relpath(resolved, root)}"
    return None


def main(argv):
    if len(argv) != 2:
        print("usage: check_links.py SOURCE_ROOT", file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))
    checked, broken = 0, 0
    for source in files:
        if not os.path.isfile(source):
            print(f"{os.path.relpath(source, root)}: missing")
            broken += 1
            continue
        for number, target in links(source):
            if target.startswith(EXTERNAL):
                continue
            checked += 1
            why = problem(root, source, target)
            if why:
                print(f"{os.path.relpath(source, root)}:{number}: {target}: {why}")
                broken += 1
    if broken:
        print(f"{broken} broken link(s) of {checked} checked in {len(files)} files")
        return 1
    print(f"{checked} relative links checked in {len(files)} files: all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
