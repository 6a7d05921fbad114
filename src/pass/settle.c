/* The settle memory as a small JSON file beside the clone cache: one entry per policy (its
 * latest candidate, digest and first-seen time), replaced whenever the candidate changes. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/pass/settle.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define SETTLE_FILE_MAX ((size_t)8 << 20)

struct settle {
	char *path;       /* <state_dir>/settle.json */
	json_t *policies; /* {"ns/name": {"candidate", "digest", "since"}} */
	bool changed;
};

static json_t *read_policies(const char *path)
{
	struct buf b = BUF_INIT_MAX(SETTLE_FILE_MAX);
	json_error_t jerr;
	json_t *root = NULL, *p;

	if (buf_read_file(&b, path) < 0) {
		buf_release(&b);
		return json_object();
	}
	root = json_loadb(b.data, b.len, 0, &jerr);
	buf_release(&b);
	p = json_object_get(root, "policies");
	if (!json_is_object(p)) {
		log_warn("settle.state", "file '%s': not a settle memory (%s): clocks restart",
		         path, root ? "no policies" : jerr.text);
		json_decref(root);
		return json_object();
	}
	json_incref(p);
	json_decref(root);
	return p;
}

int settle_open(struct settle **out, const char *state_dir, struct error *err)
{
	struct settle *s = calloc(1, sizeof(*s));
	struct buf path = BUF_INIT;

	*out = NULL;
	if (!s || buf_printf(&path, "%s/settle.json", state_dir) < 0) {
		free(s);
		buf_release(&path);
		return error_oom(err);
	}
	s->path = buf_detach(&path);
	if (!(s->policies = read_policies(s->path))) {
		settle_free(s);
		return error_oom(err);
	}
	*out = s;
	return 0;
}

void settle_free(struct settle *s)
{
	if (!s)
		return;
	json_decref(s->policies);
	free(s->path);
	free(s);
}

static bool same(json_t *e, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(e, key));

	return want ? v && strcmp(v, want) == 0 : json_is_null(json_object_get(e, key));
}

time_t settle_since(struct settle *s, const char *policy, const char *candidate, const char *digest,
                    time_t now)
{
	json_t *e = json_object_get(s->policies, policy);
	json_int_t since = json_integer_value(json_object_get(e, "since"));

	if (e && same(e, "candidate", candidate) && same(e, "digest", digest) && since > 0 &&
	    since <= (json_int_t)now)
		return (time_t)since;
	e = json_pack("{s:s, s:s?, s:I}", "candidate", candidate, "digest", digest, "since",
	              (json_int_t)now);
	if (!e || json_object_set_new(s->policies, policy, e) < 0)
		return (time_t)-1;
	s->changed = true;
	return now;
}

void settle_keep_listed(struct settle *s, const char *policy, const char *const *tags, size_t n)
{
	const char *cand =
	    json_string_value(json_object_get(json_object_get(s->policies, policy), "candidate"));

	if (!cand)
		return;
	for (size_t i = 0; i < n; i++)
		if (strcmp(tags[i], cand) == 0)
			return;
	json_object_del(s->policies, policy);
	s->changed = true;
}

int settle_save(struct settle *s, struct error *err)
{
	struct buf tmp = BUF_INIT;
	json_t *root = NULL;
	int fd = -1, error = 0;
	FILE *f = NULL;

	if (!s->changed)
		return 0;
	if (buf_printf(&tmp, "%s.XXXXXX", s->path) < 0 ||
	    !(root = json_pack("{s:i, s:O}", "version", 1, "policies", s->policies))) {
		error = error_oom(err);
		goto done;
	}
	/* mkstemp: O_CREAT|O_EXCL, mode 0600, a random name in the state dir */
	if ((fd = mkstemp(tmp.data)) < 0 || !(f = fdopen(fd, "w")) ||
	    json_dumpf(root, f, JSON_COMPACT | JSON_SORT_KEYS) < 0 || fflush(f) != 0 ||
	    fsync(fd) < 0) {
		error = error_set(err, IG_EFAIL, "file '%s': %s", s->path, strerror(errno));
		goto done;
	}
	if (rename(tmp.data, s->path) < 0) {
		error = error_set(err, IG_EFAIL, "file '%s': %s", s->path, strerror(errno));
		goto done;
	}
	s->changed = false;
done:
	if (f)
		fclose(f);
	else if (fd >= 0)
		close(fd);
	if (error < 0 && fd >= 0)
		unlink(tmp.data);
	json_decref(root);
	buf_release(&tmp);
	return error;
}
