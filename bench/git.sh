#!/usr/bin/env bash
# One image update end to end on a repository of 5,000 manifests (a realistic Deployment each,
# one marker each), pushed to a local bare remote:
#   imageguard: warm clone: fetch + sync (a checkout of the changed paths only), markers through
#               the marker index (only changed blobs read), splice the new tag, commit (the
#               parent's tree with the changed paths replaced), push (bench/git_bench.c)
#   peer way:   git clone --depth 1, grep for the marker, sed, git commit, git push
# Each side applies UPDATES distinct updates in a row; the mean wall and CPU (user + system)
# time per update and the ratios are printed: the wall ratio is the target, the CPU one says how
# much of it survives a loaded machine. Environment: BUILD (build dir), FILES (default 5000), UPDATES (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FILES=${FILES:-5000}
UPDATES=${UPDATES:-5}
make -s "$BUILD/bench/git_bench" >/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/imageguard-bench-git.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The manifests: apps/app-N/deployment.yaml, ~2 KB each.
/usr/bin/python3 bench/manifests.py "$tmp/seed" "$FILES"
test/fixtures/gitpeers.sh bare "$tmp/remote.git" "$tmp/seed" >/dev/null
bytes=$(find "$tmp/seed/apps" -name '*.yaml' -printf '%s\n' | awk '{s += $1} END {print s}')
echo "repository: $FILES manifests, $((bytes / 1024)) KiB; $UPDATES updates per side"

target=$((FILES / 2))
# imageguard: the first open clones (not timed), then UPDATES warm updates
"$BUILD/bench/git_bench" "file://$tmp/remote.git" "$tmp/state" "apps/app-$target" 1.0.1 1 >/dev/null 2>&1
seed=$(git --git-dir="$tmp/remote.git" rev-parse main)
# A controller's passes are an interval apart (minutes); a work tree seconds old is one whose
# timestamps cannot yet vouch for it (Git's racy entries, gitwalk's young directories) and is
# read in full. Let the clone age past that before the timed updates.
sleep 2
out=$("$BUILD/bench/git_bench" "file://$tmp/remote.git" "$tmp/state" "apps/app-$target" 2.0 "$UPDATES" 2>"$tmp/ig.err") ||
	{ echo "bench/git.sh: git_bench failed" >&2; cat "$tmp/ig.err" >&2; exit 1; }
read -r ig ig_cpu <<<"$out"
[[ $(git --git-dir="$tmp/remote.git" rev-list --count main) -eq $((UPDATES + 2)) ]] ||
	{ echo "bench/git.sh: imageguard did not write one commit per update" >&2; exit 1; }
ig_head=$(git --git-dir="$tmp/remote.git" rev-parse main)

# same_tree WHAT FROM TO TAG: the only change FROM..TO is the marked line of the target file,
# now TAG: the rest of the tree is byte for byte the seed's.
same_tree() {
	local want got
	got=$(git --git-dir="$tmp/remote.git" diff --name-only "$2" "$3")
	want="apps/app-$target/deployment.yaml"
	if [[ $got != "$want" ]]; then
		echo "bench/git.sh: $1 changed [$got], want only $want" >&2
		exit 1
	fi
	sed -E "s|(app-$target):1\.0\.0 #|\1:$4 #|" "$tmp/seed/$want" >"$tmp/want.yaml"
	if ! git --git-dir="$tmp/remote.git" show "$3:$want" | cmp -s - "$tmp/want.yaml"; then
		echo "bench/git.sh: $1 wrote another file than the seed with tag $4" >&2
		git --git-dir="$tmp/remote.git" show "$3:$want" | diff -u "$tmp/want.yaml" - | head -20 >&2
		exit 1
	fi
	echo "same tree: $1 changed only $want, to $4"
}
same_tree imageguard "$seed" "$ig_head" "2.0.$((UPDATES - 1))"

# the peer way, per update (CPU: user + system of the shell's children, from `times`)
# `times` runs in this shell (a redirect, no subshell); its second line is the children's
cpu_of_children() { awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); print (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }' "$1"; }
times >"$tmp/times0"
cpu0=$(cpu_of_children "$tmp/times0")
start=$(date +%s%N)
for i in $(seq 1 "$UPDATES"); do
	rm -rf "$tmp/peer"
	git clone -q --depth 1 "file://$tmp/remote.git" "$tmp/peer"
	file=$(grep -rl --include='*.yaml' "\"apps:app-$target\"" "$tmp/peer/apps")
	sed -i -E "s|(image: [^ ]+:)[^ ]+( # \{\"\\\$imagepolicy\": \"apps:app-$target\"\})|\13.0.$i\2|" "$file"
	git -C "$tmp/peer" -c user.name=peer -c user.email=peer@localhost -c gc.auto=0 \
		-c maintenance.auto=false commit -q -am "apps/app-$target: 3.0.$i"
	git -C "$tmp/peer" push -q origin main
done
end=$(date +%s%N)
times >"$tmp/times1"
cpu1=$(cpu_of_children "$tmp/times1")
peer=$(/usr/bin/python3 -c "print(f'{($end - $start) / 1e6 / $UPDATES:.1f}')")
peer_cpu=$(/usr/bin/python3 -c "print(f'{($cpu1 - $cpu0) / $UPDATES:.1f}')")
same_tree "git clone + sed + commit + push" "$seed" main "3.0.$UPDATES"

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "imageguard warm clone: $ig ms per update (CPU $ig_cpu ms)"
echo "git clone --depth 1 + sed + commit + push: $peer ms per update (CPU $peer_cpu ms)"
/usr/bin/python3 -c "r = $peer / $ig; c = $peer_cpu / $ig_cpu; print(f'ratio: {r:.1f}x faster in wall time, {c:.1f}x in CPU (target >= 5x: ' + ('met' if r >= 5 else 'MISSED') + ')')"
