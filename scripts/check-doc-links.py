#!/usr/bin/env python3
"""scripts/check-doc-links.py [ROOT]: every relative link [..](path#anchor) in README.md and
docs/*.md (outside code blocks) names a file that exists and, with an anchor, the GitHub slug of
one of that file's headings. Prints the broken ones; exit 1 if any. ROOT: the repository root
(default: the one holding this script)."""
import glob, os, re, sys, unicodedata

def slug(text):
    t = re.sub(r"`|\*\*|\*|\[|\]\([^)]*\)", "", text).strip().lower()
    out = []
    for ch in t:
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN" or cat[0] == "M":
            out.append("-" if ch == " " else ch)
    return "".join(out)

def anchors(path):
    seen, res, fence = {}, set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        m = re.match(r"(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            res.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
    return res

root = os.path.relpath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
bad = checked = 0
for f in files:
    fence = False
    for no, line in enumerate(open(f, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            checked += 1
            if not os.path.exists(dest):
                print(f"{f}:{no}: {target}: no file {dest}"); bad += 1
            elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
                print(f"{f}:{no}: {target}: no heading with anchor #{anchor} in {dest}"); bad += 1
print(f"{checked} relative links checked, {bad} broken", file=sys.stderr)
sys.exit(1 if bad else 0)
