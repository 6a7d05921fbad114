#!/usr/bin/python3
"""`run --kube` with Flux's object-level workload identity for ECR: an ImageRepository with
`provider: aws` and `serviceAccountName` uses that ServiceAccount's own IAM role (its
eks.amazonaws.com/role-arn annotation) instead of imageguard's. The token comes from the
TokenRequest API of the Kubernetes API fixture (kubeapi_etcd.py over a real etcd), signed by
the cluster OIDC issuer that the cloud fixture's STS trusts. STS checks the audience, the role's
trust in exactly that account and the session name Flux uses. ECR checks the SigV4 signature
in the registry's region, and docker-registry with token auth checks the ECR credential. An
account that the role does not trust, or one without the annotation, fails alone in one line.
azure goes through Entra ID and ACR's exchange; gcp through the GKE metadata server (the
cluster, for Flux's identitynamespace audience), Google STS and IAM Credentials'
generateAccessToken of the iam.gke.io/gcp-service-account annotation. A revoked credential (the
fixture's /_fixture/revoke: the cloud credential and the registry bearer tokens issued for it)
is refreshed once through the account; refused again, it is the repository's error."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import cloud_fixture as cf  # noqa: E402
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
import registry  # noqa: E402
from guard_env import Env, marker_file  # noqa: E402
from run import Run, kubectl, wait, start_receiver  # noqa: E402

del harness._tests[:]  # importing run_kube for its helpers registered its tests: not ours

OBJECT_ROLE = "arn:aws:iam::%s:role/team-ecr-reader" % cf.ACCOUNT
SUBJECT = "system:serviceaccount:default:ecr-reader"
OBJECT_CLIENT = "5e1f0c1d-0000-4000-8000-acrreader001"
GSA = "gar-reader@%s.iam.gserviceaccount.com" % cf.GCP_PROJECT


def sa(name, role=None, annotations=None):
    md = {"name": name, "namespace": "default"}
    if role:
        md["annotations"] = {"eks.amazonaws.com/role-arn": role}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": md}


def setup():
    d = os.path.join(os.environ.get("TMPDIR", "/tmp"), "imageguard-kubewi.%d" % os.getpid())
    c = cf.start(d)
    env = api = None
    try:
        registry.push_image("http://" + c.upstream, "team/app", ["v1.0.0", "v1.1.0"],
                            auth=cf.PUSH_USER)
        cf.control(c.url, "/_fixture/config", {
            "roles": {cf.ROLE_ARN: cf.SA_SUBJECT, OBJECT_ROLE: SUBJECT},
            "federated": {cf.CLIENT_ID: cf.SA_SUBJECT,
                          OBJECT_CLIENT: "system:serviceaccount:default:acr-reader"},
            "gsa": {GSA: "system:serviceaccount:default:gar-reader"}})
        for k in [k for k in os.environ if k.startswith(("AWS_", "AZURE_", "GCE_", "GOOGLE_"))]:
            del os.environ[k]  # imageguard's own identity: none; only the objects' accounts
        os.environ.update(AWS_ENDPOINT_URL_STS=c.url, AWS_ENDPOINT_URL_ECR=c.url,
                          AZURE_AUTHORITY_HOST=c.url + "/", GCE_METADATA_HOST=c.url[7:],
                          GOOGLE_STS_ENDPOINT=c.url, GOOGLE_IAM_CREDENTIALS_ENDPOINT=c.url)
        env = Env(registry_host=c.host("ecr"), start_registry=False)
        api = kubeapi_etcd.start()
        api.token_signer = lambda ns, name, auds, secs: c.state.sa_token(
            auds[0], lifetime=secs, sub="system:serviceaccount:%s:%s" % (ns, name))
    except BaseException:
        if env:
            env.close()
        c.stop()
        raise
    st = {"env": env, "api": api, "cloud": c, "dir": d, "receiver": start_receiver()}
    st["kubeconfig"] = api.kubeconfig(os.path.join(env.dir, "kubeconfig"))
    api.create_object(sa("ecr-reader", OBJECT_ROLE))
    api.create_object(sa("untrusted", cf.ROLE_ARN))
    api.create_object(sa("plain"))
    api.create_object(sa("acr-reader", annotations={
        "azure.workload.identity/client-id": OBJECT_CLIENT,
        "azure.workload.identity/tenant-id": cf.TENANT}))
    api.create_object(sa("gar-reader", annotations={"iam.gke.io/gcp-service-account": GSA}))
    api.create_object(sa("gar-bad", annotations={"iam.gke.io/gcp-service-account": "gar-reader"}))
    files, objs = {}, ""
    for name, account, provider, host in (
            ("app", "ecr-reader", "aws", None), ("untrusted", "untrusted", "aws", None),
            ("plain", "plain", "aws", None), ("acr", "acr-reader", "azure", c.host("acr")),
            ("gar", "gar-reader", "gcp", c.host("gcp")), ("garbad", "gar-bad", "gcp", c.host("gcp"))):
        files["apps/%s.yaml" % name] = marker_file(env.image("team/app", host) + ":v1.0.0", name)
        objs += env.repository(name, "team/app", host=host, extra="  provider: %s\n"
                               "  serviceAccountName: %s\n" % (provider, account))
        objs += env.policy(name, name, semver=">=1.0.0")
    env.seed(files)
    kubectl(st, "apply", "-f", "-", stdin=objs + env.automation(interval="10m"))
    st["run"] = Run(st, "--log-level", "debug")
    return st


def teardown(st):
    if st:
        st["run"].stop()
        st["api"].stop()
        st["receiver"].shutdown()
        st["env"].close()
        st["cloud"].stop()
        os.system("rm -rf '%s'" % st["dir"])


def lines(st, needle):
    return [l for l in st["run"].text().splitlines() if needle in l]


@harness.test
def the_accounts_role_lists_ecr(st):
    wait(lambda: "v1.1.0" in st["env"].remote_file("apps/app.yaml"),
         "the update through ecr-reader's role", 40, st["run"].text)


@harness.test
def the_token_is_asked_for_sts_and_the_session_is_fluxs(st):
    reqs = [r for r in st["api"].token_requests if r["name"] == "ecr-reader"]
    harness.check(reqs and all(r["namespace"] == "default" and
                               r["audiences"] == ["sts.amazonaws.com"] for r in reqs),
                  "TokenRequest for sts.amazonaws.com", st["api"].token_requests)
    harness.check((OBJECT_ROLE, "ecr-reader.default.%s.fluxcd.io" % cf.REGION) in
                  st["cloud"].state.sessions, "role and session name", st["cloud"].state.sessions)


@harness.test
def azure_the_accounts_client_through_entra_and_acr(st):
    wait(lambda: "v1.1.0" in st["env"].remote_file("apps/acr.yaml"),
         "the ACR update through acr-reader's federated credential", 40, st["run"].text)
    reqs = [r for r in st["api"].token_requests if r["name"] == "acr-reader"]
    harness.check(reqs and all(r["audiences"] == ["api://AzureADTokenExchange"] for r in reqs),
                  "TokenRequest for api://AzureADTokenExchange", st["api"].token_requests)


@harness.test
def gcp_the_accounts_gsa_through_sts_and_iam_credentials(st):
    wait(lambda: "v1.1.0" in st["env"].remote_file("apps/gar.yaml"),
         "the Artifact Registry update through gar-reader's GSA", 40, st["run"].text)
    reqs = [r for r in st["api"].token_requests if r["name"] == "gar-reader"]
    harness.check(reqs and all(r["audiences"] == [cf.GCP_AUDIENCE] for r in reqs),
                  "TokenRequest for the identitynamespace audience", st["api"].token_requests)
    stats = cf.control(st["cloud"].url, "/_fixture/stats")
    harness.check(stats.get("gcp-sts", 0) >= 1 and stats.get("gcp-iam", 0) >= 1 and
                  not stats.get("gce-metadata"), "STS, IAM Credentials; never the pod's token",
                  stats)


@harness.test
def gcp_a_malformed_gsa_annotation_says_so(st):
    got = wait(lambda: [l for l in lines(st, "registry.credentials") if "default/gar-bad" in l],
               "gar-bad's line", 20, st["run"].text)
    msg = json.loads(got[0])["msg"]
    harness.check("provider 'gcp'" in msg and "iam.gke.io/gcp-service-account is not" in msg,
                  "names provider, account and annotation", msg)
    harness.check("v1.0.0" in st["env"].remote_file("apps/garbad.yaml"), "not updated")


@harness.test
def an_untrusted_account_fails_alone_in_one_line(st):
    got = wait(lambda: [l for l in lines(st, "registry.credentials") if "default/untrusted" in l],
               "untrusted's line", 20, st["run"].text)
    msg = json.loads(got[0])["msg"]
    harness.check("provider 'aws'" in msg and "serviceaccount 'default/untrusted'" in msg and
                  "AccessDenied" in msg, "names provider, account and the refusal", msg)
    harness.check("v1.0.0" in st["env"].remote_file("apps/untrusted.yaml"), "not updated")


@harness.test
def an_account_without_the_annotation_says_so(st):
    got = wait(lambda: [l for l in lines(st, "registry.credentials") if "default/plain" in l],
               "plain's line", 20, st["run"].text)
    msg = json.loads(got[0])["msg"]
    harness.check("serviceaccount 'default/plain'" in msg and
                  "eks.amazonaws.com/role-arn is missing" in msg, "clear", msg)


@harness.test
def the_credential_is_cached_across_passes(st):
    # a second pass lists the new tag with the cached ECR credential: no new TokenRequest, no
    # new STS session (the account's keys and token are kept apart from the pod's)
    c, env = st["cloud"], st["env"]
    n, sessions = len(st["api"].token_requests), len(c.state.sessions)
    registry.push_image("http://" + c.upstream, "team/app", ["v1.2.0"], auth=cf.PUSH_USER)
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=again")
    wait(lambda: "v1.2.0" in env.remote_file("apps/app.yaml"), "v1.2.0 in the next pass", 40,
         st["run"].text)
    new = [r for r in st["api"].token_requests[n:] if r["name"] == "ecr-reader"]
    harness.check(not new, "no new TokenRequest for ecr-reader", new)
    harness.check(not [x for x in c.state.sessions[sessions:] if x[0] == OBJECT_ROLE],
                  "no new session", c.state.sessions[sessions:])


def gar_tokens(st):
    return len([r for r in st["api"].token_requests if r["name"] == "gar-reader"])


def next_pass(st, tag):
    registry.push_image("http://" + st["cloud"].upstream, "team/app", [tag], auth=cf.PUSH_USER)
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=" + tag)


@harness.test
def a_revoked_credential_is_refreshed_once(st):
    # revoked: the GSA token and the registry's bearer tokens for it (the registry client's
    # cached bearer is refused too, not just the next token request)
    c = st["cloud"]
    n, iam = gar_tokens(st), cf.control(c.url, "/_fixture/stats").get("gcp-iam", 0)
    cf.control(c.url, "/_fixture/revoke", {})
    next_pass(st, "v1.3.0")
    wait(lambda: "v1.3.0" in st["env"].remote_file("apps/gar.yaml"), "v1.3.0 after the refresh",
         40, st["run"].text)
    stats = cf.control(c.url, "/_fixture/stats")
    harness.check(stats.get("registry-revoked-bearer", 0) >= 1, "the cached bearer was refused",
                  stats)
    harness.check(gar_tokens(st) == n + 1 and stats.get("gcp-iam", 0) == iam + 1,
                  "one new TokenRequest and one generateAccessToken", (gar_tokens(st) - n, stats))
    refused = [l for l in lines(st, "cloudauth.refused") if "default/gar-reader" in l]
    harness.check(len(refused) == 1, "one refresh logged", refused)


@harness.test
def a_credential_refused_after_its_refresh_is_the_error(st):
    c = st["cloud"]
    n = gar_tokens(st)
    cf.control(c.url, "/_fixture/config", {"refuse": ["registry"]})
    cf.control(c.url, "/_fixture/revoke", {})
    try:
        next_pass(st, "v1.4.0")
        got = wait(lambda: [l for l in lines(st, "registry.list") if "gar'" in l and
                            json.loads(l)["level"] == "warn"],
                   "gar's listing error", 40, st["run"].text)
    finally:
        cf.control(c.url, "/_fixture/config", {"refuse": []})
    msg = json.loads(got[0])["msg"]
    harness.check("401" in msg or "unauthorized" in msg.lower(), "a refusal", msg)
    harness.check(gar_tokens(st) == n + 1, "one refresh, no more", gar_tokens(st) - n)
    harness.check(len([l for l in lines(st, "cloudauth.refused") if "default/gar-reader" in l])
                  == 2, "one more refresh logged")
    harness.check("v1.3.0" in st["env"].remote_file("apps/gar.yaml"), "not updated")


@harness.test
def only_get_serviceaccounts_and_create_tokens(st):
    sa_reqs = {kubeapi_etcd.rbac_request(q["method"], q["path"], q["query"])
               for q in st["api"].requests if q["agent"].startswith("imageguard/") and
               "/serviceaccounts" in q["path"]}
    harness.check(sa_reqs == {("", "serviceaccounts", "get"),
                              ("", "serviceaccounts/token", "create")}, "rbac", sa_reqs)


@harness.test
def no_token_in_the_log_and_a_clean_stop(st):
    text = st["run"].text()
    leaked = [p[:8] for (_, p) in st["cloud"].state.minted if p in text]
    harness.check(not leaked and "eyJ" not in text and "FwoG" not in text, "no token", leaked)
    rc = st["run"].stop()
    harness.check(rc == 0 and "Sanitizer" not in st["run"].text(), "exit 0", rc)


if __name__ == "__main__":
    harness.main(setup, teardown)
