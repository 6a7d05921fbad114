#!/usr/bin/env bash
# `make install DESTDIR=... PREFIX=...` (the real target, not a copy by hand) puts the three
# binaries where src/main.c looks for them: the installed front binary runs version (handed to
# imageguard-full), eval (itself) and tags --help (imageguard-tags).
set -euo pipefail
src=${IMAGEGUARD_SRC:-$PWD}
build=${IMAGEGUARD_BUILD:-$src/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ig-install-it.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fails=$((fails + 1)); }

prefix=/opt/ig
make -C "$src" --no-print-directory BUILD="$(realpath --relative-to="$src" "$build")" \
	install DESTDIR="$tmp/root" PREFIX="$prefix" >"$tmp/make.log" 2>&1 ||
	{ cat "$tmp/make.log"; echo "FAIL install: make install failed"; exit 1; }
bin=$tmp/root$prefix/bin/imageguard
tagsbin=$tmp/root$prefix/libexec/imageguard/imageguard-tags
full=$tmp/root$prefix/libexec/imageguard/imageguard-full
[[ -x $bin ]] && ok "make install puts imageguard in PREFIX/bin" || bad "make install puts imageguard in PREFIX/bin"
[[ -x $tagsbin ]] && ok "make install puts imageguard-tags in PREFIX/libexec/imageguard" ||
	bad "make install puts imageguard-tags in PREFIX/libexec/imageguard"
[[ -x $full ]] && ok "make install puts imageguard-full in PREFIX/libexec/imageguard" ||
	bad "make install puts imageguard-full in PREFIX/libexec/imageguard"
# Nothing else is installed, and nothing outside DESTDIR.
extra=$(cd "$tmp/root" && find . -type f | sort | grep -v -e "^.$prefix/bin/imageguard\$" \
	-e "^.$prefix/libexec/imageguard/imageguard-tags\$" -e "^.$prefix/libexec/imageguard/imageguard-full\$" || true)
[[ -z $extra ]] && ok "make install installs only the three binaries" || bad "make install installs only the three binaries: $extra"

if "$bin" version >"$tmp/out" 2>"$tmp/err" && grep -q '^imageguard ' "$tmp/out"; then
	ok "the installed imageguard runs version through imageguard-full"
else
	bad "the installed imageguard runs version ($(cat "$tmp/err"))"
fi
if printf '1.0.0\n1.10.0\n1.9.0\n' | "$bin" eval --semver '>=1.0.0' >"$tmp/out" 2>"$tmp/err" &&
	[[ $(cat "$tmp/out") == 1.10.0 ]]; then
	ok "the installed imageguard runs eval"
else
	bad "the installed imageguard runs eval (got '$(cat "$tmp/out")': $(cat "$tmp/err"))"
fi
if "$bin" tags --help >"$tmp/out" 2>"$tmp/err" && grep -q '^usage: imageguard tags' "$tmp/out"; then
	ok "the installed imageguard runs tags --help"
else
	bad "the installed imageguard runs tags --help ($(cat "$tmp/out" "$tmp/err"))"
fi
# Without imageguard-tags, tags fails with one line (so the check above ran imageguard-tags)
# while the other commands still run.
rm "$tagsbin"
rc=0; "$bin" tags --help >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc == 1 && $(wc -l <"$tmp/err") == 1 ]] && grep -q '^imageguard: tags: cannot run imageguard-tags' "$tmp/err" &&
	ok "an install missing imageguard-tags fails tags with one line" ||
	bad "an install missing imageguard-tags fails tags with one line (got $rc: $(cat "$tmp/err"))"
"$bin" version >/dev/null 2>"$tmp/err" && ok "an install missing imageguard-tags still runs version" ||
	bad "an install missing imageguard-tags still runs version ($(cat "$tmp/err"))"
# Without imageguard-full, a one-line error (the failure mode the old install had).
rm "$full"
rc=0; "$bin" version >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc == 1 && $(wc -l <"$tmp/err") == 1 ]] && grep -q 'cannot run imageguard-full' "$tmp/err" &&
	ok "an install missing imageguard-full fails with one line" ||
	bad "an install missing imageguard-full fails with one line (got $rc: $(cat "$tmp/err"))"

if [[ $fails == 0 ]]; then echo "PASS install"; else echo "FAIL install: $fails"; exit 1; fi
