#!/usr/bin/env bash
# `imageguard markers PATH`: text and JSON listings, problems as warnings on stderr, exit codes.
set -euo pipefail
IMAGEGUARD=${IMAGEGUARD:-build/imageguard}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ig-markers-it.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fails=$((fails + 1)); }
check() { # name, then a command that must succeed
	local name=$1; shift
	if "$@"; then ok "$name"; else bad "$name"; fi
}

mkdir -p "$tmp/repo/apps" "$tmp/repo/.git" "$tmp/repo/infra"
cat >"$tmp/repo/apps/web.yaml" <<'Y'
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: web
          image: ghcr.io/x/podinfo:1.2.3 # {"$imagepolicy": "flux-system:podinfo"}
        - name: cache
          image: "localhost:5000/redis:7.0@sha256:1111111111111111111111111111111111111111111111111111111111111111" # {"$imagepolicy": "flux-system:redis"}
Y
cat >"$tmp/repo/infra/kustomization.yml" <<'Y'
images:
  - name: podinfo
    newName: ghcr.io/x/podinfo # {"$imagepolicy": "flux-system:podinfo:name"}
    newTag: '1.2.3' # {"$imagepolicy": "flux-system:podinfo:tag"}
    bad: [a] # {"$imagepolicy": "flux-system:podinfo:tag"}
Y
printf 'a: "open # {"$imagepolicy": "x:y"}\nb: [\n' >"$tmp/repo/infra/broken.yaml"
cp "$tmp/repo/apps/web.yaml" "$tmp/repo/.git/ignored.yaml"
cp "$tmp/repo/apps/web.yaml" "$tmp/repo/apps/notes.txt"

cd "$tmp"
rc=0; "$IMAGEGUARD" markers repo >out.txt 2>err.txt || rc=$?
check "text exit 0" test "$rc" -eq 0
cat >want.txt <<'W'
apps/web.yaml:8 flux-system/podinfo image ghcr.io/x/podinfo:1.2.3
apps/web.yaml:10 flux-system/redis image localhost:5000/redis:7.0@sha256:1111111111111111111111111111111111111111111111111111111111111111
infra/kustomization.yml:3 flux-system/podinfo name ghcr.io/x/podinfo
infra/kustomization.yml:4 flux-system/podinfo tag 1.2.3
W
check "text listing" diff want.txt out.txt
check "warning: non-scalar" grep -qx 'imageguard: infra/kustomization.yml:5: marker on a flow sequence or mapping, not a scalar' err.txt
check "warning: parse error with file:line" grep -qE '^imageguard: infra/broken.yaml:[0-9]+: invalid YAML: ' err.txt
check "two warnings" test "$(wc -l <err.txt)" -eq 2

rc=0; "$IMAGEGUARD" markers repo -o json >out.json 2>/dev/null || rc=$?
check "json exit 0" test "$rc" -eq 0
check "json listing" /usr/bin/python3 - out.json <<'P'
import json, sys
got = json.load(open(sys.argv[1]))
want = [
    {"file": "apps/web.yaml", "line": 8, "policy": "flux-system/podinfo", "part": "image", "value": "ghcr.io/x/podinfo:1.2.3"},
    {"file": "apps/web.yaml", "line": 10, "policy": "flux-system/redis", "part": "image",
     "value": "localhost:5000/redis:7.0@sha256:" + "1" * 64},
    {"file": "infra/kustomization.yml", "line": 3, "policy": "flux-system/podinfo", "part": "name", "value": "ghcr.io/x/podinfo"},
    {"file": "infra/kustomization.yml", "line": 4, "policy": "flux-system/podinfo", "part": "tag", "value": "1.2.3"},
]
sys.exit(0 if got == want else 1)
P
rc=0; "$IMAGEGUARD" markers "$tmp/repo/infra/kustomization.yml" >one.txt 2>/dev/null || rc=$?
check "single file" test "$rc" -eq 0 -a "$(head -1 one.txt)" = "kustomization.yml:3 flux-system/podinfo name ghcr.io/x/podinfo"

mkdir empty
check "no markers: empty json array" test "$("$IMAGEGUARD" markers empty -o json)" = "[]"
check "no markers: no text" test -z "$("$IMAGEGUARD" markers empty)"

rc=0; "$IMAGEGUARD" markers missing >/dev/null 2>err.txt || rc=$?
check "missing PATH exits 2" test "$rc" -eq 2
check "missing PATH message" grep -qx "imageguard: 'missing': no such file or directory" err.txt
rc=0; "$IMAGEGUARD" markers >/dev/null 2>&1 || rc=$?
check "no PATH exits 2" test "$rc" -eq 2
rc=0; "$IMAGEGUARD" markers repo -o yaml >/dev/null 2>&1 || rc=$?
check "bad -o exits 2" test "$rc" -eq 2
rc=0; "$IMAGEGUARD" markers repo --frobnicate >/dev/null 2>&1 || rc=$?
check "unknown option exits 2" test "$rc" -eq 2
rc=0; "$IMAGEGUARD" markers repo/apps/web.yaml/x >/dev/null 2>&1 || rc=$?
check "PATH under a file exits 2" test "$rc" -eq 2
# Permissions bind only non-root users: as root, the check runs as nobody.
mkdir locked && chmod 000 locked
rc=0
if [[ $(id -u) -ne 0 ]]; then
	"$IMAGEGUARD" markers locked >/dev/null 2>&1 || rc=$?
else
	# a copy of the binary in $tmp: the build tree may sit where nobody cannot reach it (a
	# clone in a mktemp -d folder is 0700), which would make the exit 126, not the check's 2
	chmod 755 "$tmp"
	install -m 0755 "$IMAGEGUARD" "$tmp/imageguard-nobody"
	su nobody -s /bin/bash -c "'$tmp/imageguard-nobody' markers '$tmp/locked'" >/dev/null 2>&1 || rc=$?
fi
chmod 700 locked
check "unreadable PATH exits 2" test "$rc" -eq 2
check "--help" bash -c "'$IMAGEGUARD' markers --help | grep -q 'usage: imageguard markers PATH'"
check "listed in imageguard --help" bash -c "'$IMAGEGUARD' --help | grep -q markers"

echo "$fails failed"
[[ $fails -eq 0 ]]
