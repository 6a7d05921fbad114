#!/usr/bin/env bash
# `imageguard lint`: golden manifests (JSON and stderr compared byte for byte), text output,
# exit codes, --fail-on, --mutable-tags, usage errors, and bad input that must not crash.
set -uo pipefail
: "${IMAGEGUARD:?} ${IMAGEGUARD_SRC:?}"
golden="$IMAGEGUARD_SRC/test/golden/lint"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/imageguard-lint.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok - $1"; }
not_ok() { fail=$((fail + 1)); echo "not ok - $1"; }

# run NAME WANT_RC ARGS...: runs lint, keeps stdout/stderr in $tmp/out, $tmp/err
run() {
	local name=$1 want=$2 rc
	shift 2
	"$IMAGEGUARD" lint "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [[ $rc -eq $want ]]; then ok "$name (exit $rc)"; else
		not_ok "$name: exit $rc, want $want"; sed 's/^/    /' "$tmp/err" | head -5; fi
}

# usage_run NAME 2 ARGS...: run, then the error on stderr is exactly one line "imageguard: ...".
usage_run() {
	run "$@"
	if [[ $(wc -l <"$tmp/err") -eq 1 ]] && grep -q '^imageguard: ' "$tmp/err"; then
		ok "$1: the error is one line"
	else
		not_ok "$1: the error is one line"; sed 's/^/    /' "$tmp/err" | head -5
	fi
}

same() { # name got want
	if cmp -s "$2" "$3"; then ok "$1"; else not_ok "$1"; diff -u "$3" "$2" | head -40 | sed 's/^/    /'; fi
}

# Golden cases: input/ linted with the case's args; JSON and stderr must match exactly.
for dir in "$golden"/*/; do
	c=$(basename "$dir")
	args=()
	[[ -f $dir/args ]] && mapfile -t args <"$dir/args"
	args=("${args[@]//@CASE@/${dir%/}}") # @CASE@ in args: the case's directory
	want_rc=0
	grep -q '"severity": "error"' "$dir/expected.json" && want_rc=1
	run "golden $c" "$want_rc" "$dir/input" -o json "${args[@]}"
	same "golden $c: json" "$tmp/out" "$dir/expected.json"
	same "golden $c: stderr" "$tmp/err" "$dir/expected.stderr"
	/usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert isinstance(a, list)
for f in a: assert sorted(f) == ["file","image","line","message","rule","severity"], f' "$tmp/out" &&
		ok "golden $c: valid JSON with the contract's fields" || not_ok "golden $c: JSON shape"
done

# Text output: one line per finding, FILE:LINE: severity rule: message (image).
run "text output" 1 "$golden/workloads/input"
same "text output matches" "$tmp/out" "$golden/workloads/expected.txt"
if [[ ! -s $tmp/out ]] || grep -qvE '^[^:]+:[0-9]+: (error|warning) (mutable-tag|pull-policy|no-digest|unknown-policy): .* \(.+\)$' "$tmp/out"; then
	not_ok "text lines have the contract's shape"; else ok "text lines have the contract's shape"; fi

# --fail-on: warnings alone pass by default and fail with --fail-on warning.
mkdir -p "$tmp/warn"
printf 'kind: Pod\nspec:\n  containers:\n  - image: ghcr.io/a/b:1.2.3\n' >"$tmp/warn/p.yaml"
run "warnings only: exit 0" 0 "$tmp/warn"
run "warnings only, --fail-on warning: exit 1" 1 "$tmp/warn" --fail-on warning
run "warnings only, --fail-on=error: exit 0" 0 --fail-on=error "$tmp/warn"
run "pinned, --fail-on warning: exit 0" 0 "$golden/pinned/input" --fail-on warning
[[ $(cat "$tmp/out") == "" ]] && ok "pinned: no text output" || not_ok "pinned: no text output"
run "pinned json" 0 -o json "$golden/pinned/input"
[[ $(cat "$tmp/out") == "[]" ]] && ok "pinned: json is []" || not_ok "pinned: json is [] (got $(cat "$tmp/out"))"

# --mutable-tags replaces the list.
printf 'kind: Pod\nspec:\n  containers:\n  - image: ghcr.io/a/b:stable\n' >"$tmp/warn/p.yaml"
run "stable is mutable by default" 1 "$tmp/warn"
grep -q 'error mutable-tag' "$tmp/out" && ok "stable: mutable-tag" || not_ok "stable: mutable-tag"
run "--mutable-tags latest: stable passes" 0 "$tmp/warn" --mutable-tags latest
run "--mutable-tags '': stable passes" 0 "$tmp/warn" --mutable-tags ''
run "--mutable-tags stable,x" 1 "$tmp/warn" --mutable-tags=x,stable

# --config: a missing one is exit 2; an invalid one is exit 2 after linting with what is valid.
pol="$golden/policies"
run "--config as a file" 1 "$pol/input" --config "$pol/config/policies.yaml" -o json
same "--config file = --config directory" "$tmp/out" "$pol/expected.json"
run "without --config no unknown-policy" 1 "$pol/input" -o json
grep -q unknown-policy "$tmp/out" && not_ok "no unknown-policy without --config" || ok "no unknown-policy without --config"
run "missing --config" 2 "$pol/input" --config "$tmp/nope"
grep -q "^imageguard: .*nope.*" "$tmp/err" && ok "missing --config: error names it" || not_ok "missing --config: error names it"
mkdir -p "$tmp/badcfg"
printf 'apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata: {name: p}\nspec: {}\n' >"$tmp/badcfg/p.yaml"
run "invalid --config" 2 "$pol/input" --config "$tmp/badcfg" -o json
grep -q "^imageguard: .*p.yaml:[0-9]*: " "$tmp/err" && ok "invalid --config: file:line errors" || not_ok "invalid --config: file:line errors ($(head -2 "$tmp/err"))"
# lint works beside config errors (issue 35): the findings are still printed, unknown-policy
# judged by what the config defines (only 'default/p', invalid).
/usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); r={f["rule"] for f in a}
assert {"mutable-tag", "unknown-policy"} <= r, r' "$tmp/out" &&
	ok "invalid --config: the findings are printed beside the errors" || not_ok "invalid --config: findings beside errors ($(head -c 300 "$tmp/out"))"
# A config with one valid policy and one invalid: unknown-policy judged by both (a marker naming
# the invalid policy is not unknown: its error is already said), exit 2 for the config.
mkdir -p "$tmp/halfcfg"
cp "$pol/config/policies.yaml" "$tmp/halfcfg/"
printf 'apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata: {name: worker, namespace: flux-system}\nspec: {imageRepositoryRef: {name: web}, policy: {semver: {range: "not a range"}}}\n' >"$tmp/halfcfg/worker.yaml"
run "half-valid --config" 2 "$pol/input" --config "$tmp/halfcfg" -o json
grep -q "^imageguard: .*worker.yaml:[0-9]*: .*range" "$tmp/err" && ok "half-valid --config: the error names worker.yaml:line" || not_ok "half-valid --config: error ($(head -3 "$tmp/err"))"
/usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); u=sorted((f["file"],f["line"]) for f in a if f["rule"]=="unknown-policy")
assert u == [("apps/web.yaml",14),("kustomization.yaml",5)], u' "$tmp/out" &&
	ok "half-valid --config: unknown-policy for the undefined policies only" || not_ok "half-valid --config: unknown-policy ($(head -c 400 "$tmp/out"))"
run "single file with --config" 1 "$pol/input/apps/web.yaml" --config "$pol/config" -o json
/usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); u=[f for f in a if f["rule"]=="unknown-policy"]
assert [(f["file"],f["line"]) for f in u] == [("web.yaml",12),("web.yaml",14)], u' "$tmp/out" &&
	ok "single file with --config: unknown-policy by base name" || not_ok "single file with --config"

# A single file as PATH: file names relative to it are its base name.
run "single file" 1 "$golden/workloads/input/jobs.yaml" -o json
/usr/bin/python3 -c 'import json,sys; assert {f["file"] for f in json.load(open(sys.argv[1]))} == {"jobs.yaml"}' "$tmp/out" &&
	ok "single file: file is the base name" || not_ok "single file: file is the base name"

# Usage errors and an unusable PATH: exit 2 with one line on stderr.
run "--help" 0 --help
grep -q '^usage: imageguard lint PATH' "$tmp/out" && ok "--help prints usage to stdout" || not_ok "--help usage"
usage_run "no PATH" 2
usage_run "two PATHs" 2 "$tmp/warn" "$tmp/warn"
usage_run "missing PATH" 2 "$tmp/does-not-exist"
grep -q "^imageguard: '.*does-not-exist': No such file or directory$" "$tmp/err" &&
	ok "missing PATH: one-line error" || not_ok "missing PATH: one-line error ($(cat "$tmp/err"))"
usage_run "PATH is a device" 2 /dev/null
usage_run "bad -o" 2 "$tmp/warn" -o yaml
usage_run "bad --fail-on" 2 "$tmp/warn" --fail-on info
usage_run "bad --mutable-tags" 2 "$tmp/warn" --mutable-tags 'ok,not a tag'
usage_run "unknown option" 2 "$tmp/warn" --frobnicate
usage_run "option without value" 2 "$tmp/warn" --fail-on

# Bad input never crashes: NUL bytes, random bytes, a file over the cap, deep nesting,
# a directory named *.yaml, an empty directory. Each is a problem line, the rest still linted.
mkdir -p "$tmp/bad/dir.yaml" "$tmp/empty"
printf 'kind: Pod\nspec:\n  containers:\n  - image: a\0:latest\n' >"$tmp/bad/nul.yaml"
head -c 200000 /dev/urandom >"$tmp/bad/random.yaml"
/usr/bin/python3 -c 'import sys; sys.stdout.write("a: " + "["*100000 + "]"*100000 + "\n")' >"$tmp/bad/deep.yaml"
{ printf 'kind: Pod\nspec:\n  containers:\n'; yes '  - image: ghcr.io/a/b:latest' | head -c 17000000; } >"$tmp/bad/huge.yaml"
printf 'kind: Pod\nspec:\n  containers:\n  - image: ghcr.io/a/ok:latest\n' >"$tmp/bad/ok.yaml"
run "bad input: still lints the good file" 1 "$tmp/bad" -o json
[[ $(grep -c '"file": "ok.yaml"' "$tmp/out") -eq 2 ]] && ok "bad input: good file's findings" || not_ok "bad input: good file's findings"
grep -q '^imageguard: huge.yaml: file larger than 16 MiB, skipped$' "$tmp/err" && ok "huge file reported" || not_ok "huge file reported"
grep -q '^imageguard: nul.yaml:[0-9]*: does not parse as YAML' "$tmp/err" && ok "NUL bytes reported" || not_ok "NUL bytes reported"
grep -q '^imageguard: random.yaml:[0-9]*: ' "$tmp/err" && ok "random bytes reported" || not_ok "random bytes reported"
[[ $(grep -c '' "$tmp/err") -ge 3 ]] && ! grep -qv '^imageguard: ' "$tmp/err" && ok "problems are imageguard: lines" || not_ok "problems are imageguard: lines"
run "empty directory" 0 "$tmp/empty" -o json
[[ $(cat "$tmp/out") == "[]" ]] && ok "empty directory: []" || not_ok "empty directory: []"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
