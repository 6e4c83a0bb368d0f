#!/usr/bin/env python3
"""check_links.py [SOURCE_DIR | --self-test]: fail on a broken relative link in the user docs.

Reads README.md and docs/*.md under SOURCE_DIR (default: two levels up from
this script). Every Markdown link or image whose target is relative (no
scheme, not mailto:) must name a file or directory that exists, and every
'#anchor' must be a heading of the target Markdown file (or of the same file
for a bare '#anchor'), with anchors made as GitHub makes them: lower case,
punctuation other than '-' and '_' dropped, spaces turned into '-', and
'-1', '-2', ... added to repeated headings. Code spans and fenced code blocks
are skipped. Exit status: 0 when every link resolves, 1 otherwise (each
broken link printed as FILE:LINE: TARGET: WHY).
"""
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def strip_code(lines):
    """Yields (number, text) for lines outside fenced blocks, code spans blanked."""
    fence = None
    for number, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fence = stripped[:3]
            continue
        yield number, re.sub(r"`+[^`]*`+", "``", line)


def slug(heading):
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        fence = None
        for line in lines:
            stripped = line.lstrip()
            if fence:
                if stripped.startswith(fence):
                    fence = None
                continue
            if stripped.startswith("```") or stripped.startswith("~~~"):
                fence = stripped[:3]
                continue
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else "%s-%d" % (base, n))
        for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", "\n".join(lines)):
            found.add(m.group(1))
        cache[path] = found
    return cache[path]


def check(root, rel):
    errors = []
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in strip_code(lines):
        targets = [m.group(1) for m in LINK.finditer(line)]
        m = REF_DEF.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if SCHEME.match(target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            if file_part:
                dest = os.path.normpath(os.path.join(os.path.dirname(rel), file_part))
            else:
                dest = rel
            where = "%s:%d: %s" % (rel, number, target)
            full = os.path.join(root, dest)
            if not os.path.exists(full):
                errors.append("%s: no such file %s" % (where, dest))
                continue
            if anchor:
                if not dest.endswith(".md") or os.path.isdir(full):
                    errors.append("%s: anchor into a file that is not Markdown" % where)
                elif anchor not in anchors(full):
                    errors.append("%s: no heading makes #%s in %s" % (where, anchor, dest))
    return errors


def self_test():
    """Checks that the checker itself refuses what it must and accepts the rest."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        def write(rel, text):
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        write("README.md", "# Top\n\n## Waiting in turn (`rlock_x`)\n\n"
              "[a](docs/a.md) [b](#waiting-in-turn-rlock_x)\n"
              "`[not a link](nowhere.md)`\n```\n[nor this](nowhere.md)\n```\n")
        write("docs/a.md", "# A\n\n## Same\n\n## Same\n\n[up](../README.md#top) "
              "[second](#same-1) [w](https://example.com/x.md)\n")
        good = []
        for rel in ("README.md", "docs/a.md"):
            good += check(root, rel)
        write("docs/bad.md", "[f](missing.md) [g](a.md#nope) [h](#nope) "
              "[i](cpp.md#anchor) [j](../README.md#same)\n")
        bad = check(root, "docs/bad.md")
    if good or len(bad) != 5:
        print("check_links self-test failed: accepted-but-refused %r, refused %r" % (good, bad))
        return 1
    print("check_links self-test: passed")
    return 0


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    root = os.path.abspath(root)
    files = ["README.md"]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted("docs/" + n for n in os.listdir(docs) if n.endswith(".md"))
    errors = []
    for rel in files:
        errors += check(root, rel)
    for e in errors:
        print(e)
    print("check_links: %d files, %d broken links" % (len(files), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
