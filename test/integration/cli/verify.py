#!/usr/bin/python3
"""`imageguard verify` end to end: a real docker-registry holding the images, a bare Git repo
with marked manifests, and the fixture Kubernetes API server (test/fixtures/kubeapi.py: TLS with
a test CA, bearer token or client certificate, recorded Deployment/Pod JSON, pagination with
`continue`, 401/403 Status). Cases: every pod runs what Git pins (exit 0, pages followed), a
drifted digest under the committed tag (exit 1), a pod still on an old tag, a container that
never started, a workload absent from the cluster, a tag the registry cannot resolve, 403 and
401, kubeconfig variants (CA data, CA file, client certificate, no CA, bad files) and the
in-cluster service account (a private mount namespace over /run)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks  # noqa: E402
import kubeapi  # noqa: E402

t = Checks()
TOKEN = "verify-fixture-token-7f3a91"
WEB = {"app.kubernetes.io/name": "web"}
API = {"app.kubernetes.io/name": "api", "tier": "backend"}


def manifests(web_image, api_image):
    web = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\n"
           "spec:\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: web\n"
           "  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: web\n"
           "    spec:\n      containers:\n        - name: web\n"
           "          image: %s # {\"$imagepolicy\": \"default:web\"}\n" % web_image)
    api = ("---\napiVersion: v1\nkind: Service\nmetadata:\n  name: api\n  namespace: prod\n"
           "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: api\n"
           "  namespace: prod\nspec:\n  serviceName: api\n  selector:\n    matchLabels:\n"
           "      app.kubernetes.io/name: api\n    matchExpressions:\n      - key: tier\n"
           "        operator: In\n        values: [backend]\n  template:\n    spec:\n"
           "      initContainers:\n        - name: migrate\n          image: busybox:1.36\n"
           "      containers:\n        - name: api\n"
           "          image: %s # {\"$imagepolicy\": \"default:api\"}\n" % api_image)
    kust = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nimages:\n"
            "  - name: web\n    newTag: v1.1.0 # {\"$imagepolicy\": \"default:web:tag\"}\n")
    return {"apps/web.yaml": web, "apps/api.yaml": api, "apps/kustomization.yaml": kust}


def cluster(api, env, d, pods=None, web_image=None):
    """The cluster as Git wants it: web (3 pods over 2 pages) and api, plus noise the
    selectors must skip."""
    api.clear()
    web_ref = env.image("team/web")
    web_image = web_image or web_ref + ":v1.1.0"
    api.add(kubeapi.deployment("prod", "web", web_image, WEB))
    api.add(kubeapi.deployment("prod", "api", d["api_ref"], API, container="api",
                               kind="StatefulSet",
                               match_expressions=[{"key": "tier", "operator": "In",
                                                   "values": ["backend"]}]))
    pods = pods or {}
    for i in range(3):
        name = "web-7d9c6b5f4d-%d" % i
        image, image_id = pods.get(name, (web_ref + ":v1.1.0",
                                          ("docker-pullable://" if i == 0 else "")
                                          + web_ref + "@" + d["B"]))
        api.add(kubeapi.pod("prod", name, WEB, [("web", image, image_id)]))
    # an old pod on its way out of the rollout, and another app's pod: both must be ignored
    api.add(kubeapi.pod("prod", "web-5c4b3a2918-old", WEB,
                        [("web", web_ref + ":v1.0.0", web_ref + "@" + d["A"])], deleting=True))
    api.add(kubeapi.pod("prod", "other-1", {"app.kubernetes.io/name": "other"},
                        [("web", web_ref + ":v1.0.0", web_ref + "@" + d["A"])]))
    api.add(kubeapi.pod("prod", "api-0", API, [("api", d["api_ref"],
                                                env.image("team/api") + "@" + d["P"])]))
    api.add(kubeapi.pod("prod", "api-canary", {"app.kubernetes.io/name": "api",
                                               "tier": "canary"},
                        [("api", "x", env.image("team/api") + "@" + d["A"])]))


def lines(r):
    try:
        return [json.loads(x) for x in r.out.splitlines() if x.strip()]
    except ValueError:
        return []


def by_pod(items):
    return {(i["container"], i["pod"]): i for i in items}


def scenarios(env, api, d, tmp):
    kc = kubeapi.kubeconfig(api, os.path.join(tmp, "kubeconfig"), token=TOKEN)

    cluster(api, env, d)
    r = env.imageguard("verify", "--kubeconfig", kc, "-o", "json")
    items = lines(r)
    pods = by_pod(items)
    t.check(r.rc == 0, "every container runs what Git pins: exit 0", r)
    t.check(sorted(k for k, v in pods.items() if v["status"] == "ok") ==
            [("api", "api-0")] + [("web", "web-7d9c6b5f4d-%d" % i) for i in range(3)],
            "web pods on both pages and the api pod are ok; old and foreign pods ignored", items)
    web0 = pods.get(("web", "web-7d9c6b5f4d-0"), {})
    t.check(web0.get("expected_digest") == d["B"] and web0.get("running_digest") == d["B"]
            and web0.get("expected_tag") == "v1.1.0" and web0.get("workload") == "prod/Deployment/web"
            and web0.get("file") == "apps/web.yaml" and web0.get("line") == 17
            and web0.get("policy") == "default/web",
            "the tag's registry digest is compared with a docker-pullable:// imageID", web0)
    t.check(pods.get(("api", "api-0"), {}).get("expected_digest") == d["P"],
            "a digest pinned in Git is used as is", items)
    kust = [i for i in items if i["file"] == "apps/kustomization.yaml"]
    t.check(len(kust) == 1 and kust[0]["status"] == "unknown" and kust[0]["workload"] is None,
            "a marker outside a workload container is reported unknown (not a failure)", kust)
    lists = [q for q in api.requests if q["path"] == "/api/v1/namespaces/prod/pods"]
    t.check(any("continue" in q["query"] for q in lists)
            and all(q["query"].get("limit") for q in lists)
            and {q["query"]["labelSelector"][0] for q in lists} ==
            {"app.kubernetes.io/name=web", "app.kubernetes.io/name=api,tier=backend,tier in (backend)"},
            "pods listed with limit, continue and the live selectors", lists)
    t.check(api.requests and all(q["auth"] == "token" for q in api.requests),
            "every request carried the token")

    r = env.imageguard("verify", "--kubeconfig", kc)
    t.check(r.rc == 0 and "ok          prod/Deployment/web container web pod web-7d9c6b5f4d-1"
            in r.out and "4 ok, 0 drift, 0 not running, 1 unknown" in r.out,
            "text output: one line per container and a summary", r)

    # the committed tag now names another digest than the one running (a moved tag, a cache)
    cluster(api, env, d, {"web-7d9c6b5f4d-1": (env.image("team/web") + ":v1.1.0",
                                               env.image("team/web") + "@" + d["A"])})
    r = env.imageguard("verify", "--kubeconfig", kc, "-o", "json")
    drift = by_pod(lines(r)).get(("web", "web-7d9c6b5f4d-1"), {})
    t.check(r.rc == 1 and drift.get("status") == "drift"
            and drift.get("running_digest") == d["A"] and drift.get("expected_digest") == d["B"],
            "a different digest under the committed tag is drift: exit 1", r)
    t.check("verify.drift" in r.err and "web-7d9c6b5f4d-1" in r.err,
            "the drift is logged on stderr", r.err)
    t.check(sum(1 for i in lines(r) if i["status"] == "drift") == 1,
            "only the drifting container is reported as drift", r.out)

    # a pod still running the old tag, and the cluster's Deployment not updated yet
    cluster(api, env, d, {"web-7d9c6b5f4d-2": (env.image("team/web") + ":v1.0.0",
                                               env.image("team/web") + "@" + d["A"])},
            web_image=env.image("team/web") + ":v1.0.0")
    r = env.imageguard("verify", "--kubeconfig", kc, "-o", "json")
    old = by_pod(lines(r)).get(("web", "web-7d9c6b5f4d-2"), {})
    t.check(r.rc == 1 and old.get("status") == "drift"
            and "runs tag v1.0.0, Git has v1.1.0" in old.get("reason", "")
            and "still specifies" in old.get("reason", ""),
            "a pod on an old tag is drift, and the unapplied spec is named", old)

    # a container that never started (ImagePullBackOff): not running, not drift
    cluster(api, env, d, {"web-7d9c6b5f4d-0": (env.image("team/web") + ":v1.1.0", "")})
    r = env.imageguard("verify", "--kubeconfig", kc, "-o", "json")
    nr = by_pod(lines(r)).get(("web", "web-7d9c6b5f4d-0"), {})
    t.check(r.rc == 0 and nr.get("status") == "not-running",
            "a container without imageID is not-running (exit 0)", r)

    # the workload is absent from the cluster
    cluster(api, env, d)
    api.objects = [o for o in api.objects if o["metadata"]["name"] != "api"]
    r = env.imageguard("verify", "--kubeconfig", kc, "-o", "json")
    gone = [i for i in lines(r) if i["workload"] == "prod/StatefulSet/api"]
    t.check(r.rc == 0 and len(gone) == 1 and gone[0]["status"] == "not-running"
            and "not found" in gone[0]["reason"],
            "a workload missing from the cluster is not-running", r)

    # 403 on the namespace: the Status message, the path and exit 1
    cluster(api, env, d)
    api.forbidden = {"prod"}
    r = env.imageguard("verify", "--kubeconfig", kc, "-o", "json")
    api.forbidden = set()
    t.check(r.rc == 1 and "kubernetes api 'GET /apis/apps/v1/namespaces/prod/deployments/web': "
            "403 forbidden: deployments.apps is forbidden" in r.err
            and lines(r) and all(i["status"] == "unknown" for i in lines(r)),
            "403: one error line naming path, status and message; exit 1", r)

    # 401: a wrong token never appears anywhere
    bad = kubeapi.kubeconfig(api, os.path.join(tmp, "bad-token"), token="wrong-" + TOKEN)
    r = env.imageguard("verify", "--kubeconfig", bad, "-o", "json", "--log-level", "debug")
    t.check(r.rc == 1 and "401 unauthorized" in r.err and TOKEN not in r.err + r.out,
            "401: reported, exit 1, the token is not printed", r)

    # kubeconfig variants
    cc = kubeapi.kubeconfig(api, os.path.join(tmp, "client-cert"), client_cert=True, ca="file")
    before = len(api.requests)
    r = env.imageguard("verify", "--kubeconfig", cc, "-o", "json")
    t.check(r.rc == 0 and api.requests[before:]
            and all(q["auth"] == "cert" for q in api.requests[before:]),
            "client-certificate-data with certificate-authority (file): exit 0", r)
    noca = kubeapi.kubeconfig(api, os.path.join(tmp, "no-ca"), token=TOKEN, ca=None)
    r = env.imageguard("verify", "--kubeconfig", noca)
    t.check(r.rc == 1 and "certificate" in r.err.lower(),
            "an API server certificate the system CAs do not trust is refused", r)
    other = os.path.join(tmp, "other-pki")
    os.makedirs(other)
    other_ca = kubeapi.make_pki(other)["ca"]
    wrong = kubeapi.kubeconfig(api, os.path.join(tmp, "wrong-ca"), token=TOKEN, ca=None,
                               extra_cluster="    certificate-authority: %s\n" % other_ca)
    r = env.imageguard("verify", "--kubeconfig", wrong)
    t.check(r.rc == 1 and "certificate" in r.err.lower() and TOKEN not in r.err,
            "a CA that did not sign the API server's certificate is refused", r)
    with open(os.path.join(tmp, "broken"), "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: fixture\nclusters:\n"
                "- name: c\n  cluster:\n    server: %s\n"
                "    certificate-authority-data: '%%%%notbase64'\n"
                "contexts:\n- name: fixture\n  context:\n    cluster: c\n" % api.url)
    r = env.imageguard("verify", "--kubeconfig", os.path.join(tmp, "broken"))
    t.check(r.rc == 2 and "kubeconfig '%s': line 8: clusters[c].cluster.certificate-authority-"
            "data: not valid base64" % os.path.join(tmp, "broken") in r.err,
            "a bad kubeconfig field: exit 2 naming file, line and field", r)
    r = env.imageguard("verify", "--kubeconfig", os.path.join(tmp, "missing"))
    t.check(r.rc == 2 and "no such file" in r.err, "a missing kubeconfig: exit 2", r)

    # the local checkout instead of the Git source
    checkout = os.path.join(tmp, "checkout")
    subprocess.run(["git", "clone", "-q", env.remote, checkout], check=True)
    r = env.imageguard("verify", "--kubeconfig", kc, "--repo-dir", checkout, "-o", "json")
    t.check(r.rc == 0 and sum(1 for i in lines(r) if i["status"] == "ok") == 4,
            "--repo-dir reads a local checkout", r)

    in_cluster(env, api, tmp)
    command_line(env)


def command_line(env):
    """--help, usage errors and an invalid configuration."""
    exe = env.args("verify")[0]
    r = subprocess.run([exe, "verify", "--help"], capture_output=True, text=True, timeout=30)
    t.check(r.returncode == 0 and r.stdout.startswith("usage: imageguard verify"), "--help: exit 0",
            r.stdout + r.stderr)
    for args, msg in ((["--kubeconfig", "x"], "option '--config': required"),
                      (["--config", env.config_dir, "--kubeconfig"],
                       "option '--kubeconfig': missing value"),
                      (["--config", env.config_dir, "--audit-log", "-"],
                       "option '--audit-log': not used by verify"),
                      (["--config", env.config_dir, "-o", "yaml"], "expected text or json"),
                      (["--config", env.config_dir, "--bogus"], "option '--bogus': unknown")):
        r = subprocess.run([exe, "verify"] + args, capture_output=True, text=True, timeout=30)
        t.check(r.returncode == 2 and r.stderr.startswith("imageguard: verify: ") and msg in r.stderr,
                "usage error exits 2: %s" % msg, r.stderr)
    bad = os.path.join(env.dir, "bad-config")
    os.makedirs(bad)
    with open(os.path.join(bad, "c.yaml"), "w") as f:
        f.write("apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata:\n"
                "  name: p\nspec: {}\n")
    r = subprocess.run([exe, "verify", "--config", bad, "--kubeconfig", "x"], capture_output=True,
                       text=True, timeout=30)
    t.check(r.returncode == 2 and "c.yaml:" in r.stderr, "an invalid configuration exits 2",
            r.stderr)


def in_cluster(env, api, tmp):
    """The service account as a pod sees it: KUBERNETES_SERVICE_HOST/PORT and the token, CA
    and namespace under /var/run/secrets/kubernetes.io/serviceaccount (a tmpfs over /run in a
    private mount namespace, so the host is untouched)."""
    sa = os.path.join(tmp, "sa")
    os.makedirs(sa)
    shutil.copy(api.ca_file, os.path.join(sa, "ca.crt"))
    with open(os.path.join(sa, "token"), "w") as f:
        f.write(TOKEN + "\n")
    with open(os.path.join(sa, "namespace"), "w") as f:
        f.write("imageguard")
    script = ('mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io && '
              'cp -r "$0" /run/secrets/kubernetes.io/serviceaccount && exec "$@"')
    envv = dict(os.environ, KUBERNETES_SERVICE_HOST="127.0.0.1",
                KUBERNETES_SERVICE_PORT=str(api.port))
    envv.pop("KUBECONFIG", None)
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                        sa] + env.args("verify", "-o", "json"),
                       capture_output=True, text=True, env=envv, timeout=120)
    items = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    t.check(p.returncode == 0 and sum(1 for i in items if i["status"] == "ok") == 4,
            "in-cluster service account (env + token + ca.crt): exit 0",
            "rc=%d\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    p = subprocess.run([env.args("verify")[0], "verify"] + env.args("verify")[2:],
                       capture_output=True, text=True, timeout=60,
                       env=dict(envv, KUBERNETES_SERVICE_HOST="127.0.0.1"))
    t.check(p.returncode == 2 and "serviceaccount/token': no such file" in p.stderr,
            "in-cluster env without the mounted token: exit 2 naming the file", p.stderr)


def registry_cases(env, api, d, tmp):
    """A committed tag the registry does not have: unknown and exit 1 (a failed check)."""
    env.seed({"apps/web.yaml": manifests(env.image("team/web") + ":v9.9.9", d["api_ref"])
              ["apps/web.yaml"]})
    cluster(api, env, d)
    kc = kubeapi.kubeconfig(api, os.path.join(tmp, "kubeconfig"), token=TOKEN)
    r = env.imageguard("verify", "--kubeconfig", kc, "-o", "json")
    web = [i for i in lines(r) if i["workload"] == "prod/Deployment/web"]
    t.check(r.rc == 1 and web and all(i["status"] == "drift" for i in web),
            "pods on v1.1.0 while Git has v9.9.9 drift by tag", r)
    t.check(web and all("runs tag v1.1.0, Git has v9.9.9" in i["reason"] for i in web), "reason",
            web)
    cluster(api, env, d, {"web-7d9c6b5f4d-%d" % i: (env.image("team/web") + ":v9.9.9",
                                                    env.image("team/web") + "@" + d["B"])
                          for i in range(3)})
    r = env.imageguard("verify", "--kubeconfig", kc, "-o", "json")
    web = [i for i in lines(r) if i["workload"] == "prod/Deployment/web"]
    t.check(r.rc == 1 and web and all(i["status"] == "unknown" and i["expected_digest"] is None
                                      and "manifest" in i["reason"] for i in web),
            "a tag the registry cannot resolve: unknown with the registry's error, exit 1", r)


def rbac(api):
    """Every read verify made is granted by manifests/rbac.yaml's ClusterRole (and the role
    grants nothing verify did not use)."""
    import yaml
    with open(os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "manifests", "rbac.yaml")) as f:
        role = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "ClusterRole" and
                d["metadata"]["name"] == "imageguard-verify"][0]
    paths = {q["path"] for q in api.history}
    denied = sorted(p for p in paths if not kubeapi.rbac_allows(role["rules"], p))
    t.check(paths and not denied, "the ClusterRole grants every read verify made", denied)
    used = {kubeapi.request_of(p)[1] for p in paths}
    granted = {res for r in role["rules"] for res in r["resources"]}
    t.check({"pods", "deployments", "statefulsets"} <= used and granted - used <=
            {"daemonsets", "replicasets", "jobs"},
            "the ClusterRole grants no resource verify never reads", (granted, used))


def main():
    tmp = tempfile.mkdtemp(prefix="imageguard-verify.")
    api = None
    try:
        with Env() as env:
            api = kubeapi.start(token=TOKEN, page_size=2, directory=os.path.join(tmp, "api"))
            d = {"A": env.push("team/web", ["v1.0.0"], created="2026-10-01T00:00:00Z"),
                 "B": env.push("team/web", ["v1.1.0"], created="2026-11-01T00:00:00Z"),
                 "P": env.push("team/api", ["v2.0.0"], created="2026-11-02T00:00:00Z")}
            d["api_ref"] = env.image("team/api") + ":v2.0.0@" + d["P"]
            env.seed(manifests(env.image("team/web") + ":v1.1.0", d["api_ref"]))
            env.config(env.repository("web", "team/web") + env.repository("api", "team/api")
                       + env.policy("web", "web", semver=">=1.0.0")
                       + env.policy("api", "api", semver=">=1.0.0", reflect="Always")
                       + env.automation())
            scenarios(env, api, d, tmp)
            registry_cases(env, api, d, tmp)
            rbac(api)
    finally:
        if api:
            api.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


sys.exit(main())
