#!/usr/bin/python3
"""A massif.out's snapshot (default: the peak) as bytes by category: each heap-tree leaf goes to
the first rule (a substring of any frame on its stack, innermost first) that matches.

    bench/massif_by.py MASSIF_OUT [SNAPSHOT_INDEX]"""
import os
import re
import sys

RULES = [  # (category, substrings of frames): the first rule with a frame on the stack wins
    ("identities: remember()'s uid map", ["remember (kubesource"]),
    ("automations: ks->loaded", []),
    ("load: document texts (json_dumps)", ["document (kubesource", "namespace_docs (kube"]),
    ("load: owners_config", ["owners_config"]),
    ("config: regexes (pcre2)", ["pcre2_"]),
    ("config: config_load_documents", ["config_load_documents", "config_"]),
    ("watch cache: slim copies", ["kubesource_slim"]),
    ("watch cache: keys/objects table", ["take (kubewatch", "on_event (kubewatch"]),
    ("watch cache: parsed pages (json_loadb; spec/metadata parts the slim copies share)",
     ["json_loadb"]),
    ("snapshot arrays", ["kubewatch_snapshot"]),
    ("registry/listing", ["registry", "listmemo", "scan_", "tags"]),
    ("git/markers/pass", ["git_", "libgit2", "marker", "reconcile", "pass_"]),
    ("curl/ssl", ["libcurl", "libcrypto", "libssl", "gnutls"]),
]


def parse(path):
    snaps, cur, stack = [], None, []
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("snapshot="):
            cur = {"n": int(line.split("=")[1]), "tree": None}
            snaps.append(cur)
        elif line.startswith("mem_heap_B="):
            cur["heap"] = int(line.split("=")[1])
        elif line.startswith("mem_heap_extra_B="):
            cur["extra"] = int(line.split("=")[1])
        elif line.startswith("heap_tree="):
            cur["kind"] = line.split("=")[1]
            stack = []
        elif re.match(r"^ *n\d+: ", line):
            depth = len(line) - len(line.lstrip(" "))
            m = re.match(r"^ *n(\d+): (\d+) (.*)$", line)
            node = {"kids": int(m.group(1)), "bytes": int(m.group(2)), "fn": m.group(3),
                    "children": []}
            del stack[depth:]
            if stack:
                stack[-1]["children"].append(node)
            else:
                cur["tree"] = node
            stack.append(node)
    return snaps


def leaves(node, path):
    if not node["children"]:
        yield node["bytes"], path + [node["fn"]]
        return
    rest = node["bytes"] - sum(c["bytes"] for c in node["children"])
    if rest > 0:
        yield rest, path + [node["fn"]]
    for c in node["children"]:
        yield from leaves(c, path + [node["fn"]])


def main():
    snaps = parse(sys.argv[1])
    if len(sys.argv) > 2:
        snap = [s for s in snaps if s["n"] == int(sys.argv[2])][0]
    else:
        snap = [s for s in snaps if s.get("kind") == "peak"][0]
    cats = {}
    detail = os.environ.get("DETAIL")
    for b, path in leaves(snap["tree"], []):
        cat = "other"
        for name, subs in RULES:
            if any(s in f for f in path for s in subs):
                cat = name
                break
        if detail and detail in cat:
            proj = [re.sub(r"^0x[0-9A-F]+: ", "", f) for f in path[1:]
                    if re.search(r"\(\w+\.c:\d+\)", f)]
            cat += " <- " + " <- ".join(proj[:3])
        if cat == "other":
            proj = [f for f in path[1:] if re.search(r"\(\w+\.c:\d+\)", f)]
            cat = "other: " + (re.sub(r"^0x[0-9A-F]+: ", "", proj[0]) if proj else path[-1][:60])
        cats[cat] = cats.get(cat, 0) + b
    print("snapshot %d: heap %d B, malloc overhead (massif's extra) %d B" % (
        snap["n"], snap["heap"], snap["extra"]))
    for k, v in sorted(cats.items(), key=lambda kv: -kv[1]):
        if v >= 100000 or len(sys.argv) > 3:
            print("%12d  %6.2f MiB  %s" % (v, v / 1048576, k))


if __name__ == "__main__":
    main()
