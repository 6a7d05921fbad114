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


for scenario in (default_message, flux_template, template_values, removed_field):
    with Env() as env:
        try:
            scenario(env)
        except Exception:  # a crash is a failure of this scenario, not of the others
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
