#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# html_browser.sh - interop: the `--html` report in a real browser, Debian's
# Chromium, headless (--dump-dom reads the page after its script ran,
# --screenshot draws it):
#   - every page loads with no console message and no script error, its
#     script done (body[data-ready="1"]) and every cable of the data found
#     in the drawing (data-edges = data-cables);
#   - the slider changes what is drawn: moved (its input event fired) to
#     the frame where the permutation keeps the most cables busy, many
#     cables are drawn red at full width; moved to the idle tail, none;
#   - the metric menu and, on compare's page, the fabric menu change the
#     colours too (waiting for credits on IB in an incast; utilisation of
#     lossless IB and lossy RoCE at one moment);
#   - a trace run's timeline draws a bar per collective and send;
#   - the screenshot of the busy frame holds thousands more pixels of the
#     saturated red than the idle one's (loosely: colours, not pixels).
# Exit 77 (skipped) when chromium is missing, unless CI=true: then it fails.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	if [ "${CI:-}" = true ]; then
		echo "FAIL: chromium is missing (CI=true: interop tests must run)" >&2
		exit 1
	fi
	echo "skipped: chromium is missing (tools/install-deps.sh installs it)"
	exit 77
fi
# a profile of its own, and no sandbox (root in CI)
chrome() {	# PAGE#HASH, then --dump-dom or --screenshot=FILE
	HOME="$tmp" "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
		--virtual-time-budget=5000 --window-size=1300,1400 "${@:2}" "file://$1" \
		2> "$tmp/chrome.err"
	if grep ':CONSOLE' "$tmp/chrome.err" > "$tmp/console.txt"; then
		fail "$1: the browser's console says: $(head -3 "$tmp/console.txt")"
	fi
}
dom() { chrome "$1" --dump-dom > "$2" || fail "chromium --dump-dom $1 failed: $(tail -2 "$tmp/chrome.err")"; }
run() { "$IBFAB" "$@" > "$tmp/run.out" 2>&1 || fail "ibfab $*: $(tail -2 "$tmp/run.out")"; }

run run --reproducible --html "$tmp/run.html"
run run --reproducible --traffic 'incast:dst=h0,n=8,size=1MiB' --html "$tmp/incast.html"
printf 'ranks 16\nar: allreduce 4MiB\na2a: alltoall 1MiB after=ar\nsend 3 9 2MiB\nsend 1 2 1MiB\n' > "$tmp/j.trace"
run run --reproducible --trace "$tmp/j.trace" --html "$tmp/trace.html"
run compare --reproducible --no-plot --fabrics ib,roce-lossy --traffic 'incast:dst=h0,n=8,size=1MiB' \
	--html "$tmp/cmp.html"

# the frames to look at, from the page's own data: the busiest, the last
python3 - "$tmp/run.html" > "$tmp/frames" <<'PY' || fail "reading the page's data"
import base64, json, re, sys
s = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', s, re.S).group(1))
v = d["views"][0]; e = 2 * len(d["cables"]); u = base64.b64decode(v["util"])
full = [sum(1 for k in range(0, e, 2) if max(u[f * e + k], u[f * e + k + 1]) == 250) for f in range(v["frames"])]
print(max(range(v["frames"]), key=lambda f: (full[f], -f)), v["frames"] - 1, max(full))
PY
read -r busy idle nfull < "$tmp/frames"
dom "$tmp/run.html#slide=$busy" "$tmp/busy.dom"
dom "$tmp/run.html#slide=$idle" "$tmp/idle.dom"
dom "$tmp/incast.html#slide=20&pick=wait" "$tmp/wait.dom"
dom "$tmp/incast.html#slide=20" "$tmp/util.dom"
dom "$tmp/trace.html" "$tmp/trace.dom"
dom "$tmp/cmp.html#slide=10" "$tmp/cmp0.dom"
dom "$tmp/cmp.html#slide=10&fabric=1" "$tmp/cmp1.dom"
chrome "$tmp/run.html#slide=$busy" --screenshot="$tmp/busy.png"
chrome "$tmp/run.html#slide=$idle" --screenshot="$tmp/idle.png"

python3 - "$tmp" "$busy" "$idle" "$nfull" <<'PY' || fail "what the browser drew"
import re, struct, sys, zlib
t, busy, idle, nfull = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
bad = []
RED = "rgb(215,48,39)"
def dom(name):
    s = open(f"{t}/{name}.dom", encoding="utf-8").read()
    body = re.search(r"<body([^>]*)>", s).group(1)
    attrs = dict(re.findall(r'(data-[a-z]+)="([^"]*)"', body))
    if attrs.get("data-ready") != "1": bad.append(f"{name}: the script did not finish ({attrs})")
    if "data-errors" in attrs: bad.append(f"{name}: {attrs['data-errors']} script errors")
    if attrs.get("data-edges") != attrs.get("data-cables"): bad.append(f"{name}: edges {attrs}")
    strokes = re.findall(r'<g id="c\d+" class="edge">.*?<path[^>]*?stroke="([^"]+)"', s, re.S)
    return s, attrs, strokes
s, a, sb = dom("busy")
if a.get("data-frame") != str(busy): bad.append(f"busy: the slider left frame {a.get('data-frame')}, not {busy}")
_, a2, si = dom("idle")
if a2.get("data-frame") != str(idle): bad.append(f"idle: frame {a2.get('data-frame')}, not {idle}")
if len(sb) != 32 or len(si) != 32: bad.append(f"{len(sb)} and {len(si)} cables coloured, not 32")
if sb.count(RED) != nfull or nfull < 8: bad.append(f"busy frame: {sb.count(RED)} red cables, the data has {nfull}")
if RED in si: bad.append("idle frame: a cable drawn saturated")
if sb == si: bad.append("moving the slider changed nothing")
_, aw, sw = dom("wait")
_, au, su = dom("util")
if aw.get("data-metric") != "wait" or sw == su: bad.append(f"the metric menu changed nothing ({aw.get('data-metric')})")
if not any(x != "#cccccc" for x in sw): bad.append("the incast's credit waits show nowhere")
s, at, _ = dom("trace")
bars = len(re.findall(r'<rect[^>]*class="op"', s))
if bars != 4 or 'id="timeline" hidden' in s: bad.append(f"trace: {bars} bars on the timeline, not 4")
s0, a0, c0 = dom("cmp0")
_, a1, c1 = dom("cmp1")
if a1.get("data-view") != "1" or c0 == c1: bad.append(f"the fabric menu changed nothing (view {a1.get('data-view')})")
if s0.count("<option value=") < 6: bad.append("compare: no fabric menu")
def png_pixels(path):
    b = open(path, "rb").read()
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(b):
        n, typ = struct.unpack(">I4s", b[pos:pos + 8]); data = b[pos + 8:pos + 8 + n]
        if typ == b"IHDR": w, h, depth, ctype = struct.unpack(">IIBB", data[:10])
        if typ == b"IDAT": idat += data
        pos += 12 + n
    bpp = 4 if ctype == 6 else 3
    raw, stride, prev, out = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0; up = prev[i]; c = prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + up) & 255
            elif f == 3: line[i] = (line[i] + (a + up) // 2) & 255
            elif f == 4:
                p = a + up - c; pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
        out.append(line); prev = line
    return out, bpp
def reds(path):
    rows, bpp = png_pixels(path)
    return sum(1 for r in rows for i in range(0, len(r), bpp)
               if abs(r[i] - 215) < 20 and abs(r[i + 1] - 48) < 25 and abs(r[i + 2] - 39) < 25)
rb, ri = reds(f"{t}/busy.png"), reds(f"{t}/idle.png")
if rb < ri + 2000: bad.append(f"screenshots: {rb} red pixels in the busy frame, {ri} in the idle one")
print("\n".join(bad) if bad else
      f"ok: frame {busy}: {nfull} of 32 cables saturated, frame {idle}: none; {rb} / {ri} red pixels; "
      f"metric and fabric menus redraw; {bars} timeline bars")
sys.exit(1 if bad else 0)
PY
finish
