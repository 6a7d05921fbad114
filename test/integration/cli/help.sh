#!/usr/bin/env bash
# `imageguard --help` and `imageguard <command> --help`: exit 0, usage on stdout, every flag
# CONTRACT §3 lists for the command mentioned, exit codes described; a usage error exits 2 with
# the usage on stderr. Flags are matched as whole words ("-o" does not match "--output").
set -euo pipefail
IMAGEGUARD=${IMAGEGUARD:-build/imageguard}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ig-help-it.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fails=$((fails + 1)); }

policy="--pattern --extract --exclude --semver --numerical --alphabetical"
common="--config --state-dir --secrets-dir --audit-log --audit-tags --log-format --log-level --concurrency"
declare -A flags=(
	[version]=""
	[eval]="$policy --current -o"
	[tags]="--insecure --ca-file --docker-config $policy -o"
	[check-config]="--config"
	[plan]="$common -o"
	[reconcile]="$common -o"
	[run]="$common --listen"
	[markers]="-o"
	[lint]="--config --mutable-tags --fail-on -o"
	[verify]="--config --kubeconfig"
)
commands="version eval tags check-config plan reconcile run markers lint verify"

# mentions FILE FLAG: FLAG appears as a word of its own (not inside a longer option).
mentions() {
	grep -qE -- "(^|[^-[:alnum:]])$2([^-[:alnum:]]|\$)" "$1"
}

# The top-level help lists every command and exits 0.
if "$IMAGEGUARD" --help >"$tmp/out" 2>"$tmp/err"; then ok "imageguard --help exits 0"; else bad "imageguard --help exits 0"; fi
grep -q '^usage:' "$tmp/out" && ok "imageguard --help prints usage" || bad "imageguard --help prints usage"
grep -qi 'exit' "$tmp/out" && ok "imageguard --help describes the exit status" || bad "imageguard --help describes the exit status"
for c in $commands; do
	grep -qE "^  $c " "$tmp/out" && ok "imageguard --help lists $c" || bad "imageguard --help lists $c"
done
rc=0; "$IMAGEGUARD" >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc == 2 ]] && grep -q '^usage:' "$tmp/err" && ok "imageguard alone: usage on stderr, exit 2" \
	|| bad "imageguard alone: usage on stderr, exit 2 (got $rc)"

for c in $commands; do
	rc=0; "$IMAGEGUARD" "$c" --help >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [[ $rc != 0 ]]; then bad "$c --help exits 0 (got $rc)"; continue; fi
	ok "$c --help exits 0"
	[[ -s $tmp/err ]] && bad "$c --help writes nothing to stderr" || ok "$c --help writes nothing to stderr"
	head -1 "$tmp/out" | grep -q "^usage: imageguard $c" && ok "$c --help starts with usage:" \
		|| bad "$c --help starts with usage: (got: $(head -1 "$tmp/out"))"
	for f in ${flags[$c]}; do
		mentions "$tmp/out" "$f" && ok "$c --help mentions $f" || bad "$c --help mentions $f"
	done
	grep -qi 'exit' "$tmp/out" && ok "$c --help describes its exit status" \
		|| bad "$c --help describes its exit status"
	# An unknown option is a usage error: exit 2, a one-line error on stderr, nothing on stdout.
	rc=0; "$IMAGEGUARD" "$c" --no-such-option >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	if [[ $rc == 2 ]] && grep -q "^imageguard: " "$tmp/err" && [[ ! -s $tmp/out ]]; then
		ok "$c --no-such-option exits 2 with an error"
	else
		bad "$c --no-such-option exits 2 with an error (got $rc: $(head -1 "$tmp/err"))"
	fi
done

# The front binary (src/main.c) runs eval, check-config, markers and lint without the network
# stack and hands tags to imageguard-tags and every other command to imageguard-full; alone, it
# says so and exits 1. imageguard-tags loads libcurl but not libgit2, gpgme or libmicrohttpd.
if ! ldd "$IMAGEGUARD" | grep -Eq 'libcurl|libgit2|libssl|libcrypto'; then
	ok "the front binary links no network or Git library"
else
	bad "the front binary links no network or Git library: $(ldd "$IMAGEGUARD" | grep -E 'libcurl|libgit2' | tr -s ' \n' ' ')"
fi
cp "$IMAGEGUARD" "$tmp/imageguard"
printf '1.0.0\n1.2.0\n' | "$tmp/imageguard" eval --semver '>=1.0.0' >"$tmp/out" 2>"$tmp/err" &&
	[[ $(cat "$tmp/out") == 1.2.0 ]] && ok "the front binary alone runs eval" ||
	bad "the front binary alone runs eval ($(cat "$tmp/err"))"
rc=0; "$tmp/imageguard" plan --help >"$tmp/out" 2>"$tmp/err" || rc=$?
if [[ $rc == 1 ]] && grep -q "^imageguard: plan: cannot run imageguard-full" "$tmp/err"; then
	ok "the front binary without imageguard-full: one-line error, exit 1"
else
	bad "the front binary without imageguard-full: one-line error, exit 1 (got $rc: $(cat "$tmp/err"))"
fi
rc=0; "$tmp/imageguard" tags --help >"$tmp/out" 2>"$tmp/err" || rc=$?
if [[ $rc == 1 ]] && grep -q "^imageguard: tags: cannot run imageguard-tags" "$tmp/err"; then
	ok "the front binary without imageguard-tags: one-line error, exit 1"
else
	bad "the front binary without imageguard-tags: one-line error, exit 1 (got $rc: $(cat "$tmp/err"))"
fi
tagsbin=$(dirname "$IMAGEGUARD")/imageguard-tags
tagslibs=$(ldd "$tagsbin" 2>&1 || true)
if grep -q libcurl <<<"$tagslibs" && ! grep -Eq 'libgit2|libgpgme|libmicrohttpd' <<<"$tagslibs"; then
	ok "imageguard-tags links libcurl, not libgit2, gpgme or libmicrohttpd"
else
	bad "imageguard-tags links libcurl, not libgit2, gpgme or libmicrohttpd: $(grep -E 'libcurl|libgit2|libgpgme|libmicrohttpd|not' <<<"$tagslibs" | tr -s ' \n' ' ')"
fi

if [[ $fails == 0 ]]; then echo "PASS help"; else echo "FAIL help: $fails"; exit 1; fi
