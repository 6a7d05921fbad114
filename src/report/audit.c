/* JSON-lines audit records: built with jansson, appended with O_APPEND in one write per
 * record so concurrent writers never interleave inside a line, fsynced once per pass. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/report/audit.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"
#include "imageguard/util/safefile.h"
#include "imageguard/util/strvec.h"
#include "imageguard/util/jsonout.h"

struct audit {
	int fd;
	bool owned;
	bool with_tags;
	char *path;
};

int audit_open(struct audit **out, const char *path, bool with_tags, struct error *err)
{
	struct audit *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (!a || !(a->path = strdup(path))) {
		free(a);
		return error_set(err, IG_EFAIL, "audit log '%s': out of memory", path);
	}
	a->with_tags = with_tags;
	if (strcmp(path, "-") == 0) {
		a->fd = STDOUT_FILENO;
	} else {
		a->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
		if (a->fd < 0) {
			error_set(err, IG_EFAIL, "audit log '%s': %s", path, strerror(errno));
			free(a->path);
			free(a);
			return IG_EFAIL;
		}
		a->owned = true;
	}
	*out = a;
	return 0;
}

static json_t *string_array(const struct strvec *v)
{
	json_t *a = json_array();

	for (size_t i = 0; a && v && i < v->len; i++)
		json_array_append_new(a, json_string(v->items[i]));
	return a;
}

static json_t *record_json(const struct audit *a, const struct audit_record *r)
{
	char when[48];
	json_t *o = json_object();

	if (!o)
		return NULL;
	log_timestamp(when, sizeof(when));
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "policy", jsonout_str(r->policy));
	json_object_set_new(o, "image", jsonout_str(r->image));
	json_object_set_new(o, "tag_count",
	                    r->listed ? json_integer((json_int_t)r->tag_count) : json_null());
	json_object_set_new(o, "tags_sha256", jsonout_str(r->listed ? r->tags_sha256 : NULL));
	if (a->with_tags)
		json_object_set_new(o, "tags", r->listed ? string_array(r->tags) : json_null());
	json_object_set_new(o, "current", jsonout_str(r->current));
	json_object_set_new(o, "candidate", jsonout_str(r->candidate));
	json_object_set_new(o, "decision", jsonout_str(r->decision));
	json_object_set_new(o, "reason", jsonout_str(r->reason));
	json_object_set_new(o, "warnings", string_array(r->warnings));
	json_object_set_new(o, "file", jsonout_str(r->file));
	json_object_set_new(o, "line", jsonout_line(r->file, r->line));
	json_object_set_new(o, "commit", jsonout_str(r->commit));
	json_object_set_new(o, "digest", jsonout_str(r->digest));
	if (r->message)
		json_object_set_new(o, "message", json_string(r->message));
	if (r->rollback_reason)
		json_object_set_new(o, "rollback_reason", json_string(r->rollback_reason));
	if (r->current_digest)
		json_object_set_new(o, "current_digest", json_string(r->current_digest));
	if (r->current_created)
		json_object_set_new(o, "current_created", json_string(r->current_created));
	if (r->candidate_created)
		json_object_set_new(o, "candidate_created", json_string(r->candidate_created));
	return o;
}

/* Writes o (taken: released here) as one line. */
static int write_object(struct audit *a, json_t *o, struct error *err)
{
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	char *line = NULL;
	size_t len;
	int error = 0;

	if (!text || !(line = malloc((len = strlen(text)) + 2))) {
		error = error_set(err, IG_EFAIL, "audit log '%s': out of memory", a->path);
		goto done;
	}
	memcpy(line, text, len);
	line[len++] = '\n';
	/* One write(2) per record: O_APPEND makes each line land whole at the end. */
	if (safefile_write_all(a->fd, line, len) < 0)
		error = error_set(err, IG_EFAIL, "audit log '%s': %s", a->path, strerror(errno));
done:
	free(line);
	free(text);
	json_decref(o);
	return error;
}

int audit_write(struct audit *a, const struct audit_record *r, struct error *err)
{
	return write_object(a, record_json(a, r), err);
}

json_t *audit_verify_json(const struct verify_record *r, const char *event)
{
	char when[48];
	json_t *o = json_object();

	if (!o)
		return NULL;
	log_timestamp(when, sizeof(when));
	json_object_set_new(o, "time", json_string(when));
	if (event)
		json_object_set_new(o, "event", json_string(event));
	json_object_set_new(o, "policy", jsonout_str(r->policy));
	json_object_set_new(o, "workload", jsonout_str(r->workload));
	json_object_set_new(o, "kind", jsonout_str(r->kind));
	json_object_set_new(o, "namespace", jsonout_str(r->ns));
	json_object_set_new(o, "name", jsonout_str(r->name));
	json_object_set_new(o, "container", jsonout_str(r->container));
	json_object_set_new(o, "pod", jsonout_str(r->pod));
	json_object_set_new(o, "file", jsonout_str(r->file));
	json_object_set_new(o, "line", jsonout_line(r->file, r->line));
	json_object_set_new(o, "image", jsonout_str(r->image));
	json_object_set_new(o, "expected_tag", jsonout_str(r->expected_tag));
	json_object_set_new(o, "expected_digest", jsonout_str(r->expected_digest));
	json_object_set_new(o, "running_image", jsonout_str(r->running_image));
	json_object_set_new(o, "running_digest", jsonout_str(r->running_digest));
	json_object_set_new(o, "status", jsonout_str(r->status));
	json_object_set_new(o, "reason", jsonout_str(r->reason));
	return o;
}

int audit_write_drift(struct audit *a, const struct verify_record *r, struct error *err)
{
	return write_object(a, audit_verify_json(r, "drift"), err);
}

int audit_sync(struct audit *a, struct error *err)
{
	struct stat st;

	if (fstat(a->fd, &st) == 0 && !S_ISREG(st.st_mode))
		return 0;
	if (fsync(a->fd) < 0)
		return error_set(err, IG_EFAIL, "audit log '%s': fsync: %s", a->path,
		                 strerror(errno));
	return 0;
}

void audit_close(struct audit *a)
{
	if (!a)
		return;
	if (a->owned)
		close(a->fd);
	free(a->path);
	free(a);
}
