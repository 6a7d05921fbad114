#!/usr/bin/python3
"""`run --kube` with Flux's object-level workload identity for ECR: an ImageRepository with
`provider: aws` and `serviceAccountName` uses that ServiceAccount's own IAM role (its
eks.amazonaws.com/role-arn annotation) instead of imageguard's. The token comes from the
TokenRequest API of the Kubernetes API fixture (kubeapi_etcd.py over a real etcd), signed by
the cluster OIDC issuer that the cloud fixture's STS trusts. STS checks the audience, the role's
trust in exactly that account and the session name Flux uses. ECR checks the SigV4 signature
in the registry's region, and docker-registry with token auth checks the ECR credential. An
account that the role does not trust, or one without the annotation, fails alone in one line."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import cloud_fixture as cf  # noqa: E402
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
import registry  # noqa: E402
from guard_env import Env, marker_file  # noqa: E402
from run_kube import Run, kubectl, wait, start_receiver  # noqa: E402

del harness._tests[:]  # importing run_kube for its helpers registered its tests: not ours

OBJECT_ROLE = "arn:aws:iam::%s:role/team-ecr-reader" % cf.ACCOUNT
SUBJECT = "system:serviceaccount:default:ecr-reader"
OBJECT_CLIENT = "5e1f0c1d-0000-4000-8000-acrreader001"


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
                          OBJECT_CLIENT: "system:serviceaccount:default:acr-reader"}})
        for k in [k for k in os.environ if k.startswith(("AWS_", "AZURE_"))]:
            del os.environ[k]  # imageguard's own identity: none; only the objects' accounts
        os.environ.update(AWS_ENDPOINT_URL_STS=c.url, AWS_ENDPOINT_URL_ECR=c.url,
                          AZURE_AUTHORITY_HOST=c.url + "/")
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
    files, objs = {}, ""
    for name, account, provider, host in (
            ("app", "ecr-reader", "aws", None), ("untrusted", "untrusted", "aws", None),
            ("plain", "plain", "aws", None), ("acr", "acr-reader", "azure", c.host("acr"))):
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
