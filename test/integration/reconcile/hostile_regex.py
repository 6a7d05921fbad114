#!/usr/bin/python3
"""A tenant's catastrophic tag regex stops only its own policy (issue 34), end to end against a
real docker-registry and a bare Git remote: policy 'evil' filters with `^(a+)+$`, whose match
against the listed tag `aaaa...ab` backtracks without end, and policy 'good' reads a second
repository normally. plan -o json answers error/config for 'evil' with one line naming the
policy's pattern and the tag (PCRE2's match limit, not a silent no-match), and the usual
update for 'good'; reconcile still commits 'good'. The same with an exclusionList entry."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file  # noqa: E402

t = Checks()
EVIL_TAG = "a" * 40 + "b"


def scenario(env, evil_repo_extra, evil_pattern, want):
    env.push("team/evil", ["aaa", EVIL_TAG])
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"evil.yaml": marker_file(env.image("team/evil") + ":aaa", "evil"),
              "app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "good")})
    env.config(env.repository("evil", "team/evil", extra=evil_repo_extra)
               + env.repository("app", "team/app")
               + env.policy("evil", "evil", alphabetical="asc", pattern=evil_pattern)
               + env.policy("good", "app", semver=">=1.0.0")
               + env.automation())
    r = env.imageguard("plan", "-o", "json")
    items = json.loads(r.out) if r.out.strip().startswith("[") else []
    evil = [i for i in items if i.get("policy") == "default/evil"]
    good = [i for i in items if i.get("policy") == "default/good"]
    t.check(r.rc == 1 and len(evil) == 1 and evil[0]["decision"] == "error" and
            evil[0]["reason"] == "config" and want in evil[0]["message"] and
            EVIL_TAG in evil[0]["message"] and "limit" in evil[0]["message"] and
            "\n" not in evil[0]["message"],
            "plan -o json: the hostile policy is error/config naming %s and the tag" % want, r)
    t.check(len(good) == 1 and good[0]["decision"] == "update" and
            good[0]["candidate"] == "v1.1.0",
            "plan -o json: the other policy is decided normally (update to v1.1.0)", r)
    r = env.imageguard("reconcile")
    t.check(r.rc == 1 and marker_file(env.image("team/app") + ":v1.1.0", "good") ==
            env.remote_file("app.yaml"), "reconcile: the other policy still commits", r)
    t.check(marker_file(env.image("team/evil") + ":aaa", "evil") == env.remote_file("evil.yaml"),
            "the hostile policy's marker is untouched")


def filter_pattern(env):
    scenario(env, "", "^(a+)+$", "filterTags.pattern '^(a+)+$'")


def exclusion_entry(env):
    scenario(env, "  exclusionList:\n    - \"^(a|aa)+$\"\n", None, "exclusionList '^(a|aa)+$'")


for case in (filter_pattern, exclusion_entry):
    with Env() as env:
        try:
            case(env)
        except Exception as e:  # a crash is a failure of this case, not of the others
            t.check(False, "%s raised %r" % (case.__name__, e))
sys.exit(t.done())
