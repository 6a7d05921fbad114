#!/usr/bin/python3
"""End to end against a real docker-registry and a bare Git remote: every commit ends with the
provenance trailers, read back by `git interpret-trailers --parse`, with the listing's sha256
equal to the audit record's; Flux's ResultV2 messageTemplate (image-automation-controller
internal/source/source_test.go) renders byte for byte, its Signed-off-by joining the trailer
block; a template using Flux's removed `.Updated` is a configuration error."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import IMAGEGUARD, Env, Checks, Result, marker_file  # noqa: E402

t = Checks()

RESULT_V2 = """Commit summary with ResultV2

Automation: {{ .AutomationObject }}

{{ range $filename, $objchange := .Changed.FileChanges -}}
- File: {{ $filename }}
{{- range $obj, $changes := $objchange }}
  - Object: {{ $obj.Kind }}/{{ $obj.Namespace }}/{{ $obj.Name }}
    Changes:
{{- range $_ , $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
{{ end -}}
{{/* the trims above would glue the next line to the list */}}
Signed-off-by: Flux <flux@example.com>
"""


def with_template(env, tmpl):
    block = "".join("        " + line + "\n" for line in tmpl.splitlines())
    return env.automation().replace(
        "        email: imageguard@test\n",
        "        email: imageguard@test\n      messageTemplate: |\n" + block)


def check_config(env):
    return Result(subprocess.run([IMAGEGUARD, "check-config", "--config", env.config_dir],
                                 capture_output=True, text=True, timeout=60))


def trailers(message):
    out = subprocess.run(["git", "interpret-trailers", "--parse"], input=message,
                         capture_output=True, text=True, check=True).stdout
    return [line.split(": ", 1) for line in out.splitlines()]


def default_message(env):
    env.push("team/app", ["v1.0.0"])
    env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation())
    env.push("team/app", ["v1.1.0"])
    audit = os.path.join(env.dir, "audit.log")
    r = env.imageguard("reconcile", "--audit-log", audit)
    t.check(r.rc == 0, "reconcile exits 0", r)
    msg = env.remote_log()[0][1]
    recs = [json.loads(line) for line in open(audit)]
    sha = [x["tags_sha256"] for x in recs if x["policy"] == "default/app"]
    got = trailers(msg)
    t.check(got == [["Imageguard-Policy", "default/app"],
                    ["Imageguard-Decision", "update/forward"],
                    ["Imageguard-Tags-Sha256", sha[0] if sha else "?"]],
            "git reads the trailers; the sha256 is the audit record's", (got, sha, msg))


def flux_template(env):
    env.push("team/app", ["1.0.0"])
    deploy = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: test\nspec:\n"
              "  template:\n    spec:\n      containers:\n      - name: hello\n"
              "        image: %s:1.0.0 # {\"$imagepolicy\": \"default:app\"}\n" % env.image("team/app"))
    env.seed({"deploy.yaml": deploy})
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + with_template(env, RESULT_V2))
    r = check_config(env)
    t.check(r.rc == 0, "Flux's template passes check-config", r)
    env.push("team/app", ["1.0.1"])
    r = env.imageguard("reconcile")
    t.check(r.rc == 0, "reconcile with Flux's template exits 0", r)
    msg = env.remote_log()[0][1]
    image = env.image("team/app")
    want = ("Commit summary with ResultV2\n\nAutomation: default/auto\n\n- File: deploy.yaml\n"
            "  - Object: Deployment//test\n    Changes:\n"
            "    - %s:1.0.0 -> %s:1.0.1\n\nSigned-off-by: Flux <flux@example.com>\n"
            "Imageguard-Policy: default/app\nImageguard-Decision: update/forward\n"
            "Imageguard-Tags-Sha256: " % (image, image))
    t.check(msg.startswith(want), "the message is Flux's, then the trailers in the same block",
            (msg, want))
    names = [k for k, _ in trailers(msg)]
    t.check(names == ["Signed-off-by", "Imageguard-Policy", "Imageguard-Decision",
                      "Imageguard-Tags-Sha256"], "one final trailer block", names)


def template_values(env):
    """spec.git.commit.messageTemplateValues reach the template as .Values (Flux's example)."""
    env.push("team/app", ["1.0.0"])
    env.seed({"a.yaml": marker_file(env.image("team/app") + ":1.0.0", "app")})
    auto = with_template(env, "Deploy to {{ .Values.env }} ({{ .Values.team | upper }})").replace(
        "      messageTemplate: |\n",
        "      messageTemplateValues:\n        env: staging\n        team: web\n"
        "      messageTemplate: |\n")
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + auto)
    env.push("team/app", ["1.0.1"])
    r = env.imageguard("reconcile")
    t.check(r.rc == 0, "reconcile with messageTemplateValues exits 0", r)
    msg = env.remote_log()[0][1]
    t.check(msg.startswith("Deploy to staging (WEB)\n\nImageguard-Policy: default/app\n"),
            ".Values in the message", msg)


def removed_field(env):
    env.push("team/app", ["1.0.0"])
    env.seed({"a.yaml": marker_file(env.image("team/app") + ":1.0.0", "app")})
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + with_template(env, "{{range .Updated.Images}}{{println .}}{{end}}"))
    r = check_config(env)
    t.check(r.rc == 2 and "template uses removed '.Updated' field" in r.out + r.err
            and "config.yaml:" in r.out + r.err, "a removed field is a config error at file:line", r)


MESSAGE_MAX = 256 * 1024  # gitstore's cap on one commit message


def long_path(i):
    return "apps/%s/deploy-%04d.yaml" % ("team-" + "x" * 150, i)


def big_move(env, template=None):
    """A move whose message would pass the cap is pushed as several commits in one push, each
    message under the cap, every change in exactly one of them; the next pass has nothing."""
    n = 1200  # ~300 bytes of change line each: over 256 KiB in one message
    env.push("team/app", ["v1.0.0"])
    image = env.image("team/app")
    env.seed({long_path(i): marker_file(image + ":v1.0.0", "app") for i in range(n)})
    seed = env.remote_head()
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + (with_template(env, template) if template else env.automation()))
    env.push("team/app", ["v1.1.0"])
    r = env.imageguard("reconcile")
    t.check(r.rc == 0, "reconcile of %d markers exits 0" % n, r)
    log = env.remote_log()
    new = [m for _, m in log[:[h for h, _ in log].index(seed)]] if seed in [h for h, _ in log] \
        else []
    t.check(len(new) >= 2, "more than one commit", len(new))
    t.check(all(len(m.encode()) <= MESSAGE_MAX for m in new), "each message within the cap",
            [len(m) for m in new])
    if template:  # the template's own lines: "- File: F"
        files = [line[len("- File: "):] for m in new for line in m.splitlines()
                 if line.startswith("- File: ")]
        t.check(all(m.startswith("Commit summary with ResultV2\n") for m in new),
                "each part is the template's message", [m[:40] for m in new])
    else:
        files = [line.rsplit(" (", 1)[1].rstrip(")") for m in new for line in m.splitlines()
                 if line.startswith("default/app: ")]
    t.check(sorted(files) == sorted(long_path(i) for i in range(n)),
            "every change in exactly one message", (len(files), len(set(files))))
    t.check(all(dict(trailers(m)).get("Imageguard-Policy") == "default/app" for m in new),
            "each part carries its trailers", [trailers(m)[:1] for m in new])
    t.check(all(":v1.1.0" in env.remote_file(long_path(i)) for i in (0, n // 2, n - 1)),
            "the files moved", "")
    head = env.remote_head()
    r = env.imageguard("reconcile")
    t.check(r.rc == 0 and env.remote_head() == head, "the next pass pushes nothing", r)


def big_move_template(env):
    """The same move with Flux's ResultV2 template: its output over the cap splits the same."""
    big_move(env, RESULT_V2)


def big_file(env):
    """One file whose own changes would pass the cap: a one-line error naming the file, nothing
    pushed, and the next pass says the same (a file is never split between commits)."""
    env.push("team/app", ["v1.0.0"])
    image = env.image("team/app")
    doc = marker_file(image + ":v1.0.0", "app")
    path = long_path(0)
    env.seed({path: "---\n".join([doc] * 2000)})
    head = env.remote_head()
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation())
    env.push("team/app", ["v1.1.0"])
    r = env.imageguard("reconcile")
    t.check(r.rc != 0 and ("file '%s': its 2000 changes need a commit message over" % path)
            in r.err, "the error names the file", r.err[-2000:])
    t.check(env.remote_head() == head, "nothing pushed", env.remote_log()[0][1][:200])


for scenario in (default_message, flux_template, template_values, removed_field, big_move,
                 big_move_template, big_file):
    with Env() as env:
        try:
            scenario(env)
        except Exception:  # a crash is a failure of this scenario, not of the others
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
