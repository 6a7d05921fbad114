/* Benchmark driver for bench/git.sh: applies one image update end to end with the warm clone
 * (open = fetch + reset, scan the manifests for markers through the marker index, splice the
 * new tag into the marked files, commit, push). Usage: git_bench URL STATE_DIR POLICY NEW_TAG
 * [COUNT] — COUNT updates in a row (tags NEW_TAG.0, .1, ...), printing the mean milliseconds per
 * update. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <git2.h>

#include "imageguard/util/buf.h"
#include "imageguard/git/commitmsg.h"
#include "imageguard/util/error.h"
#include "imageguard/pass/gitmarkers.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/markers/markers.h"
#include "imageguard/registry/imageref.h"

#define FILE_MAX (4 * 1024 * 1024)

struct update {
	struct gitstore *g;
	const char *policy;
	const char *tag;
	size_t changed;
	uint64_t epoch; /* gitmarkers_scan's memory of the store's work tree epoch */
};

static int write_file(const char *path, const struct buf *b)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(b->data, 1, b->len, f) == b->len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Rewrites each marker of the policy (TAG part, or the tag of an IMAGE) to u->tag. */
static int edit(void *ctx, const char *workdir, struct buf *message, struct error *err)
{
	struct update *u = ctx;
	struct marker_set set = MARKER_SET_INIT;
	struct buf data = BUF_INIT_MAX(FILE_MAX), out = BUF_INIT_MAX(FILE_MAX), path = BUF_INIT;
	struct commitmsg_change ch = {
	    .policy = u->policy, .new_value = u->tag, .decision = "update/forward"};
	struct commitmsg_input in = {.tmpl_name = "bench",
	                             .automation_namespace = "bench",
	                             .automation_name = "apps",
	                             .changes = &ch,
	                             .n = 1};
	struct imageref_parts ref;
	char *value = NULL, *name = NULL;
	size_t i;
	int rc;

	u->changed = 0;
	if ((rc = gitmarkers_scan(&set, u->g, NULL, &u->epoch, err)) < 0)
		goto done;
	for (i = 0; i < set.len; i++) {
		struct marker *m = &set.items[i];
		struct marker_edit e;

		if (strcmp(m->policy, u->policy) != 0)
			continue;
		buf_reset(&path);
		buf_printf(&path, "%s%s", workdir, m->file);
		if ((rc = buf_read_file(&data, path.data)) < 0) {
			rc = error_set(err, rc, "'%s': cannot read", path.data);
			goto done;
		}
		free(value);
		value = NULL;
		/* the image name as the marker holds it (the policy's, in a real pass) */
		imageref_split(&ref, m->value, strlen(m->value));
		free(name);
		if (!(name = strndup(m->value, ref.name_len))) {
			rc = error_set(err, IG_EFAIL, "out of memory");
			goto done;
		}
		if ((rc = markers_value_for(&value, m, name, u->tag, NULL, err)) < 0)
			goto done;
		if (strcmp(value, m->value) == 0)
			continue;
		e.marker = m;
		e.value = value;
		if ((rc = markers_apply(&out, data.data, data.len, &e, 1, err)) < 0)
			goto done;
		if (write_file(path.data, &out) < 0) {
			rc = error_set(err, IG_EFAIL, "'%s': cannot write", path.data);
			goto done;
		}
		ch.old_value = m->value;
		ch.file = m->file;
		u->changed++;
		if ((rc = commitmsg_render(message, &in, err)) < 0)
			goto done;
	}
done:
	free(value);
	free(name);
	markers_release(&set);
	buf_release(&data);
	buf_release(&out);
	buf_release(&path);
	return rc;
}

static double clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* user + system time of the process: what the update costs, whatever else the machine runs */
static double cpu_ms(void)
{
	return clock_ms(CLOCK_PROCESS_CPUTIME_ID);
}

int main(int argc, char **argv)
{
	struct gitstore_options o = {
	    .branch = "main", .author_name = "bench", .author_email = "bench@localhost"};
	struct error err = ERROR_INIT;
	struct gitstore *g = NULL;
	char commit[41], tag[128];
	long count = argc > 5 ? strtol(argv[5], NULL, 10) : 1;
	double start, cpu_start, total = 0, cpu = 0;
	long i;

	if (argc < 5 || count < 1) {
		fprintf(stderr, "usage: git_bench URL STATE_DIR POLICY NEW_TAG [COUNT]\n");
		return 2;
	}
	o.url = argv[1];
	o.state_dir = argv[2];
	git_libgit2_init(); /* as main.c: once per process, not per open (CA bundle parsed once) */
	for (i = 0; i < count; i++) {
		struct update u = {NULL, argv[3], tag, 0, 0};

		snprintf(tag, sizeof(tag), "%s.%ld", argv[4], i);
		start = now_ms();
		cpu_start = cpu_ms();
		if (gitstore_open(&g, &o, &err) < 0 ||
		    (u.g = g, gitstore_commit_push(commit, g, edit, &u, &err)) < 0) {
			fprintf(stderr, "git_bench: %s\n", err.msg);
			gitstore_free(g);
			return 1;
		}
		gitstore_free(g);
		g = NULL;
		total += now_ms() - start;
		cpu += cpu_ms() - cpu_start;
		if (u.changed != 1 || !commit[0]) {
			fprintf(stderr, "git_bench: expected one change and a commit, got %zu\n",
			        u.changed);
			return 1;
		}
	}
	printf("%.1f %.1f\n", total / (double)count, cpu / (double)count);
	git_libgit2_shutdown();
	return 0;
}
