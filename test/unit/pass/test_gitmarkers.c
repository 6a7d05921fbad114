/* The marker index against the full walk: a real bare remote moves through a sequence of
 * commits (add, modify, delete, rename, symbolic link, type change, deep paths, malformed
 * files), and after each one the Git store's scan through the index must equal, field by
 * field and in order, markers_scan_tree on the same work tree; plus the index file itself
 * (unchanged blobs not read, corrupt or foreign-version files read as empty). */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/pass/gitmarkers.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/markers/markerindex.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "support/gitrepo.h"

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Every field of every marker and problem, in order. */
static void assert_same_sets(const struct marker_set *a, const struct marker_set *b,
                             const char *step)
{
	ck_assert_msg(a->len == b->len, "%s: %zu markers, the walk %zu", step, a->len, b->len);
	ck_assert_msg(a->problems_len == b->problems_len, "%s: %zu problems, the walk %zu", step,
	              a->problems_len, b->problems_len);
	for (size_t i = 0; i < a->len; i++) {
		const struct marker *x = &a->items[i], *y = &b->items[i];

		ck_assert_msg(
		    same_str(x->file, y->file) && x->line == y->line &&
		        same_str(x->policy, y->policy) && x->part == y->part &&
		        x->style == y->style && x->start == y->start && x->end == y->end &&
		        same_str(x->value, y->value) && same_str(x->setter, y->setter) &&
		        same_str(x->api_version, y->api_version) && same_str(x->kind, y->kind) &&
		        same_str(x->name, y->name) && same_str(x->namespace, y->namespace),
		    "%s: marker %zu differs (%s:%zu vs %s:%zu)", step, i, x->file, x->line, y->file,
		    y->line);
	}
	for (size_t i = 0; i < a->problems_len; i++)
		ck_assert_msg(same_str(a->problems[i].file, b->problems[i].file) &&
		                  a->problems[i].line == b->problems[i].line &&
		                  same_str(a->problems[i].message, b->problems[i].message),
		              "%s: problem %zu differs: %s vs %s", step, i, a->problems[i].message,
		              b->problems[i].message);
}

/* The remote (support/gitrepo.h) and a work clone of it that plays the writer. */
struct fx {
	struct gitrepo r;
	char work[192];
};

static void fx_init(struct fx *f)
{
	static const char *const seed[] = {"README", "x\n", NULL};

	ck_assert_int_eq(gitrepo_init(&f->r, "ig-gitmarkers", seed), 0);
	snprintf(f->work, sizeof(f->work), "%s/work", f->r.dir);
	ck_assert_int_eq(gitrepo_sh("git clone -q %s %s && git -C %s config user.name t && "
	                            "git -C %s config user.email t@localhost",
	                            f->r.url, f->work, f->work, f->work),
	                 0);
}

/* One commit of the writer: a shell snippet run in the work clone, committed and pushed. */
static void writer(const struct fx *f, const char *script)
{
	ck_assert_msg(gitrepo_sh("cd %s && %s && git add -A && git commit -qm step && git push -q",
	                         f->work, script) == 0,
	              "writer: %s", script);
}

#define MARK(img, pol) "image: " img " # {\"$imagepolicy\": \"" pol "\"}"

/* The sequence: each step a commit, then the index scan equals the walk (root and apps/). */
static const struct step {
	const char *what;
	const char *script;
} steps[] = {
    {"seed",
     "mkdir -p apps/sub deep && printf 'a: 1\\n" MARK(
         "r/a:1.0",
         "ns:a") "\\n' >apps/a.yaml && "
                 "printf 'kind: Deployment\\nmetadata:\\n  name: b\\nspec:\\n  " MARK(
                     "r/b:2.0",
                     "ns:b:tag") "\\n  bad: x # {\"$imagepolicy\": 3}\\n' >apps/b.yml && "
                                 "printf '" MARK(
                                     "r/k:1",
                                     "ns:k") "\\n' >apps/sub/Kustomization && "
                                             "printf '" MARK(
                                                 "r/n:1",
                                                 "ns:n") "\\n' >apps/notes.txt && "
                                                         "printf 'x: [\\n" MARK(
                                                             "r/e:1",
                                                             "ns:e") "\\n' >apps/broken.yaml && "
                                                                     "p=deep; for i in $(seq 1 "
                                                                     "63); do p=$p/d; done; mkdir "
                                                                     "-p $p/d/d && "
                                                                     "printf '" MARK(
                                                                         "r/d:1",
                                                                         "ns:d") "\\n' >$p/in.yaml "
                                                                                 "&& "
                                                                                 "printf '" MARK(
                                                                                     "r/d:1",
                                                                                     "ns:d") "\\n' "
                                                                                             ">$p/"
                                                                                             "d/"
                                                                                             "in."
                                                                                             "yaml "
                                                                                             "&& "
                                                                                             "print"
                                                                                             "f "
                                                                                             "'" MARK(
                                                                                                 "r"
                                                                                                 "/"
                                                                                                 "d"
                                                                                                 ":"
                                                                                                 "1",
                                                                                                 "n"
                                                                                                 "s"
                                                                                                 ":"
                                                                                                 "d") "\\n' >$p/d/d/out.yaml"},
    {"modify", "sed -i 's/r\\/a:1.0/r\\/a:1.1/' apps/a.yaml"},
    {"add and delete",
     "printf '" MARK("r/c:1", "ns:c") "\\n' >apps/c.yaml && git rm -q apps/b.yml"},
    {"rename, same blob", "mkdir -p moved && git mv apps/a.yaml moved/a.yaml"},
    {"symbolic link", "ln -s ../moved/a.yaml apps/link.yaml && ln -s sub apps/subdir"},
    {"type changes", "rm apps/link.yaml && printf '" MARK(
                         "r/l:1", "ns:l") "\\n' >apps/link.yaml && "
                                          "rm apps/c.yaml && ln -s ../moved/a.yaml apps/c.yaml"},
    {"executable and a .git name", "chmod +x apps/sub/Kustomization && mkdir -p apps/x.git && "
                                   "printf '" MARK("r/g:1", "ns:g") "\\n' >apps/x.git/g.yaml"},
    {"directory becomes a file",
     "git rm -rq apps/sub && printf '" MARK("r/s:1", "ns:s") "\\n' >apps/sub"},
    {"file becomes a directory", "git rm -q apps/sub && mkdir -p apps/sub && printf '" MARK(
                                     "r/s:2", "ns:s") "\\n' >apps/sub/s.yaml"},
};

static void compare_scans(struct gitstore *g, uint64_t *epoch, const char *subpath,
                          const char *what)
{
	struct marker_set a = MARKER_SET_INIT, b = MARKER_SET_INIT;
	struct error ea = ERROR_INIT, eb = ERROR_INIT;
	int ra = gitmarkers_scan(&a, g, subpath, epoch, &ea);
	int rb = markers_scan_tree(&b, gitstore_workdir(g), subpath, &eb);

	ck_assert_msg(ra == rb, "%s (%s): %d vs the walk's %d: %s / %s", what,
	              subpath ? subpath : "root", ra, rb, ea.msg, eb.msg);
	ck_assert_msg(strcmp(ea.msg, eb.msg) == 0, "%s: '%s' vs '%s'", what, ea.msg, eb.msg);
	assert_same_sets(&a, &b, what);
	markers_release(&a);
	markers_release(&b);
}

START_TEST(index_scan_equals_walk_across_commits)
{
	struct fx f;
	struct gitstore_options o = {0};
	const char *subpaths[] = {NULL,     "apps", "./apps/",    "moved",
	                          "absent", "../x", "apps/subdir"};

	fx_init(&f);
	o.url = f.r.url;
	o.branch = "main";
	o.state_dir = f.r.state;
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		struct gitstore *g = NULL;
		struct error err = ERROR_INIT;
		uint64_t epoch = 0;

		writer(&f, steps[s].script);
		ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
		/* twice: the second scan of the same open is all hits */
		for (int pass = 0; pass < 2; pass++)
			for (size_t k = 0; k < sizeof(subpaths) / sizeof(subpaths[0]); k++)
				compare_scans(g, &epoch, subpaths[k], steps[s].what);
		gitstore_free(g);
	}
	gitrepo_done(&f.r);
}
END_TEST

/* A hard reset of the work tree (a dirty cache) moves the store's epoch: the next scan with the
 * caller's old epoch empties the marker index and writes it anew, and still equals the walk. */
START_TEST(hard_reset_empties_the_index)
{
	struct fx f;
	struct gitstore_options o = {0};
	struct gitstore *g = NULL;
	struct error err = ERROR_INIT;
	struct stat before, after;
	char idx[512];
	uint64_t epoch = 0;

	fx_init(&f);
	writer(&f, "printf '" MARK("r/a:1.0", "ns:a") "\\n' >a.yaml");
	o.url = f.r.url;
	o.branch = "main";
	o.state_dir = f.r.state;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	compare_scans(g, &epoch, NULL, "first open");
	ck_assert_uint_eq(gitstore_worktree_epoch(g), 0);
	snprintf(idx, sizeof(idx), "%s/.git/imageguard-markers", gitstore_dir(g));
	ck_assert_int_eq(stat(idx, &before), 0);
	/* a clean reopen keeps the file as it is */
	gitstore_free(g);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	compare_scans(g, &epoch, NULL, "clean reopen");
	ck_assert_int_eq(stat(idx, &after), 0);
	ck_assert(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
	          before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
	/* a dirty work tree: the open resets it hard */
	ck_assert_int_eq(gitrepo_sh("printf 'x: 1\\n' >>%s/a.yaml", gitstore_workdir(g)), 0);
	gitstore_free(g);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(gitstore_worktree_epoch(g), 1);
	epoch = 0;
	compare_scans(g, &epoch, NULL, "after a hard reset");
	ck_assert_uint_eq(epoch, 1);
	ck_assert_int_eq(stat(idx, &after), 0);
	ck_assert_msg(before.st_mtim.tv_sec != after.st_mtim.tv_sec ||
	                  before.st_mtim.tv_nsec != after.st_mtim.tv_nsec,
	              "the index was not written anew");
	gitstore_free(g);
	gitrepo_done(&f.r);
}
END_TEST

/* ---- the index file, with synthetic file lists over a plain directory ---- */

static void put(const char *dir, const char *name, const char *content)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_ptr_nonnull(fp = fopen(path, "w"));
	fputs(content, fp);
	fclose(fp);
}

static bool link_at_idx;

static size_t scan_value(const char *dir, struct markerindex_file *files, size_t n, char *value,
                         size_t cap)
{
	struct markerindex *ix = NULL;
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	size_t len;

	ck_assert_int_eq(markerindex_load(&ix, dir, "idx", &err), 0);
	ck_assert_msg(markerindex_scan(ix, &s, dir, NULL, files, n, &err) == 0, "%s", err.msg);
	/* where the index lives is a link in one case: saving then fails, nothing else */
	ck_assert_int_eq(markerindex_save(ix, &err) == 0, access(dir, F_OK) == 0 && !link_at_idx);
	len = s.len;
	snprintf(value, cap, "%s", s.len ? s.items[0].value : "");
	markers_release(&s);
	markerindex_free(ix);
	return len;
}

START_TEST(index_file_is_a_cache)
{
	char dir[] = "/tmp/ig-markerindex.XXXXXX", value[64];
	struct markerindex_file files[] = {{"a.yaml", {1}, 0100644}};

	ck_assert_ptr_nonnull(mkdtemp(dir));
	put(dir, "a.yaml", MARK("r/a:1", "ns:a") "\n");
	ck_assert_uint_eq(scan_value(dir, files, 1, value, sizeof(value)), 1);
	ck_assert_str_eq(value, "r/a:1");
	/* the same blob id: the bytes are not read again (the index answers) */
	put(dir, "a.yaml", MARK("r/a:2", "ns:a") "\n");
	scan_value(dir, files, 1, value, sizeof(value));
	ck_assert_str_eq(value, "r/a:1");
	/* a new blob id: read */
	files[0].oid[0] = 2;
	scan_value(dir, files, 1, value, sizeof(value));
	ck_assert_str_eq(value, "r/a:2");
	/* a damaged index (one byte flipped) reads as empty: the file is read */
	put(dir, "a.yaml", MARK("r/a:3", "ns:a") "\n");
	ck_assert_int_eq(
	    gitrepo_sh("printf 'Z' | dd of=%s/idx bs=1 seek=30 conv=notrunc 2>/dev/null", dir), 0);
	scan_value(dir, files, 1, value, sizeof(value));
	ck_assert_str_eq(value, "r/a:3");
	/* another scanner version, under a checksum that holds, reads as empty too */
	put(dir, "a.yaml", MARK("r/a:4", "ns:a") "\n");
	ck_assert_int_eq(
	    gitrepo_sh("/usr/bin/python3 -c \"import struct,sys; p=sys.argv[1]; "
	               "d=bytearray(open(p,'rb').read()[:-8]); d[8]^=0xff; h=0xcbf29ce484222325\n"
	               "for c in d: h=((h^c)*0x100000001b3)&(2**64-1)\n"
	               "open(p,'wb').write(bytes(d)+struct.pack('<Q',h))\" %s/idx",
	               dir),
	    0);
	scan_value(dir, files, 1, value, sizeof(value));
	ck_assert_str_eq(value, "r/a:4");
	/* truncated, and garbage */
	put(dir, "a.yaml", MARK("r/a:5", "ns:a") "\n");
	ck_assert_int_eq(gitrepo_sh("truncate -s 20 %s/idx", dir), 0);
	scan_value(dir, files, 1, value, sizeof(value));
	ck_assert_str_eq(value, "r/a:5");
	put(dir, "a.yaml", MARK("r/a:6", "ns:a") "\n");
	ck_assert_int_eq(gitrepo_sh("head -c 4096 /dev/urandom >%s/idx", dir), 0);
	scan_value(dir, files, 1, value, sizeof(value));
	ck_assert_str_eq(value, "r/a:6");
	/* a symbolic link where the index lives is not followed, nor replaced */
	ck_assert_int_eq(gitrepo_sh("rm %s/idx && ln -s /nonexistent-ig %s/idx", dir, dir), 0);
	link_at_idx = true;
	put(dir, "a.yaml", MARK("r/a:7", "ns:a") "\n");
	files[0].oid[0] = 3;
	scan_value(dir, files, 1, value, sizeof(value));
	ck_assert_str_eq(value, "r/a:7");
	ck_assert_int_ne(access("/nonexistent-ig", F_OK), 0);
	gitrepo_sh("rm -rf %s", dir);
}
END_TEST

/* A file the list names but the work tree holds as a link is never followed. */
START_TEST(index_scan_never_follows_links)
{
	char dir[] = "/tmp/ig-markerindex.XXXXXX", outside[] = "/tmp/ig-markerindex-out.XXXXXX";
	struct markerindex_file files[] = {{"a.yaml", {1}, 0100644}, {"sub/b.yaml", {2}, 0100644}};
	struct markerindex *ix = NULL;
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_ptr_nonnull(mkdtemp(outside));
	put(outside, "a.yaml", MARK("r/secret:1", "ns:a") "\n");
	put(outside, "b.yaml", MARK("r/secret:1", "ns:b") "\n");
	ck_assert_int_eq(
	    gitrepo_sh("ln -s %s/a.yaml %s/a.yaml && ln -s %s %s/sub", outside, dir, outside, dir),
	    0);
	ck_assert_int_eq(markerindex_load(&ix, dir, "idx", &err), 0);
	ck_assert_int_eq(markerindex_scan(ix, &s, dir, NULL, files, 2, &err), 0);
	ck_assert_uint_eq(s.len, 0);
	ck_assert_uint_eq(s.problems_len, 2); /* "cannot read file": a link */
	markers_release(&s);
	markerindex_free(ix);
	gitrepo_sh("rm -rf %s %s", dir, outside);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gitmarkers");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, index_scan_equals_walk_across_commits);
	tcase_add_test(tc, hard_reset_empties_the_index);
	tcase_add_test(tc, index_file_is_a_cache);
	tcase_add_test(tc, index_scan_never_follows_links);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
