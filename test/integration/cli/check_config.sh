#!/usr/bin/env bash
# `imageguard check-config`: OK on real Flux folders and imageguard configs, every error as
# `imageguard: file:line: message` with exit 2, warnings on stderr, --help, usage errors;
# `provider: aws|gcp|azure` accepted without a warning, `serviceAccountName` a configuration
# error in file mode and accepted with --kube.
set -uo pipefail
IMAGEGUARD=${IMAGEGUARD:-build/imageguard}
SRC=${IMAGEGUARD_SRC:-.}
data="$SRC/test/data/config"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/imageguard-check-config.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

ok() { echo "ok - $1"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $1"; failed=$((failed + 1)); sed 's/^/    /' "$tmp/out" "$tmp/err"; }

# run NAME EXPECTED_RC ARGS...: runs imageguard with stdout/stderr captured
run() {
	local name=$1 want=$2 rc
	shift 2
	"$IMAGEGUARD" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [[ $rc -eq $want ]]; then ok "$name (exit $rc)"; else not_ok "$name: exit $rc, want $want"; fi
}
expect_line() { # NAME FILE REGEX
	if grep -qE -- "$3" "$2"; then ok "$1"; else not_ok "$1: no line matching /$3/"; fi
}

run "flux folder" 0 check-config --config "$data/flux"
expect_line "flux folder: OK on stdout" "$tmp/out" '^configuration OK$'
[[ ! -s $tmp/err ]] && ok "flux folder: nothing on stderr" || not_ok "flux folder: stderr not empty"

run "imageguard kinds" 0 check-config --config="$data/imageguard.yaml"
expect_line "imageguard kinds: OK" "$tmp/out" '^configuration OK$'

run "errors file" 2 check-config --config "$data/errors.yaml"
f="$data/errors.yaml"
expect_line "bad regex at its line" "$tmp/err" "^imageguard: $f:11: ImagePolicy 'default/broken': 'spec.filterTags': pattern"
expect_line "bad range at its line" "$tmp/err" "^imageguard: $f:14: ImagePolicy 'default/broken': 'spec.policy': semver range"
expect_line "rollback without reason" "$tmp/err" "^imageguard: $f:6: ImagePolicy 'default/broken': annotation 'imageguard.io/rollback-to' needs 'imageguard.io/rollback-reason'$"
expect_line "missing repository" "$tmp/err" "^imageguard: $f:8: ImagePolicy 'default/broken': 'spec.imageRepositoryRef': ImageRepository 'default/missing' not found$"
expect_line "image with tag" "$tmp/err" "^imageguard: $f:21: ImageRepository 'default/repo': 'spec.image': image 'ghcr.io/acme/app:latest': a tag is not allowed"
expect_line "bad duration" "$tmp/err" "^imageguard: $f:22: ImageRepository 'default/repo': 'spec.interval': duration '5 minutes'"
expect_line "unknown field warning with a did-you-mean" "$tmp/err" "^imageguard: $f:23: warning: ImageRepository 'default/repo': unknown field 'spec.exclusionlist' \\(ignored\\) \\(did you mean 'exclusionList'\\?\\)$"
if grep -q "provider" "$tmp/err"; then not_ok "provider: generic is accepted silently"; else ok "provider: generic is accepted silently"; fi
expect_line "error count" "$tmp/err" "^imageguard: config '$f': 6 errors$"
[[ $(grep -c ": warning: " "$tmp/err") -eq 1 ]] && ok "one warning" || not_ok "one warning"
[[ ! -s $tmp/out ]] && ok "errors: nothing on stdout" || not_ok "errors: stdout not empty"

# a directory mixing good and bad files: errors from the bad one only, all of them
mkdir -p "$tmp/cfg/apps"
cp "$data/imageguard.yaml" "$tmp/cfg/apps/"
cat >"$tmp/cfg/z.yml" <<'YAML'
apiVersion: imageguard.io/v1alpha1
kind: ImagePolicy
metadata:
  name: app
  namespace: apps
  annotations:
    imageguard.io/rollback-to: "1.0.0"
    imageguard.io/rollback-reason: "x"
    imageguard.io/rollback-until: "next week"
spec:
  imageRepositoryRef:
    name: app
  policy:
    alphabetical:
      order: asc
YAML
run "directory with a bad file" 2 check-config --config "$tmp/cfg"
expect_line "duplicate policy names the first" "$tmp/err" \
	"^imageguard: $tmp/cfg/z.yml:2: ImagePolicy 'apps/app' is already defined at $tmp/cfg/apps/imageguard.yaml:[0-9]+$"
expect_line "bad rollback-until" "$tmp/err" "^imageguard: $tmp/cfg/z.yml:9: ImagePolicy 'apps/app': annotation 'imageguard.io/rollback-until': time 'next week': not an RFC3339"

# warnings alone do not fail
cp "$data/flux/apps/podinfo/image-repo.yaml" "$tmp/repo.yaml"
printf -- '---\napiVersion: imageguard.io/v1alpha1\nkind: Nothing\n' >>"$tmp/repo.yaml"
run "warnings only" 0 check-config --config "$tmp/repo.yaml"
expect_line "warning on stderr" "$tmp/err" "^imageguard: $tmp/repo.yaml:[0-9]+: warning: kind 'Nothing'"
expect_line "no policy warning" "$tmp/err" "warning: no ImagePolicy found"
expect_line "still OK" "$tmp/out" '^configuration OK$'

# provider aws, gcp and azure (issue 19): credentials from the pod's workload identity, accepted
# without a word (no "provider ignored" warning); check-config reads no environment
for pv in aws=123456789012.dkr.ecr.eu-west-1.amazonaws.com/app \
	gcp=europe-docker.pkg.dev/acme/images/app azure=acme.azurecr.io/app; do
	pv_name=${pv%%=*} pv_image=${pv#*=}
	printf 'apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n  name: app\nspec:\n  image: %s\n  provider: %s\n---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata:\n  name: app\nspec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    semver:\n      range: ">=1.0.0"\n' \
		"$pv_image" "$pv_name" >"$tmp/provider-$pv_name.yaml"
	run "provider: $pv_name" 0 check-config --config "$tmp/provider-$pv_name.yaml"
	expect_line "provider: $pv_name: OK" "$tmp/out" '^configuration OK$'
	[[ ! -s $tmp/err ]] && ok "provider: $pv_name: nothing on stderr" || not_ok "provider: $pv_name: stderr not empty"
done

# serviceAccountName needs the Kubernetes API: in file mode the configuration error that says
# so, at its line; with --kube (the objects as run --kube reads them) accepted without a word
sa="$tmp/service-account.yaml"
sed 's/^  provider: aws$/  provider: aws\n  serviceAccountName: puller/' "$tmp/provider-aws.yaml" >"$sa"
run "serviceAccountName in file mode" 2 check-config --config "$sa"
expect_line "serviceAccountName in file mode: exact message" "$tmp/err" \
	"^imageguard: $sa:8: ImageRepository 'default/app': 'spec.serviceAccountName' is not supported: it needs the Kubernetes API \\(the service account's imagePullSecrets\\); run with --kube, or use spec.secretRef or spec.provider in file mode$"
expect_line "serviceAccountName in file mode: counted" "$tmp/err" "^imageguard: config '$sa': 1 error$"
run "serviceAccountName with --kube" 0 check-config --kube --config "$sa"
expect_line "serviceAccountName with --kube: OK" "$tmp/out" '^configuration OK$'
[[ ! -s $tmp/err ]] && ok "serviceAccountName with --kube: nothing on stderr" || not_ok "serviceAccountName with --kube: stderr not empty"

# a path with no object at all is an error
printf 'apiVersion: imageguard.io/v1alpha1\nkind: Nothing\n' >"$tmp/warn.yaml"
run "no objects" 2 check-config --config "$tmp/warn.yaml"
expect_line "no objects: exact message" "$tmp/err" "^imageguard: $tmp/warn.yaml: no ImageRepository, ImagePolicy, GitRepository or ImageUpdateAutomation found$"

# --secrets-dir: every named secret exists and parses; missing ones name the secret and path
sd="$tmp/secrets"
mkdir -p "$sd"
repo="$data/flux/apps/podinfo/image-repo.yaml"
sync="$data/flux/clusters/prod/flux-system/gotk-sync.yaml"
run "secrets missing" 2 check-config --config "$data/flux" --secrets-dir "$sd"
expect_line "registry secret missing: exact message" "$tmp/err" \
	"^imageguard: $repo:9: ImageRepository 'flux-system/podinfo': 'spec.secretRef': secret 'ghcr-auth' not found: '$sd/ghcr-auth' is not a folder$"
expect_line "git secret missing: exact message" "$tmp/err" \
	"^imageguard: $sync:12: GitRepository 'flux-system/flux-system': 'spec.secretRef': secret 'flux-system' not found: '$sd/flux-system' is not a folder$"
expect_line "secrets missing: count" "$tmp/err" "^imageguard: config '$data/flux': 2 errors$"
mkdir -p "$sd/ghcr-auth" "$sd/flux-system"
printf '{"auths": {"ghcr.io": {"auth": "dTpw"}}}' >"$sd/ghcr-auth/.dockerconfigjson"
printf 'KEY\n' >"$sd/flux-system/identity"
run "ssh secret without known_hosts" 2 check-config --config "$data/flux" --secrets-dir "$sd"
expect_line "known_hosts required for ssh: exact message" "$tmp/err" \
	"^imageguard: $sync:12: GitRepository 'flux-system/flux-system': 'spec.secretRef': secret 'flux-system' \\('$sd/flux-system'\\): no 'known_hosts' \\(an SSH host key is never trusted unseen\\)$"
printf 'github.com ssh-ed25519 AAAA\n' >"$sd/flux-system/known_hosts"
run "secrets present" 0 check-config --config "$data/flux" --secrets-dir="$sd"
expect_line "secrets present: OK" "$tmp/out" '^configuration OK$'
printf '{"auths": {"ghcr.io": ' >"$sd/ghcr-auth/.dockerconfigjson"
run "broken dockerconfigjson" 2 check-config --config "$data/flux" --secrets-dir "$sd"
expect_line "broken dockerconfigjson: exact message" "$tmp/err" \
	"^imageguard: $repo:9: ImageRepository 'flux-system/podinfo': 'spec.secretRef': secret 'ghcr-auth' \\('$sd/ghcr-auth'\\): '.dockerconfigjson' is not JSON \\(line 1, column [0-9]+\\)$"
printf '{"auths": {"docker.io": {"auth": "dTpw"}}}' >"$sd/ghcr-auth/.dockerconfigjson"
run "dockerconfigjson for another registry" 2 check-config --config "$data/flux" --secrets-dir "$sd"
expect_line "no entry for the registry: exact message" "$tmp/err" \
	"^imageguard: $repo:9: ImageRepository 'flux-system/podinfo': 'spec.secretRef': secret 'ghcr-auth' \\('$sd/ghcr-auth'\\): '.dockerconfigjson' has no credentials for registry 'ghcr.io'$"
# without --secrets-dir check-config checks the configuration only
run "no --secrets-dir: secrets not checked" 0 check-config --config "$data/flux"

# plan without --secrets-dir: an object naming a secret is an error saying so (never the current
# directory, never anonymous access), and only it and its policies are left out
mkdir -p "$tmp/plan"
cp "$repo" "$data/flux/apps/podinfo/image-policy.yaml" "$tmp/plan/"
ig=$IMAGEGUARD
[[ $ig == */* ]] && ig="$(cd "$(dirname "$ig")" && pwd)/$(basename "$ig")"
(cd "$sd" && "$ig" plan --config "$tmp/plan" --state-dir "$tmp/state" >"$tmp/out" 2>"$tmp/err")
rc=$?
[[ $rc -eq 1 ]] && ok "plan without --secrets-dir (exit 1)" || not_ok "plan without --secrets-dir: exit $rc, want 1"
expect_line "plan without --secrets-dir: exact message" "$tmp/err" \
	"^imageguard: $tmp/plan/image-repo.yaml:9: ImageRepository 'flux-system/podinfo': 'spec.secretRef': secret 'ghcr-auth' needs --secrets-dir \\(its keys are read from the folder <secrets-dir>/ghcr-auth\\)$"
expect_line "plan: the invalid objects counted" "$tmp/err" "^imageguard: config '$tmp/plan': 3 invalid objects left out; the others run$"

# spec.git.commit.signingKey.type: gpg (Flux's default) is honoured, ssh refused naming the field
signing() { # TYPE: the flux folder with the automation signing with a key of TYPE
	rm -rf "$tmp/sign" && cp -r "$data/flux" "$tmp/sign"
	sed -i "s|^    push:|      signingKey:\n        secretRef: {name: signing}\n        type: $1\n    push:|" \
		"$tmp/sign/clusters/prod/flux-system/image-automation.yml"
}
signing gpg
run "signingKey.type gpg" 0 check-config --config "$tmp/sign"
expect_line "signingKey.type gpg: OK" "$tmp/out" '^configuration OK$'
signing ssh
run "signingKey.type ssh" 2 check-config --config "$tmp/sign"
expect_line "signingKey.type ssh: the field and the line named" "$tmp/err" \
	"^imageguard: $tmp/sign/clusters/prod/flux-system/image-automation.yml:22: ImageUpdateAutomation 'flux-system/flux-system': 'spec.git.commit.signingKey.type': 'ssh' is not supported: imageguard signs commits with OpenPGP only"
grep -q "unknown field" "$tmp/err" && not_ok "signingKey.type is a known field" || ok "signingKey.type is a known field"

# usage
run "help" 0 check-config --help
expect_line "help on stdout" "$tmp/out" '^usage: imageguard check-config --config PATH'
run "no --config" 2 check-config
expect_line "no --config message" "$tmp/err" '^imageguard: check-config: --config PATH is required$'
run "unknown flag" 2 check-config --config x --frobnicate
run "missing path" 2 check-config --config "$tmp/nope.yaml"
expect_line "missing path message" "$tmp/err" "^imageguard: config '$tmp/nope.yaml': No such file or directory$"
run "listed in help" 0 --help
expect_line "check-config listed" "$tmp/out" 'check-config'

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
