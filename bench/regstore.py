"""Tags laid out directly in docker-registry's filesystem storage, for the benches that need
thousands of repositories or tags (bench/reconcile_bench.py, bench/renovate_bench.py): one image
pushed through the API as bench/r0, then per repository a copy of its layer and revision links
and one tag link per tag. Every tag is a real manifest, listed and served; it takes seconds
instead of the minutes one manifest PUT per tag would."""
import os
import shutil


def link_repos(reg_dir, digest, tag_lists):
    """Repositories bench/r<i> (bench/r0 already pushed with digest) holding tag_lists[i]."""
    hexd = digest.split(":")[1]
    root = os.path.join(reg_dir, "data", "docker", "registry", "v2", "repositories", "bench")
    src = os.path.join(root, "r0")
    for i, tags in enumerate(tag_lists):
        repo = os.path.join(root, "r%d" % i)
        if i:
            os.makedirs(os.path.join(repo, "_manifests"))
            shutil.copytree(os.path.join(src, "_layers"), os.path.join(repo, "_layers"))
            shutil.copytree(os.path.join(src, "_manifests", "revisions"),
                            os.path.join(repo, "_manifests", "revisions"))
        for tag in tags:
            d = os.path.join(repo, "_manifests", "tags", tag)
            os.makedirs(os.path.join(d, "current"), exist_ok=True)
            os.makedirs(os.path.join(d, "index", "sha256", hexd), exist_ok=True)
            for p in (os.path.join(d, "current", "link"),
                      os.path.join(d, "index", "sha256", hexd, "link")):
                with open(p, "w") as f:
                    f.write(digest)
