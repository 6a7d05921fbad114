#!/usr/bin/env bash
# `imageguard eval` as a process: stdin handling, text and JSON output, verdicts, exit codes,
# and bad input (invalid regex/range, NUL bytes, invalid UTF-8, a 1 MB line).
set -uo pipefail
IG=${IMAGEGUARD:?IMAGEGUARD must name the binary}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ig-eval.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { echo "ok - $1"; pass=$((pass + 1)); }
notok() { echo "not ok - $1"; fail=$((fail + 1)); }

# run NAME WANT_RC WANT_STDOUT STDIN ARGS...: checks exit code and exact stdout.
run() {
	local name=$1 want_rc=$2 want_out=$3 input=$4 out rc
	shift 4
	out=$(printf '%b' "$input" | "$IG" eval "$@" 2>"$tmp/err")
	rc=$?
	if [[ $rc -eq $want_rc && $out == "$want_out" ]]; then
		ok "$name"
	else
		notok "$name: rc $rc (want $want_rc), stdout '$out' (want '$want_out'), stderr: $(cat "$tmp/err")"
	fi
}

# json NAME WANT_RC PYTHON_EXPR STDIN ARGS...: stdout parsed as JSON into `d`, EXPR must be true.
json() {
	local name=$1 want_rc=$2 expr=$3 input=$4 rc
	shift 4
	printf '%b' "$input" | "$IG" eval -o json "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [[ $rc -eq $want_rc ]] && /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"latest", "candidates", "skipped", "current", "verdict"}, d
sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/out" "$expr"; then
		ok "$name"
	else
		notok "$name: rc $rc (want $want_rc), stdout $(cat "$tmp/out"), stderr $(cat "$tmp/err")"
	fi
}

# stderr_has NAME WANT_RC SUBSTRING STDIN ARGS...
stderr_has() {
	local name=$1 want_rc=$2 want=$3 input=$4 rc
	shift 4
	printf '%b' "$input" | "$IG" eval "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	if [[ $rc -eq $want_rc && $(cat "$tmp/err") == *"$want"* && $(wc -l <"$tmp/err") -le 1 ]]; then
		ok "$name"
	else
		notok "$name: rc $rc (want $want_rc), stderr '$(cat "$tmp/err")' lacks '$want'"
	fi
}

run "semver picks the newest" 0 "v1.10.0" 'v1.2.0\nv1.10.0\nv1.9.3\n' --semver '>=1.0.0'
run "readme example" 0 "v1.10.0" 'v1.2.0\nv1.10.0\nv1.9.3\n' --semver '>=1.0.0' --current v1.9.3
run "--flag=value form" 0 "v1.9.3" 'v1.2.0\nv1.10.0\nv1.9.3\n' --semver='<1.10' -o text
run "CRLF and blank lines" 0 "1.2.0" '\r\n1.0.0\r\n\r\n   \n1.2.0\r\n' --semver '*'
run "no trailing newline" 0 "2.0.0" '1.0.0\n2.0.0' --semver '*'
run "prereleases excluded" 0 "1.0.0" '1.0.0\n1.1.0-rc.1\n' --semver '>=1.0.0'
run "prereleases named" 0 "1.1.0-rc.1" '1.0.0\n1.1.0-rc.1\n' --semver '>=1.0.0-0'
run "ties by byte-wise tag" 0 "v1.0.0" '1.0.0\nv1.0.0\n1.0.0+b\n' --semver '>=1'
run "ties whatever the order" 0 "v1.0.0" 'v1.0.0\n1.0.0+b\n1.0.0\n' --semver '>=1'
run "numerical 17 digits" 0 "20240501123456789" '20240501123456788\n20240501123456789\n' --numerical asc
run "numerical desc" 0 "-1.5" '3\n-1.5\n2.25\n' --numerical desc
run "numerical ParseFloat syntax" 0 "1e3" '999.5\n1e3\n-Inf\n.5\n' --numerical asc
run "extract is the first match's template only" 0 "main-abc-1600000000-arm64" \
	'main-abc-1600000000-arm64\nmain-def-1500000000\n' \
	--pattern '^main-[a-f0-9]+-(?P<ts>[0-9]+)' --extract '$ts' --numerical asc
run "zero-padded tags are no candidates (CONTRACT 6)" 0 "2025.7.3" \
	'2025.07.03\n2025.7.3\n2025.06.30\nV2026.1.1\n2026.01.01\n01.4.0\n' --semver '>=0'
run "extract timestamp" 0 "main-bbbbbbb-1712000001" \
	'main-aaaaaaa-1712000000\nmain-bbbbbbb-1712000001\nlatest\n' \
	--pattern '^main-[a-f0-9]+-(?P<ts>[0-9]+)$' --extract '$ts' --numerical asc
run "alphabetical calver" 0 "2024.12.01" '2024.05.01\n2024.12.01\n2023.11.30\n' --alphabetical asc
run "default exclusion" 0 "v1" 'v1\nsha256-abc.sig\n' --alphabetical asc
run "--exclude" 0 "v1" 'v1\nzz\n' --exclude '^z' --alphabetical asc
run "signature tags never count, whatever --exclude" 0 "v1" \
	'v1\nsha256-abc.sig\nsha256-abc.att\nsha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\nzz\n' \
	--exclude '^z' --alphabetical desc

json "json fields" 0 'd == {"latest": "v1.10.0", "candidates": 3, "skipped": 1, "current": None, "verdict": None}' \
	'v1.2.0\nv1.10.0\nv1.9.3\nlatest\nsha256-x.sig\n' --semver '>=1.0.0'
json "duplicates folded" 0 'd["candidates"] == 2' 'v1\nv2\nv1\nv2\nv1\n' --alphabetical asc
json "verdict forward" 0 'd["verdict"] == "forward" and d["current"] == "v1.9.3"' \
	'v1.2.0\nv1.10.0\nv1.9.3\n' --semver '>=1.0.0' --current v1.9.3
json "verdict same" 0 'd["verdict"] == "same"' 'v1.2.0\nv1.10.0\n' --semver '>=1.0.0' --current v1.10.0
json "verdict backward (stale list)" 0 'd["verdict"] == "backward" and d["latest"] == "v1.2.0"' \
	'v1.1.0\nv1.2.0\n' --semver '>=1.0.0' --current v1.10.0
json "verdict incomparable" 0 'd["verdict"] == "incomparable"' 'v1.2.0\n' --semver '>=1.0.0' --current latest
json "verdict same for a respelling" 0 'd["verdict"] == "same" and d["latest"] == "v1.3.0"' \
	'1.3.0\nv1.3.0\n' --semver '>=1.0.0' --current 1.3.0
json "verdict backward for a loose spelling ahead" 0 'd["verdict"] == "backward"' \
	'1.9.0\n' --semver '>=1.0.0' --current v2
json "verdict backward for a narrowed range" 0 'd["verdict"] == "backward"' \
	'1.9.0\n2.1.0\n' --semver '<2' --current 2.1.0
json "no candidate" 1 'd["latest"] is None and d["candidates"] == 0 and d["skipped"] == 2' \
	'latest\nmain\n' --semver '>=1.0.0'
json "empty input" 1 'd["latest"] is None and d["candidates"] == 0' '' --semver '>=1.0.0'
json "json escapes" 0 'd["latest"] == "caf\u00e9" + chr(34) + "x"' 'caf\xc3\xa9"x\n' --alphabetical asc

# unreadable lines: skipped, counted, one warning line, never a crash
json "NUL byte line skipped" 0 'd["latest"] == "v2" and d["skipped"] == 1' 'v1\nv\x00 9\nv2\n' --alphabetical asc
json "invalid UTF-8 skipped" 0 'd["latest"] == "v1" and d["skipped"] == 2' 'v1\n\xff\xfe\n\xc3(\n' --alphabetical asc
head -c 1048576 /dev/zero | tr '\0' 'z' >"$tmp/big"
{ printf 'v1\n'; cat "$tmp/big"; printf '\nv2\n'; } >"$tmp/in"
if out=$("$IG" eval -o json --alphabetical asc <"$tmp/in" 2>"$tmp/err") &&
	[[ $out == '{"latest": "v2", "candidates": 2, "skipped": 1, "current": null, "verdict": null}' ]] &&
	grep -q 'line 2 (longer than 4096 bytes)' "$tmp/err"; then
	ok "1 MB line skipped"
else
	notok "1 MB line skipped: $out $(cat "$tmp/err")"
fi
stderr_has "unreadable warning" 0 "skipped 1 unreadable line(s), first at line 2 (NUL byte)" \
	'v1\n\x00\n' --alphabetical asc

# usage and invalid input: exit 2, one line on stderr
stderr_has "no candidate message" 1 "imageguard: eval: no candidate" 'latest\n' --semver '>=1'
stderr_has "numerical over a non-number fails (Flux)" 1 "tag 'latest' passes the filter but is not a number" \
	'3\nlatest\n' --numerical asc
json "numerical failure picks nothing" 1 'd["latest"] is None and d["candidates"] == 1' '3\nlatest\n' --numerical asc
stderr_has "invalid regex" 2 "pattern '(': missing closing parenthesis at offset 1" 'v1\n' --pattern '(' --alphabetical asc
stderr_has "invalid exclude" 2 "exclude '[z-a]'" 'v1\n' --exclude '[z-a]' --alphabetical asc
stderr_has "invalid range" 2 "semver range '>=1.0<2'" 'v1\n' --semver '>=1.0<2'
stderr_has "invalid extract" 2 "group 'nope' does not exist" 'v1\n' --pattern '(?P<x>.)' --extract '$nope' --alphabetical asc
stderr_has "no ordering flag" 2 "one of --semver, --numerical, --alphabetical is required" 'v1\n'
stderr_has "pattern without order" 2 "is required" 'v1\n' --pattern '^v'
stderr_has "two ordering flags" 2 "only one of" 'v1\n' --semver '*' --alphabetical asc
stderr_has "bad direction" 2 "expected asc or desc" 'v1\n' --numerical up
stderr_has "missing value" 2 "option '--semver': missing value" 'v1\n' --semver
stderr_has "bad output" 2 "expected text or json" 'v1\n' --semver '*' -o yaml
stderr_has "unknown argument" 2 "'--frobnicate': unknown argument" 'v1\n' --semver '*' --frobnicate
stderr_has "current not UTF-8" 2 "not valid UTF-8" 'v1\n' --semver '*' --current "$(printf '\xff')"

# Text output streams the list in 1 MiB blocks; JSON reads it whole: over several blocks, with
# duplicates, equal versions spelled apart and a numerical policy's non-number in a late block,
# both pick alike and only the first spelling of the top version wins, as in one read.
/usr/bin/python3 -c '
import sys
out = sys.stdout
for k in range(400000):
    out.write("%d.%d.%d\n" % (k % 7, k % 1000, k % 13))
out.write("v9.9.9\n9.9.9\nv9.9.9\n")
for k in range(100000):
    out.write("1.%d.0\n" % k)
out.write("x-not-a-number\n")
for k in range(100000):
    out.write("%d\n" % k)
' >"$tmp/many"
for spec in "--semver >=1.0.0" "--alphabetical asc" "--alphabetical desc" "--numerical asc"; do
	# shellcheck disable=SC2086
	text=$("$IG" eval $spec <"$tmp/many" 2>/dev/null; echo "rc=$?")
	# shellcheck disable=SC2086
	js=$("$IG" eval -o json $spec <"$tmp/many" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print((d["latest"] + "\n" if d["latest"] else "") + "rc=" + ("0" if d["latest"] else "1"))')
	if [[ $text == "$js" ]]; then ok "streamed pick = whole pick ($spec: ${text//$'\n'/ })"; else notok "streamed pick ($spec): text '$text', json '$js'"; fi
done
if [[ $("$IG" eval --semver '>=1.0.0' <"$tmp/many") == v9.9.9 ]]; then ok "streamed: first spelling of the top version"; else notok "streamed: first spelling of the top version"; fi
{ seq 300000; echo x-not-a-number; echo y-neither; seq 5; } >"$tmp/nums"
"$IG" eval --numerical asc <"$tmp/nums" >"$tmp/out" 2>"$tmp/err"
if [[ $? -eq 1 && ! -s $tmp/out ]] && grep -q "tag 'x-not-a-number' passes the filter but is not a number" "$tmp/err"; then
	ok "streamed: a non-number in a late block fails a numerical policy, naming the first"
else
	notok "streamed numerical over a non-number: $(cat "$tmp/out" "$tmp/err")"
fi

if out=$("$IG" eval --help) && [[ $out == *"usage: imageguard eval"* ]]; then ok "--help"; else notok "--help"; fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
