#!/usr/bin/env bash
# CI step: generate the default cost report (`modsim report`, embedded defaults) into a
# temporary folder, fail when that fails, then open report.html in headless Chromium and check
# that the charts are drawn: every inline <svg> survives into the DOM with drawn elements, and
# a screenshot is not blank (many distinct colours).
#   scripts/report-check.sh [BUILD_DIR] [-- extra modsim report flags]
# BUILD_DIR defaults to build/ (built by scripts/build.sh when modsim is missing there).
# Chromium (Debian package `chromium`) is installed when missing. Needs a build with Qt 6
# (charts); a build without Qt makes a tables-only report and this script says so and fails.
# Environment: REPORT_CHECK_KEEP=DIR keeps the report and screenshot in DIR;
# REPORT_CHECK_REPORT=DIR checks an already generated report (e.g. scripts/run.sh's report/)
# instead of generating one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
if [[ $# -gt 0 && "$1" != "--" ]]; then build=$(cd "$1" && pwd); shift; fi
[[ "${1:-}" == "--" ]] && shift
extra=("$@")

say() { echo "report-check: $*" >&2; }
fail() { echo "report-check: FAILED: $*" >&2; exit 1; }

modsim="$build/cli/modsim"
if [[ ! -x "$modsim" ]]; then
  say "no $modsim; building"
  "$root/scripts/build.sh" "$build"
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$chromium_bin" ]]; then
  say "installing chromium (missing)"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
  chromium_bin=$(command -v chromium)
fi

work=${REPORT_CHECK_KEEP:-$(mktemp -d /tmp/modsim-report-check.XXXXXX)}
mkdir -p "$work"
[[ -n "${REPORT_CHECK_KEEP:-}" ]] || trap 'rm -rf "$work"' EXIT
out="$work/report"

# 1. The report, with the embedded defaults (MoD 220M on H100 + a quick CPU profile).
if [[ -n "${REPORT_CHECK_REPORT:-}" ]]; then
  out=$(cd "$REPORT_CHECK_REPORT" && pwd)
  say "checking the report in $out"
else
  say "generating the default report into $out"
  start=$(date +%s)
  if ! QT_QPA_PLATFORM=offscreen "$modsim" report --out "$out" "${extra[@]}" >"$work/report.stdout" 2>"$work/report.stderr"; then
    tail -20 "$work/report.stderr" >&2
    fail "modsim report exited with an error"
  fi
  say "report generated in $(( $(date +%s) - start )) s"
fi
for f in report.html report.md tables/flops_by_class.csv tables/sweep.csv; do
  [[ -s "$out/$f" ]] || fail "$f is missing or empty"
done
charts=$(find "$out/charts" -name '*.svg' 2>/dev/null | wc -l)
if [[ "$charts" -eq 0 ]]; then
  grep -q "Charts need Qt 6" "$out/report.html" && fail "this build has no Qt 6: the report has no charts"
  fail "no charts/*.svg written"
fi
grep -Eiq 'https?:|@import|<script|<link' "$out/report.html" && fail "report.html references something external"

# 2. Chromium: the DOM as the browser built it.
chrome=("$chromium_bin" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
        --disable-dev-shm-usage --user-data-dir="$work/chrome-profile")
url="file://$out/report.html"
"${chrome[@]}" --dump-dom "$url" >"$work/dom.html" 2>"$work/chrome-dom.log" || fail "chromium --dump-dom failed"
python3 - "$work/dom.html" "$charts" <<'PY' || fail "the charts are not drawn in the DOM"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
expected = int(sys.argv[2])
figures = re.findall(r'<figure id="chart-([\w-]+)">(.*?)</figure>', dom, re.S)
drawn = 0
for name, body in figures:
    n = len(re.findall(r'<(?:path|polyline|polygon|rect|circle|line)\b', body))
    texts = len(re.findall(r'<text\b', body))
    ok = "<svg" in body and n >= 10 and texts >= 3
    print(f"report-check: chart {name}: {n} shapes, {texts} text elements{'' if ok else '  <- NOT DRAWN'}", file=sys.stderr)
    drawn += ok
sections = re.findall(r'<section id="(\w+)"', dom)
print(f"report-check: DOM: {len(sections)} sections ({', '.join(sections)}), {len(figures)} charts, {drawn} drawn "
      f"(charts/*.svg: {expected})", file=sys.stderr)
sys.exit(0 if drawn == len(figures) == expected and len(sections) >= 10 else 1)
PY

# 3. Chromium: a screenshot of the top of the page (verdict and the first chart) must not be blank.
"${chrome[@]}" --window-size=1280,2400 --screenshot="$work/report.png" "$url" >"$work/chrome-shot.log" 2>&1 ||
  fail "chromium --screenshot failed"
[[ -s "$work/report.png" ]] || fail "no screenshot"
python3 - "$work/report.png" <<'PY' || fail "the screenshot is blank"
# Decodes the PNG with the standard library only (zlib) and counts distinct colours.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), f"unexpected PNG format depth={depth} type={ctype}"
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours = set()
for y in range(h):
    f = raw[y * (stride + 1)]
    row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if f == 1:
        for i in range(bpp, stride): row[i] = (row[i] + row[i - bpp]) & 255
    elif f == 2:
        row = bytearray((a + b) & 255 for a, b in zip(row, prev))
    elif f == 3:
        for i in range(stride): row[i] = (row[i] + (((row[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
    elif f == 4:
        for i in range(stride):
            a = row[i - bpp] if i >= bpp else 0; b = prev[i]; c = prev[i - bpp] if i >= bpp else 0
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 4 == 0:
        for x in range(0, stride, bpp * 4): colours.add(bytes(row[x:x + 3]))
    prev = row
print(f"report-check: screenshot {w}x{h}, {len(colours)} distinct colours (sampled)", file=sys.stderr)
sys.exit(0 if len(colours) >= 64 else 1)
PY
say "OK: $(ls "$out" | wc -l) entries in the report folder, $charts charts drawn, screenshot not blank"
