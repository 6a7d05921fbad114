#!/usr/bin/env bash
# Containerfile checks that need no container engine: both stages are Debian 12 slim, the image
# runs as uid 65532 with ENTRYPOINT imageguard, the build stage installs the -dev package of every
# pkg-config module the Makefile uses, and the runtime stage installs exactly the runtime library
# packages the binary needs:
#   - every DT_NEEDED library of build/imageguard (ldd + dpkg -S) is a declared package (libc6
#     comes with the base image),
#   - every declared library package is needed by the binary or is the runtime package of a
#     library the Makefile links (the linker's --as-needed drops libraries no code calls yet),
#   - the Makefile's link libraries and the declared library packages are the same set,
#   - every library ldd resolves (the whole transitive set) is in the apt Depends closure of the
#     declared packages, so apt-get pulls what the listed packages do not name.
# Mutated copies of the Containerfile (a package removed, one added) must fail the same check.
set -euo pipefail
SRC=${IMAGEGUARD_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
# The image's binaries are the plain `make` build (no sanitizer runtimes), whatever $IMAGEGUARD
# is. imageguard-full links every library; the front binary imageguard and imageguard-tags link
# subsets (checked below), so the full one's libraries are the image's.
BIN=$SRC/build/imageguard-full
FRONT=$SRC/build/imageguard
TAGS=$SRC/build/imageguard-tags
tmp=$(mktemp -d "${TMPDIR:-/tmp}/imageguard-containerfile.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; failures=$((failures + 1)); }

for tool in readelf ldd dpkg dpkg-query apt-cache pkg-config gcc; do
	command -v "$tool" >/dev/null || { echo "not ok - missing tool $tool"; exit 1; }
done
# Up to date with the sources (a no-op after `make check`); SANITIZE=, COVERAGE= and BUILD= override what
# `make check SANITIZE=1 COVERAGE=1` passes down through MAKEFLAGS and the environment.
make -C "$SRC" --no-print-directory SANITIZE= COVERAGE= BUILD=build build/imageguard build/imageguard-tags \
	build/imageguard-full >"$tmp/make.log" 2>&1 ||
	{ echo "not ok - make build/imageguard build/imageguard-tags build/imageguard-full"; cat "$tmp/make.log"; exit 1; }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort; }
for b in "$FRONT" "$TAGS"; do
	if [[ -z $(comm -23 <(needed "$b") <(needed "$BIN")) ]]; then
		ok "$(basename "$b")'s libraries are a subset of imageguard-full's"
	else
		notok "$(basename "$b") needs libraries imageguard-full does not: $(comm -23 <(needed "$b") <(needed "$BIN") | tr '\n' ' ')"
	fi
done
for b in imageguard-tags imageguard-full; do
	grep -q "^COPY --from=build /src/build/$b /usr/local/libexec/imageguard/$b\$" "$SRC/Containerfile" &&
		ok "the image installs $b where the front binary looks" ||
		notok "Containerfile does not install $b in /usr/local/libexec/imageguard/"
	grep -q "^RUN make .*strip .*build/$b" "$SRC/Containerfile" && ok "the image strips $b" ||
		notok "Containerfile does not strip build/$b"
done

# The package names of one stage's `apt-get install` commands (continuations joined, options
# and shell operators dropped). $1 Containerfile, $2 stage index counted from 1; 0 = the last.
stage_packages() {
	awk -v want="$2" '
		{ line = $0; while (line ~ /\\$/ && (getline nxt) > 0) { sub(/\\$/, " ", line); line = line nxt } }
		line ~ /^[ \t]*FROM[ \t]/ { stage++ }
		{ text[stage] = text[stage] "\n" line }
		END {
			s = (want == 0) ? stage : want
			n = split(text[s], lines, "\n")
			for (i = 1; i <= n; i++) {
				if (lines[i] !~ /^[ \t]*RUN[ \t]/) continue
				m = split(lines[i], w, /[ \t]+/)
				on = 0
				for (j = 1; j <= m; j++) {
					if (w[j] == "install" && j > 1 && w[j-1] ~ /apt-get$/) { on = 1; continue }
					if (w[j] == "&&" || w[j] == ";" || w[j] == "||") { on = 0; continue }
					if (on && w[j] != "" && w[j] !~ /^-/) print w[j]
				}
			}
		}' "$1" | sort -u
}

# The Debian package that ships a library file (usrmerge: ldd says /lib, dpkg may say /usr/lib).
package_of_file() {
	local f out
	for f in "$(readlink -f "$1")" "$1" "/usr$1" "${1#/usr}"; do
		out=$(dpkg -S "$f" 2>/dev/null | head -n1) || continue
		[[ -n $out ]] && { echo "${out%%:*}"; return 0; }
	done
	return 1
}

# True when a package ships a shared library (a lib*.so.* file).
is_library_package() {
	dpkg -L "$1" 2>/dev/null | grep -Eq '/lib[^/]*\.so\.[0-9]'
}

# Packages of the binary's direct DT_NEEDED libraries, resolved through ldd.
needed_packages() {
	local soname path
	for soname in $(readelf -d "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		path=$(ldd "$BIN" | awk -v s="$soname" '$1 == s && $2 == "=>" { print $3 }')
		[[ -n $path ]] || { echo "UNRESOLVED:$soname"; continue; }
		package_of_file "$path" || echo "UNOWNED:$path"
	done | sort -u
}

# Runtime packages of every library the Makefile links (pkg-config --libs-only-l of PKGS).
makefile_packages() {
	local pkgs lib so
	pkgs=$(sed -n 's/^PKGS[ \t]*:=[ \t]*//p' "$SRC/Makefile")
	for lib in $(pkg-config --libs-only-l $pkgs); do
		lib=${lib#-l}
		so=$(gcc -print-file-name="lib$lib.so")
		[[ -e $so ]] || { echo "NOLIB:$lib"; continue; }
		package_of_file "$so" || echo "UNOWNED:$so"
	done | sort -u
}

# The -dev package that ships the .pc file of each pkg-config module in the Makefile's PKGS.
makefile_dev_packages() {
	local pkgs m pc
	pkgs=$(sed -n 's/^PKGS[ \t]*:=[ \t]*//p' "$SRC/Makefile")
	for m in $pkgs; do
		pc=$(pkg-config --path "$m") || { echo "NOPC:$m"; continue; }
		package_of_file "$pc" || echo "UNOWNED:$pc"
	done | sort -u
}

# Every package in the apt Depends/Pre-Depends closure of the given packages.
closure_of() {
	apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$@" 2>/dev/null | grep -v '^[ <]' | sort -u
}

# Packages owning every library ldd resolves for the binary (direct and transitive).
ldd_packages() {
	ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
		while read -r path; do package_of_file "$path" || echo "UNOWNED:$path"; done | sort -u
}

needed=$(needed_packages)
linked=$(makefile_packages)
devs=$(makefile_dev_packages)
all_ldd=$(ldd_packages)
# Non-library runtime packages the image needs, each with its reason:
#   ca-certificates: the CA bundle for https registries and Git remotes.
#   gpg, gpg-agent, gpgconf: the engine GPGME runs to sign commits, the agent that holds the
#   imported key, and the tool that stops it (src/git/gitsign.c).
extras_allowed="ca-certificates gpg gpg-agent gpgconf"

# check_runtime CONTAINERFILE: the runtime-stage list against the binary and the Makefile.
check_runtime() {
	local cf=$1 declared libs=() others=() p rc=0 closure
	declared=$(stage_packages "$cf" 0)
	[[ -n $declared ]] || { echo "  runtime stage installs no packages"; return 1; }
	for p in $declared; do
		if is_library_package "$p"; then libs+=("$p"); else others+=("$p"); fi
	done
	for p in $needed; do
		[[ $p == libc6 ]] && continue
		[[ $p == UNRESOLVED:* || $p == UNOWNED:* ]] && { echo "  cannot map $p"; rc=1; continue; }
		grep -qx "$p" <<<"$declared" || { echo "  binary needs $p, runtime stage lacks it"; rc=1; }
	done
	for p in $linked; do
		[[ $p == NOLIB:* || $p == UNOWNED:* ]] && { echo "  cannot map $p"; rc=1; continue; }
		grep -qx "$p" <<<"$declared" || { echo "  Makefile links $p, runtime stage lacks it"; rc=1; }
	done
	for p in "${libs[@]}"; do
		grep -qx "$p" <<<"$needed" || grep -qx "$p" <<<"$linked" ||
			{ echo "  runtime stage installs $p: neither needed by the binary nor linked by the Makefile"; rc=1; }
	done
	for p in "${others[@]}"; do
		grep -qx "$p" <<<"$(tr ' ' '\n' <<<"$extras_allowed")" ||
			{ echo "  runtime stage installs $p: not a library, not in the justified extras"; rc=1; }
	done
	closure=$( (closure_of $declared; echo libc6) | sort -u)
	for p in $all_ldd; do
		[[ $p == UNOWNED:* ]] && { echo "  cannot map $p"; rc=1; continue; }
		grep -qx "$p" <<<"$closure" || { echo "  ldd loads a library of $p, outside the apt closure of the runtime stage"; rc=1; }
	done
	return $rc
}

cf=$SRC/Containerfile
[[ -f $cf ]] || { echo "not ok - no Containerfile"; exit 1; }
echo "# binary $BIN needs: $(tr '\n' ' ' <<<"$needed")"
echo "# Makefile links: $(tr '\n' ' ' <<<"$linked")"
for p in $linked; do
	grep -qx "$p" <<<"$needed" || echo "# $p: linked by the Makefile, not yet needed by this build (--as-needed)"
done

if out=$(check_runtime "$cf"); then ok "runtime stage packages match the binary and the Makefile"
else notok "runtime stage packages"; echo "$out"; fi

build_pkgs=$(stage_packages "$cf" 1)
missing=""
for p in $devs build-essential pkg-config; do
	grep -qx "$p" <<<"$build_pkgs" || missing+=" $p"
done
if [[ -z $missing ]]; then ok "build stage installs the -dev packages of every Makefile pkg-config module"
else notok "build stage lacks:$missing"; fi

froms=$(grep -cE '^FROM \$\{DEBIAN\}' "$cf")
if grep -qE '^ARG DEBIAN=(docker\.io/library/)?debian:bookworm-slim' "$cf" && [[ $froms -eq 2 ]]; then
	ok "two stages on debian:bookworm-slim"
else notok "stages are not two debian:bookworm-slim stages"; fi
if grep -qx 'USER 65532:65532' "$cf" && grep -q -- '--uid 65532' "$cf"; then ok "runs as uid 65532"
else notok "non-root user 65532"; fi
if grep -qx 'ENTRYPOINT \["/usr/local/bin/imageguard"\]' "$cf" &&
	grep -q '^COPY --from=build /src/build/imageguard /usr/local/bin/imageguard$' "$cf"; then
	ok "ENTRYPOINT is the binary built in the build stage"
else notok "ENTRYPOINT/COPY of the binary"; fi
runtime_text=$(awk '/^FROM /{s++} s==2' "$cf")
if grep -Eq 'build-essential|-dev( |$)' <<<"$runtime_text"; then notok "runtime stage installs build packages"
else ok "runtime stage has no build packages"; fi

# The check must be able to fail: drop a needed library, add a redundant one, add a tool.
sed 's/libcurl4 libyaml-0-2/libyaml-0-2/' "$cf" >"$tmp/drop"
sed 's/ libyaml-0-2 / libyaml-0-2 libnghttp2-14 /' "$cf" >"$tmp/extra"
sed 's/ca-certificates \\/ca-certificates openssh-client \\/' "$cf" >"$tmp/tool"
for m in drop extra tool; do
	if cmp -s "$cf" "$tmp/$m"; then notok "mutation '$m' did not change the Containerfile"; continue; fi
	if check_runtime "$tmp/$m" >"$tmp/$m.out"; then notok "mutation '$m' passed the runtime check"
	else ok "mutation '$m' is rejected: $(head -n1 "$tmp/$m.out" | sed 's/^ *//')"; fi
done

[[ $failures -eq 0 ]] && echo "PASS containerfile" || { echo "FAIL containerfile ($failures)"; exit 1; }
