/* Pass reports: the items reconcile fills, and their three renderings (text for a person,
 * JSON for scripts, audit records for after an incident). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/report/audit.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/escape.h"
#include "imageguard/registry/imageconfig.h"
#include "imageguard/registry/taglist.h"
#include "imageguard/report/report.h"
#include "imageguard/util/strpack.h"
#include "imageguard/util/strvec.h"
#include "imageguard/util/vec.h"
#include "imageguard/util/jsonout.h"

int report_join(struct report *dst, struct report *src)
{
	struct report_item *p;

	if (!src->len)
		return 0;
	if (!dst->len) { /* nothing to keep: take src's array, with no second copy at the peak */
		free(dst->items);
		dst->items = src->items;
		dst->len = src->len;
		dst->cap = src->cap;
		src->items = NULL;
		src->len = src->cap = 0;
		return 0;
	}
	if (src->len > SIZE_MAX / sizeof(*p) - dst->len)
		return IG_EFAIL;
	/* grown only: a realloc to the joined length alone would cut dst's spare room while its
	 * cap still counted it (the next report_add wrote past the block) */
	if (dst->cap < dst->len + src->len) {
		if (!(p = realloc(dst->items, (dst->len + src->len) * sizeof(*p))))
			return IG_EFAIL;
		dst->items = p;
		dst->cap = dst->len + src->len;
	}
	memcpy(dst->items + dst->len, src->items, src->len * sizeof(*p));
	dst->len += src->len;
	free(src->items);
	src->items = NULL;
	src->len = src->cap = 0;
	return 0;
}

int report_add(struct report_item **out, struct report *r)
{
	struct report_item *p = vec_reserve(r->items, &r->cap, r->len, sizeof(*p), 16);

	if (!p)
		return IG_EFAIL;
	r->items = p;
	*out = &r->items[r->len++];
	memset(*out, 0, sizeof(**out));
	return 0;
}

int report_reserve(struct report *r, size_t n)
{
	struct report_item *p;

	if (r->cap >= n)
		return 0;
	if (n > SIZE_MAX / sizeof(*p) || !(p = realloc(r->items, n * sizeof(*p))))
		return IG_EFAIL;
	r->items = p;
	r->cap = n;
	return 0;
}

static void item_release(struct report_item *it)
{
	if (it->block) {
		free(it->block);
		return;
	}
	free(it->policy);
	free(it->image);
	free(it->file);
	free(it->current);
	free(it->candidate);
	free(it->digest);
	free(it->commit);
	free(it->message);
	free(it->current_digest);
	free(it->current_created);
	free(it->candidate_created);
	free(it->automation);
	free(it->object);
}

void report_truncate(struct report *r, size_t len)
{
	while (r->len > len)
		item_release(&r->items[--r->len]);
}

int report_set(char **field, const char *s)
{
	char *copy = NULL;

	if (s && !(copy = strdup(s)))
		return IG_EFAIL;
	free(*field);
	*field = copy;
	return 0;
}

const char *report_created_text(char text[REPORT_CREATED_LEN], const struct guard_created *c)
{
	if (!c || c->state != GUARD_CREATED_KNOWN)
		return NULL;
	imageconfig_format_time(text, REPORT_CREATED_LEN, &c->time);
	return text;
}

int report_set_created(char **field, const struct guard_created *c)
{
	char text[REPORT_CREATED_LEN];

	return report_set(field, report_created_text(text, c));
}

int report_set_strings(struct report_item *it, const struct report_strings *s)
{
	const char *v[] = {s->policy,
	                   s->image,
	                   s->file,
	                   s->current,
	                   s->candidate,
	                   s->digest,
	                   s->commit,
	                   s->message,
	                   s->current_digest,
	                   s->current_created,
	                   s->candidate_created,
	                   s->automation};
	char **f[] = {&it->policy,
	              &it->image,
	              &it->file,
	              &it->current,
	              &it->candidate,
	              &it->digest,
	              &it->commit,
	              &it->message,
	              &it->current_digest,
	              &it->current_created,
	              &it->candidate_created,
	              &it->automation};
	enum { N = sizeof(v) / sizeof(v[0]) };
	size_t bytes = strpack_size(v, NULL, N, 0);
	char *block, *out[N];

	if (bytes == SIZE_MAX || !(block = malloc(bytes ? bytes : 1)))
		return IG_EFAIL;
	item_release(it);
	it->block = block;
	strpack_copy(block, v, NULL, N, 0, out);
	for (size_t k = 0; k < N; k++)
		*f[k] = out[k];
	return 0;
}

int report_add_failure(struct report *r, const char *automation, const char *message)
{
	struct report_failure *f = realloc(r->failures, (r->failures_len + 1) * sizeof(*f));

	if (!f)
		return IG_EFAIL;
	r->failures = f;
	f = &f[r->failures_len];
	f->automation = strdup(automation);
	f->message = strdup(message);
	if (!f->automation || !f->message) {
		free(f->automation);
		free(f->message);
		return IG_EFAIL;
	}
	r->failures_len++;
	return 0;
}

void report_release(struct report *r)
{
	for (size_t i = 0; i < r->len; i++)
		item_release(&r->items[i]);
	for (size_t i = 0; i < r->failures_len; i++) {
		free(r->failures[i].automation);
		free(r->failures[i].message);
	}
	free(r->failures);
	free(r->items);
	memset(r, 0, sizeof(*r));
}

int report_warning_names(struct strvec *out, unsigned warnings)
{
	for (unsigned bit = 1; bit && bit <= GUARD_WARN_LAST; bit <<= 1)
		if ((warnings & bit) && strvec_push(out, guard_warning_name(bit)) < 0)
			return IG_EFAIL;
	return 0;
}

/* Appends s escaped (escape_append), or "-" for NULL: values from Git, registries and
 * annotations can never end the line or drive a terminal. */
static int put(struct buf *out, const char *s)
{
	return s ? escape_append(out, s) : buf_puts(out, "-");
}

static int text_head(struct buf *out, const struct report_item *it)
{
	int error = put(out, it->policy);

	if (error == 0 && it->file) {
		if ((error = buf_puts(out, " ")) == 0 && (error = put(out, it->file)) == 0 &&
		    (error = buf_printf(out, ":%zu ", it->line)) == 0 &&
		    (error = put(out, it->current)) == 0 && (error = buf_puts(out, " -> ")) == 0)
			error = put(out, it->candidate);
	} else if (error == 0) {
		error = buf_puts(out, " -");
	}
	if (error == 0)
		error = buf_printf(out, " %s/%s", guard_decision_name(it->decision),
		                   guard_reason_name(it->reason));
	return error;
}

static int text_line(struct buf *out, const struct report_item *it, unsigned shards)
{
	struct strvec w = STRVEC_INIT;
	int error = text_head(out, it);

	if (error == 0 && (error = report_warning_names(&w, it->warnings)) == 0 && w.len) {
		error = buf_puts(out, " [");
		for (size_t i = 0; error == 0 && i < w.len; i++)
			error = buf_printf(out, "%s%s", i ? "," : "", w.items[i]);
		if (error == 0)
			error = buf_puts(out, "]");
	}
	if (error == 0 && shards && it->has_shard)
		error = buf_printf(out, " shard %u/%u", it->shard, shards);
	if (error == 0 && it->commit)
		error = buf_printf(out, " commit %.12s", it->commit);
	/* errors, and a digest-tracked policy's hold (which builds, created when) explain */
	if (error == 0 && it->message &&
	    (it->decision == GUARD_ERROR ||
	     (it->decision == GUARD_HOLD && it->reason != GUARD_OVERRIDE &&
	      it->reason != GUARD_CANDIDATE_MISSING)) &&
	    (error = buf_puts(out, ": ")) == 0)
		error = escape_append(out, it->message);
	if (error == 0)
		error = buf_puts(out, "\n");
	strvec_release(&w);
	return error;
}

int report_text(struct buf *out, const struct report *r)
{
	int error = 0;

	for (size_t i = 0; error == 0 && i < r->len; i++)
		error = text_line(out, &r->items[i], r->shards);
	return error;
}

static json_t *item_json(const struct report_item *it, unsigned shards)
{
	struct strvec w = STRVEC_INIT;
	json_t *o = json_object(), *warnings = json_array();

	report_warning_names(&w, it->warnings);
	for (size_t i = 0; warnings && i < w.len; i++)
		json_array_append_new(warnings, json_string(w.items[i]));
	strvec_release(&w);
	if (!o || !warnings) {
		json_decref(o);
		json_decref(warnings);
		return NULL;
	}
	json_object_set_new(o, "policy", jsonout_str(it->policy));
	json_object_set_new(o, "image", jsonout_str(it->image));
	json_object_set_new(o, "file", jsonout_str(it->file));
	json_object_set_new(o, "line", jsonout_line(it->file, it->line));
	json_object_set_new(o, "current", jsonout_str(it->current));
	json_object_set_new(o, "candidate", jsonout_str(it->candidate));
	json_object_set_new(o, "decision", json_string(guard_decision_name(it->decision)));
	json_object_set_new(o, "reason", json_string(guard_reason_name(it->reason)));
	json_object_set_new(o, "warnings", warnings);
	if (it->digest)
		json_object_set_new(o, "digest", json_string(it->digest));
	if (shards && it->has_shard) {
		json_object_set_new(o, "shard", json_integer(it->shard));
		json_object_set_new(o, "shards", json_integer(shards));
	}
	if (it->commit)
		json_object_set_new(o, "commit", json_string(it->commit));
	if (it->message)
		json_object_set_new(o, "message", json_string(it->message));
	if (it->object)
		json_object_set_new(o, "object", json_string(it->object));
	if (it->current_digest)
		json_object_set_new(o, "current_digest", json_string(it->current_digest));
	if (it->current_created)
		json_object_set_new(o, "current_created", json_string(it->current_created));
	if (it->candidate_created)
		json_object_set_new(o, "candidate_created", json_string(it->candidate_created));
	return o;
}

/* Item o as json_dumps(JSON_INDENT(2)) prints it as an element of the report's array: each of
 * its lines two spaces further in. A string never holds a raw newline, so the lines are
 * exact, and one item's tree at a time is built instead of the whole report's. */
static int item_text(struct buf *out, json_t *o)
{
	char *text = json_dumps(o, JSON_INDENT(2));
	int error = 0;

	if (!text)
		return IG_EFAIL;
	for (const char *p = text; *p && error == 0;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if ((error = buf_puts(out, "  ")) == 0)
			error = buf_append(out, p, n);
		p += n;
	}
	free(text);
	return error;
}

/* ---- the same text without jansson, for items whose strings are all printable ASCII ---- */

static bool is_plain(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* True when every string of the item is printable ASCII: then jansson would keep each one and
 * escape only '"' and '\\', and plain_item writes what item_text would. */
static bool item_is_plain(const struct report_item *it, const struct strvec *w)
{
	const char *s[] = {it->policy,
	                   it->image,
	                   it->file,
	                   it->current,
	                   it->candidate,
	                   it->digest,
	                   it->commit,
	                   it->message,
	                   it->current_digest,
	                   it->current_created,
	                   it->candidate_created,
	                   it->object};

	if (!it->policy)
		return false;
	for (size_t i = 0; i < sizeof(s) / sizeof(*s); i++)
		if (!is_plain(s[i]))
			return false;
	for (size_t i = 0; i < w->len; i++)
		if (!is_plain(w->items[i]))
			return false;
	return true;
}

static int plain_str(struct buf *out, const char *s)
{
	int error = buf_puts(out, "\"");

	while (error == 0 && s && *s) {
		size_t n = strcspn(s, "\"\\");

		error = buf_append(out, s, n);
		s += n;
		if (error == 0 && *s)
			error = buf_printf(out, "\\%c", *s++);
	}
	return error ? error : buf_puts(out, "\"");
}

/* The separator, then `"key": ` at the item's indent (buf_puts: printf costs 2 k a call). */
static int plain_key(struct buf *out, bool *first, const char *key)
{
	int error = buf_puts(out, *first ? "    \"" : ",\n    \"");

	*first = false;
	if (error == 0)
		error = buf_puts(out, key);
	return error ? error : buf_puts(out, "\": ");
}

/* One member; null for a NULL s. */
static int plain_member(struct buf *out, bool *first, const char *key, const char *s)
{
	int error = plain_key(out, first, key);

	if (error == 0)
		error = s ? plain_str(out, s) : buf_puts(out, "null");
	return error;
}

/* An unsigned member in decimal, as jansson prints a non-negative json_integer. */
static int plain_int(struct buf *out, bool *first, const char *key, unsigned long long v)
{
	char digits[24];
	size_t i = sizeof(digits);
	int error = plain_key(out, first, key);

	do
		digits[--i] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	return error ? error : buf_append(out, digits + i, sizeof(digits) - i);
}

static int plain_warnings(struct buf *out, bool *first, const struct strvec *w)
{
	int error = plain_key(out, first, "warnings");

	if (error == 0)
		error = buf_puts(out, "[");
	for (size_t i = 0; error == 0 && i < w->len; i++)
		if ((error = buf_puts(out, i ? ",\n      " : "\n      ")) == 0)
			error = plain_str(out, w->items[i]);
	if (error == 0)
		error = buf_puts(out, w->len ? "\n    ]" : "]");
	return error;
}

/* item_json through item_text, written directly (the members in item_json's order). */
static int plain_item(struct buf *out, const struct report_item *it, const struct strvec *w,
                      unsigned shards)
{
	bool f = true;
	int e = buf_puts(out, "  {\n");

	e = e ? e : plain_member(out, &f, "policy", it->policy);
	e = e ? e : plain_member(out, &f, "image", it->image);
	e = e ? e : plain_member(out, &f, "file", it->file);
	if (it->file)
		e = e ? e : plain_int(out, &f, "line", it->line);
	else
		e = e ? e : plain_member(out, &f, "line", NULL);
	e = e ? e : plain_member(out, &f, "current", it->current);
	e = e ? e : plain_member(out, &f, "candidate", it->candidate);
	e = e ? e : plain_member(out, &f, "decision", guard_decision_name(it->decision));
	e = e ? e : plain_member(out, &f, "reason", guard_reason_name(it->reason));
	e = e ? e : plain_warnings(out, &f, w);
	if (it->digest)
		e = e ? e : plain_member(out, &f, "digest", it->digest);
	if (shards && it->has_shard) {
		e = e ? e : plain_int(out, &f, "shard", it->shard);
		e = e ? e : plain_int(out, &f, "shards", shards);
	}
	if (it->commit)
		e = e ? e : plain_member(out, &f, "commit", it->commit);
	if (it->message)
		e = e ? e : plain_member(out, &f, "message", it->message);
	if (it->object)
		e = e ? e : plain_member(out, &f, "object", it->object);
	if (it->current_digest)
		e = e ? e : plain_member(out, &f, "current_digest", it->current_digest);
	if (it->current_created)
		e = e ? e : plain_member(out, &f, "current_created", it->current_created);
	if (it->candidate_created)
		e = e ? e : plain_member(out, &f, "candidate_created", it->candidate_created);
	return e ? e : buf_puts(out, "\n  }");
}

/* One item: written directly when plain (22 k instructions less than jansson's tree and dump
 * per item), else through jansson, which decides what any other string becomes. */
static int item_out(struct buf *out, const struct report_item *it, unsigned shards)
{
	struct strvec w = STRVEC_INIT;
	json_t *o;
	int error;

	report_warning_names(&w, it->warnings);
	if (item_is_plain(it, &w)) {
		error = plain_item(out, it, &w, shards);
		strvec_release(&w);
		return error;
	}
	strvec_release(&w);
	o = item_json(it, shards);
	error = o ? item_text(out, o) : IG_EFAIL;
	json_decref(o);
	return error;
}

int report_json(struct buf *out, const struct report *r)
{
	int error = buf_puts(out, r->len ? "[\n" : "[]\n");

	for (size_t i = 0; error == 0 && i < r->len; i++) {
		error = item_out(out, &r->items[i], r->shards);
		if (error == 0)
			error = buf_puts(out, i + 1 < r->len ? ",\n" : "\n]\n");
	}
	return error;
}

/* An item's listing as the audit record takes it: it->tags, or a packed one's rebuilt in
 * *out (free out->items after). 0 or IG_EFAIL. */
static int audit_tags(const struct strvec **tags, struct strvec *out, const struct report_item *it)
{
	*tags = it->tags;
	if (!it->tags || !it->tags_first)
		return 0;
	if (!(out->items = malloc((it->tags->len + 1) * sizeof(*out->items))))
		return IG_EFAIL;
	tagarena_unpack((const char **)out->items, it->tags_first, it->tags->len);
	out->len = it->tags->len;
	out->cap = it->tags->len + 1;
	*tags = out;
	return 0;
}

int report_audit(struct audit *a, const struct report *r, struct error *err)
{
	int error = 0;

	for (size_t i = 0; error == 0 && i < r->len; i++) {
		const struct report_item *it = &r->items[i];
		struct strvec w = STRVEC_INIT, unpacked = STRVEC_INIT;
		struct audit_record rec = {0};

		if (report_warning_names(&w, it->warnings) < 0 ||
		    audit_tags(&rec.tags, &unpacked, it) < 0) {
			strvec_release(&w);
			return error_oom(err);
		}
		rec.policy = it->policy;
		rec.image = it->image;
		rec.listed = it->listed;
		rec.tag_count = it->tag_count;
		rec.tags_sha256 = it->tags_sha256;
		rec.current = it->current;
		rec.candidate = it->candidate;
		rec.decision = guard_decision_name(it->decision);
		rec.reason = guard_reason_name(it->reason);
		rec.warnings = &w;
		rec.file = it->file;
		rec.line = it->line;
		rec.commit = it->commit;
		rec.digest = it->digest;
		if (it->decision == GUARD_ERROR)
			rec.message = it->message;
		else if (it->reason == GUARD_OVERRIDE)
			rec.rollback_reason = it->message;
		else if (it->decision == GUARD_HOLD && it->reason != GUARD_CANDIDATE_MISSING)
			rec.message = it->message; /* a digest-tracked policy's hold: both builds */
		rec.current_digest = it->current_digest;
		rec.current_created = it->current_created;
		rec.candidate_created = it->candidate_created;
		error = audit_write(a, &rec, err);
		strvec_release(&w);
		free(unpacked.items); /* the strings are the listing's */
	}
	if (error == 0)
		error = audit_sync(a, err);
	return error;
}
