#!/usr/bin/env bash
# Kubernetes manifests: `kubectl kustomize manifests/` builds (the base: run --kube, two replicas
# with leader election, rolling updates), the Flux example and the file-mode overlay build (as
# Flux's kustomize-controller does, without load restrictions), every YAML file under manifests/
# and examples/ parses, and the built Deployment keeps its hardening (non-root, read-only root,
# no capabilities, no privilege escalation, RuntimeDefault seccomp, probes, resources, state on
# emptyDir), its egress-only-to-DNS/443/22/6443 NetworkPolicy (80/9090 only into flux-system),
# exactly the RBAC of its mode, and (file mode) secret mounts that match the configuration's
# secretRefs. The base and the Flux example need no Secret made by hand (issue 16: every Secret
# a pod references is optional or made by the build); the opt-in push webhook (the component
# manifests/webhook, on the base, on the file-mode overlay and uncommented in the Flux example)
# adds its flags and its token's Secret and nothing else. Every flag in the Deployments' args is
# one `imageguard run --help` lists. Mutated copies of the base, of the overlay and of the
# component must fail the checks.
set -euo pipefail
SRC=${IMAGEGUARD_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
PY=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/imageguard-manifests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; failures=$((failures + 1)); }

command -v kubectl >/dev/null || { echo "not ok - kubectl missing (scripts/install-deps installs kubernetes-client)"; exit 1; }
"$PY" -c 'import yaml' 2>/dev/null || { echo "not ok - python3-yaml missing (scripts/install-deps)"; exit 1; }

cat >"$tmp/check.py" <<'PYEOF'
"""Checks on YAML files and on kustomize output; prints one problem per line, exits 1 on any."""
import re
import sys
import yaml

problems = []


def bad(msg):
    problems.append(msg)


def parse_files(paths):
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            bad(f"{p}: does not parse: {e}".replace("\n", " "))
            continue
        for d in docs:
            if not isinstance(d, dict):
                bad(f"{p}: a document is not a mapping")
            elif ("kind" in d) != ("apiVersion" in d):
                bad(f"{p}: a document has kind or apiVersion without the other")


SECRET_KEYS = {".dockerconfigjson", "username", "password", "bearerToken", "identity",
               "identity.pub", "known_hosts", "ca.crt", "tls.crt", "tls.key", "passphrase"}
# file mode (examples/file-mode): objects from the ConfigMap, Secrets mounted.
RUN_ARGS = ["run", "--config", "/etc/imageguard", "--secrets-dir", "/etc/imageguard-secrets",
            "--state-dir", "/var/lib/imageguard", "--listen", "0.0.0.0:8080", "--log-format", "json",
            "--audit-log", "-", "--verify-interval", "5m", "--no-cross-namespace-refs"]
# run --kube (the base, the Flux example): objects and Secrets from the API server.
KUBE_ARGS = ["run", "--kube", "--enable-leader-election", "--state-dir", "/var/lib/imageguard",
             "--listen", "0.0.0.0:8080", "--log-format", "json", "--audit-log", "-",
             "--verify-interval", "5m", "--events-addr",
             "http://notification-controller.flux-system.svc.cluster.local./",
             "--no-cross-namespace-refs"]
# the opt-in component manifests/webhook (a flavour "...+webhook") appends these and mounts
# the Secret imageguard-webhook, the one Secret it needs made by hand
WEBHOOK_ARGS = ["--webhook-listen", "0.0.0.0:8081", "--webhook-token-file",
                "/etc/imageguard-webhook/token"]
WEBHOOK_SECRET = "imageguard-webhook"
KUBE_RULES = {("image.toolkit.fluxcd.io", "imagerepositories", "list"),
              ("image.toolkit.fluxcd.io", "imagerepositories", "watch"),
              ("image.toolkit.fluxcd.io", "imagepolicies", "list"),
              ("image.toolkit.fluxcd.io", "imagepolicies", "watch"),
              ("image.toolkit.fluxcd.io", "imageupdateautomations", "get"),
              ("image.toolkit.fluxcd.io", "imageupdateautomations", "list"),
              ("image.toolkit.fluxcd.io", "imageupdateautomations", "watch"),
              ("image.toolkit.fluxcd.io", "imageupdateautomations/status", "patch"),
              ("source.toolkit.fluxcd.io", "gitrepositories", "list"),
              ("source.toolkit.fluxcd.io", "gitrepositories", "watch"),
              ("", "namespaces", "list"), ("", "namespaces", "watch"),
              ("", "secrets", "get"), ("", "events", "create"), ("", "events", "patch"),
              ("apps", "deployments", "get"), ("", "serviceaccounts", "get"),
              ("", "serviceaccounts/token", "create")}
LEADER_RULES = {("coordination.k8s.io", "leases", "get"),
                ("coordination.k8s.io", "leases", "create"),
                ("coordination.k8s.io", "leases", "update"),
                ("coordination.k8s.io", "leases", "list"),
                ("coordination.k8s.io", "leases", "watch")}  # a standby's watch of the Lease
IMAGEGUARD_API = "imageguard.io/v1alpha1"
FLUX_APIS = {"image.toolkit.fluxcd.io/v1beta1", "image.toolkit.fluxcd.io/v1beta2",
             "image.toolkit.fluxcd.io/v1", "source.toolkit.fluxcd.io/v1beta2",
             "source.toolkit.fluxcd.io/v1"}
CONFIG_KINDS = {"ImageRepository", "ImagePolicy", "GitRepository", "ImageUpdateAutomation"}


def mebibytes(q):
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    for u, f in units.items():
        if str(q).endswith(u):
            return float(str(q)[: -len(u)]) * f
    return float(q) / (1024 * 1024)


def one(objs, kind, name=None):
    found = [o for o in objs if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)]
    if len(found) != 1:
        bad(f"expected one {kind} {name or ''}, found {len(found)}")
        return None
    return found[0]


def check_deployment(dep, kube=False, webhook=False):
    spec = dep["spec"]
    pod = spec["template"]["spec"]
    # --kube: two replicas, one leader (a Lease), rolling updates; file mode: one writer
    want = (2, "RollingUpdate") if kube else (1, "Recreate")
    if (spec.get("replicas"), spec.get("strategy", {}).get("type")) != want:
        bad(f"Deployment replicas/strategy are {spec.get('replicas')}/"
            f"{spec.get('strategy', {}).get('type')}, expected {want[0]}/{want[1]}")
    if not kube and spec.get("strategy", {}).get("rollingUpdate"):
        bad("a Recreate Deployment keeps rollingUpdate settings")
    if pod.get("serviceAccountName") != "imageguard":
        bad("Deployment does not run as ServiceAccount imageguard")
    psc = pod.get("securityContext", {})
    if psc.get("runAsNonRoot") is not True:
        bad("pod securityContext.runAsNonRoot is not true")
    if not isinstance(psc.get("runAsUser"), int) or psc.get("runAsUser") == 0:
        bad("pod securityContext.runAsUser is not a non-zero uid")
    if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        bad("pod securityContext.seccompProfile.type is not RuntimeDefault")
    containers = pod.get("containers", [])
    if len(containers) != 1:
        bad("Deployment does not have exactly one container")
        return
    c = containers[0]
    sc = c.get("securityContext", {})
    if sc.get("readOnlyRootFilesystem") is not True:
        bad("container readOnlyRootFilesystem is not true")
    if sc.get("allowPrivilegeEscalation") is not False:
        bad("container allowPrivilegeEscalation is not false")
    caps = sc.get("capabilities", {})
    if caps.get("drop") != ["ALL"] or caps.get("add"):
        bad("container capabilities do not drop ALL (or add some)")
    if sc.get("privileged"):
        bad("container is privileged")
    if sc.get("seccompProfile", {"type": "RuntimeDefault"}).get("type") != "RuntimeDefault":
        bad("container seccompProfile overrides RuntimeDefault")
    if c.get("command"):
        bad("container overrides the image ENTRYPOINT")
    want_args = (KUBE_ARGS if kube else RUN_ARGS) + (WEBHOOK_ARGS if webhook else [])
    if c.get("args") != want_args:
        bad(f"container args are {c.get('args')}, expected {want_args}")
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    if ports.get("http-metrics") != 8080:
        bad("container port http-metrics is not 8080")
    if ports.get("http-webhook") != 8081:
        bad("container port http-webhook is not 8081")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c.get(probe, {}).get("httpGet", {})
        port = get.get("port")
        if get.get("path") != path or (port != 8080 and ports.get(port) != 8080):
            bad(f"{probe} is not an HTTP GET of {path} on port 8080")
    res = c.get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    if "memory" not in req or "memory" not in lim:
        bad("memory requests/limits missing")
    elif mebibytes(req["memory"]) > mebibytes(lim["memory"]):
        bad("memory request above limit")
    if "cpu" not in req:
        bad("cpu request missing")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    # the webhook's own token (imageguard's, not a Flux object's) only with the component
    want_mounts = [("/var/lib/imageguard", "emptyDir"), ("/tmp", "emptyDir")]
    if webhook:
        want_mounts.append(("/etc/imageguard-webhook", "secret"))
    if kube:
        if set(mounts) != {p for p, _ in want_mounts}:
            bad(f"--kube mounts {sorted(mounts)}: Flux's objects and Secrets come from the API "
                "only (the webhook component's token aside)")
    else:
        want_mounts += [("/etc/imageguard", "configMap"), ("/etc/imageguard-secrets", "projected")]
    for path, kind in want_mounts:
        m = mounts.get(path)
        if m is None:
            bad(f"nothing mounted at {path}")
            continue
        if kind not in volumes.get(m["name"], {}):
            bad(f"{path} is not a {kind} volume")
        if kind in ("configMap", "projected") and m.get("readOnly") is not True:
            bad(f"{path} is not mounted read-only")
    return volumes.get(mounts.get("/etc/imageguard-secrets", {}).get("name"), {})


def hand_made_secrets(objs):
    """Secrets a pod template of the build needs that the build does not make: the user would
    have to create them by hand before the pods can start. Optional references do not count
    (the kubelet starts the pod without them), nor Secrets the build itself contains."""
    made = {(o["metadata"].get("namespace"), o["metadata"]["name"])
            for o in objs if o.get("kind") == "Secret"}
    need = set()
    for o in objs:
        tmpl = (o.get("spec") or {}).get("template") if o.get("kind") != "Pod" else o
        pod = (tmpl or {}).get("spec")
        if not isinstance(pod, dict):
            continue
        ns = o["metadata"].get("namespace")
        refs = []  # (secret name, optional)
        for v in pod.get("volumes") or []:
            if "secret" in v:
                refs.append((v["secret"].get("secretName"), v["secret"].get("optional")))
            for src in (v.get("projected") or {}).get("sources") or []:
                if "secret" in src:
                    refs.append((src["secret"].get("name"), src["secret"].get("optional")))
        for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
            for e in c.get("env") or []:
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    refs.append((ref.get("name"), ref.get("optional")))
            for e in c.get("envFrom") or []:
                if e.get("secretRef"):
                    refs.append((e["secretRef"].get("name"), e["secretRef"].get("optional")))
        refs += [(s.get("name"), False) for s in pod.get("imagePullSecrets") or []]
        need |= {n for n, optional in refs if optional is not True and (ns, n) not in made}
    return need


def mounted_secrets(volume):
    """{secret name: set of keys}, checking each lands in <name>/<key> (CONTRACT §4)."""
    out = {}
    for src in volume.get("projected", {}).get("sources", []):
        s = src.get("secret")
        if s is None:
            bad("a projected source is not a Secret")
            continue
        name = s["name"]
        items = s.get("items")
        if not items:
            bad(f"secret {name}: no items, keys would land at the folder root, not in {name}/")
            continue
        for it in items:
            if it["path"] != f"{name}/{it['key']}":
                bad(f"secret {name}: key {it['key']} mounted at {it['path']}, not {name}/{it['key']}")
            if it["key"] not in SECRET_KEYS:
                bad(f"secret {name}: key {it['key']} is not a key imageguard reads")
            out.setdefault(name, set()).add(it["key"])
    return out


def config_documents(cm):
    docs = []
    for key, text in (cm.get("data") or {}).items():
        try:
            docs += [(key, d) for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as e:
            bad(f"ConfigMap key {key}: does not parse: {e}".replace("\n", " "))
    return docs


def check_config(cm, secrets, flavour):
    docs = config_documents(cm)
    ours = [(k, d) for k, d in docs if d.get("kind") in CONFIG_KINDS]
    kinds = {d["kind"] for _, d in ours}
    if kinds != CONFIG_KINDS:
        bad(f"configuration kinds {sorted(kinds)}, expected all of {sorted(CONFIG_KINDS)}")
    for key, d in ours:
        api = d.get("apiVersion")
        if flavour == "imageguard" and api != IMAGEGUARD_API:
            bad(f"{key}: {d['kind']} has apiVersion {api}, expected {IMAGEGUARD_API}")
        if flavour == "flux" and api not in FLUX_APIS:
            bad(f"{key}: {d['kind']} has apiVersion {api}, not a Flux one")
    refs = set()
    for key, d in ours:
        spec = d.get("spec") or {}
        for field in ("secretRef", "certSecretRef"):
            if isinstance(spec.get(field), dict):
                refs.add(spec[field]["name"])
    if refs != set(secrets):
        bad(f"secrets referenced by the configuration {sorted(refs)} != mounted {sorted(secrets)}")


def check_network_policy(np, pod_labels):
    spec = np["spec"]
    sel = spec.get("podSelector", {}).get("matchLabels", {})
    if not sel or any(pod_labels.get(k) != v for k, v in sel.items()):
        bad("NetworkPolicy does not select the imageguard pod")
    if "Egress" not in spec.get("policyTypes", []):
        bad("NetworkPolicy does not restrict egress")
    allowed = set()
    for rule in spec.get("egress", []):
        if not rule.get("ports"):
            bad("an egress rule has no ports: it allows every port")
        for p in rule.get("ports", []):
            allowed.add((p.get("port"), p.get("protocol", "TCP")))
    want = {(53, "UDP"), (53, "TCP"), (443, "TCP"), (22, "TCP"), (6443, "TCP"), (80, "TCP"),
            (9090, "TCP")}
    if allowed != want:
        bad(f"egress ports {sorted(allowed)}, expected {sorted(want)}")
    # the notification-controller's ports only into flux-system
    for rule in spec.get("egress", []):
        ports = {p.get("port") for p in rule.get("ports", [])}
        if ports & {80, 9090}:
            to = rule.get("to") or []
            if ports != {80, 9090} or not to or any(
                    (t.get("namespaceSelector") or {}).get("matchLabels") !=
                    {"kubernetes.io/metadata.name": "flux-system"} for t in to):
                bad(f"egress to {sorted(ports)} is not only to namespace flux-system")
    # ingress: the metrics/health port only from named scraping namespaces (issue 12), the
    # webhook port (8081, issue 18) only from named registry namespaces; one port per rule
    if "Ingress" not in spec.get("policyTypes", []):
        bad("NetworkPolicy does not restrict ingress")
    seen = set()
    for rule in spec.get("ingress", []):
        ports = {(p.get("port"), p.get("protocol", "TCP")) for p in rule.get("ports", [])}
        if ports not in ({(8080, "TCP")}, {(8081, "TCP")}):
            bad(f"ingress ports {sorted(ports)}, expected the metrics port 8080 or the webhook port 8081, one per rule")
        seen |= ports
        peers = rule.get("from") or []
        if not peers or any(not (p.get("namespaceSelector") or {}).get("matchLabels")
                            for p in peers):
            bad(f"ingress admits {sorted(ports)} from anywhere: expected named namespaces")
    if seen != {(8080, "TCP"), (8081, "TCP")}:
        bad(f"ingress rules cover {sorted(seen)}, expected the metrics and webhook ports")


def check_leader_rbac(objs):
    role = one(objs, "Role", "imageguard-leader")
    binding = one(objs, "RoleBinding", "imageguard-leader")
    if not role or not binding:
        return
    granted = {(g, r, v) for rule in role.get("rules", []) for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}
    if granted != LEADER_RULES:
        bad(f"Role imageguard-leader: extra {sorted(granted - LEADER_RULES)}, "
            f"missing {sorted(LEADER_RULES - granted)}")
    if role["metadata"].get("namespace") != "imageguard":
        bad("Role imageguard-leader is not in namespace imageguard (the Lease's)")
    if binding["roleRef"] != {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                              "name": "imageguard-leader"} or binding.get("subjects") != [
            {"kind": "ServiceAccount", "name": "imageguard", "namespace": "imageguard"}]:
        bad("RoleBinding imageguard-leader does not bind the ServiceAccount imageguard")


def check_kube_rbac(objs):
    role = one(objs, "ClusterRole", "imageguard-kube")
    binding = one(objs, "ClusterRoleBinding", "imageguard-kube")
    check_leader_rbac(objs)
    if not role or not binding:
        return
    granted = {(g, r, v) for rule in role.get("rules", []) for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}
    if granted != KUBE_RULES:
        bad(f"ClusterRole imageguard-kube: extra {sorted(granted - KUBE_RULES)}, "
            f"missing {sorted(KUBE_RULES - granted)}")
    if binding["roleRef"]["name"] != "imageguard-kube" or binding.get("subjects") != [
            {"kind": "ServiceAccount", "name": "imageguard", "namespace": "imageguard"}]:
        bad("ClusterRoleBinding imageguard-kube does not bind the ServiceAccount imageguard")


def check_rbac(objs):
    role = one(objs, "ClusterRole", "imageguard-verify")
    binding = one(objs, "ClusterRoleBinding", "imageguard-verify")
    if not role or not binding:
        return
    resources = set()
    for r in role.get("rules", []):
        if set(r.get("verbs", [])) - {"get", "list"}:
            bad(f"ClusterRole grants {r['verbs']}: only get/list allowed")
        resources |= set(r.get("resources", []))
    want = {"pods", "deployments", "statefulsets", "daemonsets", "replicasets", "jobs"}
    if resources != want:
        bad(f"ClusterRole resources {sorted(resources)}, expected {sorted(want)}")
    if binding["roleRef"]["name"] != role["metadata"]["name"]:
        bad("ClusterRoleBinding does not bind the ClusterRole")
    subj = binding.get("subjects", [])
    if subj != [{"kind": "ServiceAccount", "name": "imageguard", "namespace": "imageguard"}]:
        bad(f"ClusterRoleBinding subjects {subj}")


def check_build(path, flavour):
    with open(path, encoding="utf-8") as f:
        objs = [d for d in yaml.safe_load_all(f) if d is not None]
    flavour, _, extra = flavour.partition("+")
    webhook = extra == "webhook"
    for kind in ("Namespace", "ServiceAccount", "Service", "NetworkPolicy"):
        one(objs, kind)
    for o in objs:
        if o["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding") and \
                o["metadata"].get("namespace") != "imageguard":
            bad(f"{o['kind']} {o['metadata']['name']} is not in namespace imageguard")
    dep = one(objs, "Deployment", "imageguard")
    if not dep:
        return
    if flavour == "kube":
        if [o for o in objs if o["kind"] == "ConfigMap"]:
            bad("--kube builds a ConfigMap: Flux's objects come from the API server")
        check_deployment(dep, kube=True, webhook=webhook)
        check_kube_rbac(objs)
        # the base and the Flux example start with nothing made by hand (issue 16); the webhook
        # component needs its token and nothing else
        need = hand_made_secrets(objs)
        want = {WEBHOOK_SECRET} if webhook else set()
        if need != want:
            bad(f"Secrets to create by hand before the pods start: {sorted(need)}, expected "
                f"{sorted(want) or 'none'} (a Secret volume must be optional or made by the build)")
    else:
        cm = one(objs, "ConfigMap", "imageguard-config")
        if not cm:
            return
        secrets = mounted_secrets(check_deployment(dep, webhook=webhook) or {})
        check_config(cm, secrets, flavour)
        # file mode mounts the Secrets its configuration names (made by hand, as the README
        # says), the webhook component its token, and nothing else
        need = hand_made_secrets(objs)
        want = set(secrets) | ({WEBHOOK_SECRET} if webhook else set())
        if need != want:
            bad(f"Secrets to create by hand before the pods start: {sorted(need)}, expected "
                f"{sorted(want)}")
        extra = [f"{o['kind']} {o['metadata']['name']}" for o in objs
                 if o["kind"] in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
                 and o["metadata"]["name"] != "imageguard-verify"]
        if extra:
            bad(f"file mode grants more than verify's reads: {extra}")
    labels = dep["spec"]["template"]["metadata"].get("labels", {})
    svc = one(objs, "Service")
    if svc:
        ports = {p.get("name"): p.get("port") for p in svc["spec"].get("ports", [])}
        if ports.get("http-metrics") != 8080:
            bad("Service has no port 8080 named http-metrics")
        if ports.get("http-webhook") != 8081:
            bad("Service has no port 8081 named http-webhook")
        if any(labels.get(k) != v for k, v in svc["spec"].get("selector", {}).items()):
            bad("Service selector does not match the pod")
    np = one(objs, "NetworkPolicy")
    if np:
        check_network_policy(np, labels)
    check_rbac(objs)


def check_flags(path, help_path):
    with open(path, encoding="utf-8") as f:
        objs = [d for d in yaml.safe_load_all(f) if d is not None]
    with open(help_path, encoding="utf-8") as f:
        text = f.read()
    known = set(re.findall(r"--[a-z][a-z0-9-]*", text))
    for dep in [o for o in objs if o.get("kind") == "Deployment"]:
        for c in dep["spec"]["template"]["spec"]["containers"]:
            for a in c.get("args", []):
                if a.startswith("--") and a not in known:
                    bad(f"args flag {a} is not an option `imageguard run --help` lists")


mode = sys.argv[1]
if mode == "files":
    parse_files(sys.argv[2:])
elif mode == "flags":
    check_flags(sys.argv[2], sys.argv[3])
else:
    check_build(sys.argv[2], mode)
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
PYEOF

cd "$SRC"
mapfile -t files < <(find manifests examples -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
if [[ ${#files[@]} -lt 10 ]]; then notok "only ${#files[@]} YAML files found under manifests/ and examples/"
elif out=$("$PY" "$tmp/check.py" files "${files[@]}"); then ok "${#files[@]} YAML files under manifests/ and examples/ parse"
else notok "YAML files"; echo "$out"; fi

IMAGEGUARD=${IMAGEGUARD:-$SRC/build/imageguard}
if "$IMAGEGUARD" run --help >"$tmp/help.txt" 2>&1 && grep -q -- --kube "$tmp/help.txt"; then ok "imageguard run --help read"
else notok "imageguard run --help ($IMAGEGUARD)"; fi

# build DIR FLAVOUR [LABEL]: kustomize DIR (as Flux's kustomize-controller does, without load
# restrictions), then the checks of FLAVOUR (kube: the base and the Flux example; imageguard:
# file mode; "+webhook": with the component manifests/webhook) and the flags of its args
# against run --help. Every flavour checks the Secrets to create by hand: none for kube.
build() {
	local dir=$1 flavour=$2 label=${3:-$1} out
	if kubectl kustomize --load-restrictor LoadRestrictionsNone "$dir" >"$tmp/b.yaml" 2>"$tmp/b.err"; then ok "kubectl kustomize $label builds"
	else notok "kubectl kustomize $label"; cat "$tmp/b.err"; return; fi
	if out=$("$PY" "$tmp/check.py" "$flavour" "$tmp/b.yaml"); then ok "$label: hardened Deployment, metrics Service, NetworkPolicy, exactly the RBAC and the hand-made Secrets of its mode ($flavour)"
	else notok "$label checks"; echo "$out"; fi
	if out=$("$PY" "$tmp/check.py" flags "$tmp/b.yaml" "$tmp/help.txt"); then ok "$label: every flag in args is a run option${out:+ $out}"
	else notok "$label flags"; echo "$out"; fi
}
build manifests kube
build examples/file-mode imageguard
build examples/flux/infrastructure/imageguard kube

# tree DIR: a copy of manifests/, examples/file-mode and examples/flux in DIR, plus the opt-in
# push webhook three ways: kube-webhook/ (the base with the component), file-webhook/ (on top
# of the file-mode overlay, as its README says) and the Flux example with its commented
# `components:` lines uncommented.
tree() {
	local d=$1
	rm -rf "$d" && mkdir -p "$d/examples" "$d/kube-webhook" "$d/file-webhook" &&
		cp -r manifests "$d/" && cp -r examples/file-mode examples/flux "$d/examples/" &&
		printf 'resources: [../manifests]\ncomponents: [../manifests/webhook]\n' >"$d/kube-webhook/kustomization.yaml" &&
		printf 'resources: [../examples/file-mode]\ncomponents: [../manifests/webhook]\n' >"$d/file-webhook/kustomization.yaml" &&
		sed -i 's/^# components:$/components:/; s/^#   - \(.*\/manifests\/webhook\)$/  - \1/' \
			"$d/examples/flux/infrastructure/imageguard/kustomization.yaml"
}
tree "$tmp/w"
if cmp -s examples/flux/infrastructure/imageguard/kustomization.yaml "$tmp/w/examples/flux/infrastructure/imageguard/kustomization.yaml"; then
	notok "examples/flux/infrastructure/imageguard: no commented components: manifests/webhook lines to uncomment"
fi
build "$tmp/w/kube-webhook" kube+webhook "manifests + component manifests/webhook"
build "$tmp/w/file-webhook" imageguard+webhook "examples/file-mode + component manifests/webhook"
build "$tmp/w/examples/flux/infrastructure/imageguard" kube+webhook "examples/flux/infrastructure/imageguard, components: uncommented"
if kubectl kustomize examples/flux/clusters/my-cluster/image-automation >/dev/null 2>"$tmp/ia.err"; then ok "Flux image-automation kustomization builds"
else notok "Flux image-automation kustomization"; cat "$tmp/ia.err"; fi

# The checks must be able to fail: mutated copies of the base (kube checks), of the file-mode
# overlay (its own checks) and of the webhook component. accept: a change the checks allow.
mutate() { # name sed-expression file (relative to the repository) [dir flavour [expect]]
	local dir=${4:-manifests} flavour=${5:-kube} expect=${6:-reject}
	tree "$tmp/m"
	sed -i "$2" "$tmp/m/$3"
	if cmp -s "$3" "$tmp/m/$3"; then notok "mutation '$1' changed nothing"; return; fi
	if ! kubectl kustomize "$tmp/m/$dir" >"$tmp/m.yaml" 2>/dev/null; then
		if [[ $expect == accept ]]; then notok "variant '$1' does not build"; else ok "mutation '$1' does not even build"; fi
		return
	fi
	if out=$("$PY" "$tmp/check.py" "$flavour" "$tmp/m.yaml") &&
		out=$("$PY" "$tmp/check.py" flags "$tmp/m.yaml" "$tmp/help.txt"); then
		if [[ $expect == accept ]]; then ok "variant '$1' passes the checks"; else notok "mutation '$1' passed the checks"; fi
	elif [[ $expect == accept ]]; then notok "variant '$1' is rejected:$(head -n1 <<<"$out")"
	else ok "mutation '$1' is rejected:$(head -n1 <<<"$out")"; fi
}
accept() { mutate "$@" "${4:-manifests}" "${5:-kube}" accept; }
mutate "writable root" 's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/' manifests/deployment.yaml
mutate "escalation" 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/' manifests/deployment.yaml
mutate "capabilities kept" '/- ALL/d' manifests/deployment.yaml
mutate "root user" 's/runAsUser: 65532/runAsUser: 0/' manifests/deployment.yaml
mutate "no seccomp" 's/type: RuntimeDefault/type: Unconfined/' manifests/deployment.yaml
mutate "one replica under --kube" 's/replicas: 2/replicas: 1/' manifests/deployment.yaml
mutate "Recreate under --kube" 's/type: RollingUpdate/type: Recreate/' manifests/deployment.yaml
mutate "a flag run does not know" 's/- --verify-interval/- --verify-every/' manifests/deployment.yaml
mutate "egress to 80 anywhere" 's/port: 22/port: 80/' manifests/networkpolicy.yaml
mutate "notification port from every namespace" '/kubernetes.io\/metadata.name: flux-system/d' manifests/networkpolicy.yaml
mutate "metrics open to all" 's/^    - from:$/    - x-from:/' manifests/networkpolicy.yaml
mutate "webhook from every namespace" '/kubernetes.io\/metadata.name: registry/d' manifests/networkpolicy.yaml
mutate "no webhook rule" 's/- port: 8081/- port: 8080/' manifests/networkpolicy.yaml
mutate "RBAC write" 's/verbs: \["get", "list"\]/verbs: ["get", "list", "patch"]/' manifests/rbac.yaml
mutate "Secrets listed" 's/resources: \["secrets"\]/resources: ["secrets", "configmaps"]/' manifests/rbac.yaml
mutate "Leases cluster-wide" 's/^kind: Role$/kind: ClusterRole/' manifests/rbac.yaml
mutate "Leases deleted" 's/verbs: \["get", "create", "update", "list", "watch"\]/verbs: ["get", "create", "update", "list", "watch", "delete"]/' manifests/rbac.yaml
mutate "file mode keeps the --kube role" '0,/\$patch: delete/{/\$patch: delete/d}' examples/file-mode/kustomization.yaml examples/file-mode imageguard
mutate "file mode with two replicas" 's/replicas: 1/replicas: 2/' examples/file-mode/deployment-patch.yaml examples/file-mode imageguard
mutate "secret unmounted" 's/path: git-ssh\/known_hosts/path: known_hosts/' examples/file-mode/deployment-patch.yaml examples/file-mode imageguard
# issue 16: the base (and so the Flux example) needs no Secret made by hand
mutate "a Secret volume in the base" 's/^      volumes:$/&\n        - name: extra\n          secret:\n            secretName: imageguard-webhook/' manifests/deployment.yaml
mutate "an env var from a Secret in the base" 's/^          env:$/&\n            - name: TOKEN\n              valueFrom:\n                secretKeyRef: {name: token, key: token}/' manifests/deployment.yaml
mutate "the webhook component in the Flux example by default" 's/^resources:$/components: [..\/..\/..\/..\/manifests\/webhook]\n&/' examples/flux/infrastructure/imageguard/kustomization.yaml examples/flux/infrastructure/imageguard
accept "an optional Secret volume in the base" 's/^      volumes:$/&\n        - name: extra\n          secret:\n            secretName: imageguard-webhook\n            optional: true/' manifests/deployment.yaml
accept "a Secret volume the base makes itself" 's/^      volumes:$/&\n        - name: extra\n          secret:\n            secretName: made/; $a ---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: made\nstringData:\n  token: x' manifests/deployment.yaml
mutate "the webhook component mounting elsewhere" 's/mountPath: \/etc\/imageguard-webhook/mountPath: \/etc\/imageguard-token/' manifests/webhook/kustomization.yaml kube-webhook kube+webhook
mutate "the webhook component on another port" 's/value: 0.0.0.0:8081/value: 0.0.0.0:9091/' manifests/webhook/kustomization.yaml kube-webhook kube+webhook

[[ $failures -eq 0 ]] && echo "PASS manifests" || { echo "FAIL manifests ($failures)"; exit 1; }
