/* Marker scanning for one YAML buffer: libyaml's tokens locate the comments (they lie in the
 * gaps between tokens) and the scalar each follows; its events then give the scalar's role
 * (key or value) and unescaped value. libyaml's marks count characters, not bytes. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "imageguard/util/error.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/yamldepth.h"
#include "markers_private.h"

#define MARKER_KEY "$imagepolicy"

/* Converts libyaml character indices into byte offsets, moving a cursor both ways. */
struct pos {
	const unsigned char *data;
	size_t len, base, ci, bi;
};

/* A comment bound to a scalar token, waiting for the event pass to give its value. */
struct cand {
	size_t tok_end;    /* character index where the scalar token ends */
	size_t start, end; /* value content, bytes */
	size_t line;       /* 1-based line of the scalar */
	enum marker_style style;
	enum marker_part part;
	char *policy;
	char *value;
	size_t doc; /* index into scan.docs */
	bool matched, key, has_nul;
};

/* The identity of one YAML document: apiVersion, kind, metadata.name, metadata.namespace. */
enum { ID_API_VERSION, ID_KIND, ID_NAME, ID_NAMESPACE, ID_FIELDS };

struct docid {
	char *f[ID_FIELDS]; /* owned, NULL when absent */
};

/* A token with width, as the comment binder needs it. */
struct tok {
	yaml_token_type_t type;
	size_t start, end; /* bytes */
	size_t end_c;      /* character index */
	size_t line;       /* 1-based line of the start */
	yaml_scalar_style_t style;
};

struct scan {
	struct marker_set *out;
	const char *file;
	const char *data;
	size_t len;
	struct pos pos;
	struct cand *cands;
	size_t ncands, capcands;
	struct tok prev, prev2;
	size_t done_to, line; /* bytes examined for comments, and the line there (1-based) */
	struct docid *docs;
	size_t ndocs, capdocs;
};

enum bind { BIND_TRAILING, BIND_OWN_LINE, BIND_BLOCK_HEADER };

/* memmem is a GNU extension; this is the one search the scanner needs. */
static bool mentions_key(const char *d, size_t n)
{
	const size_t k = sizeof(MARKER_KEY) - 1;
	const char *p = d, *end = d + n;

	while ((size_t)(end - p) >= k && (p = memchr(p, '$', (size_t)(end - p) - k + 1)) != NULL) {
		if (memcmp(p, MARKER_KEY, k) == 0)
			return true;
		p++;
	}
	return false;
}

static size_t pos_byte(struct pos *p, size_t ci)
{
	while (p->ci < ci && p->bi < p->len) {
		p->bi++;
		while (p->bi < p->len && (p->data[p->bi] & 0xC0) == 0x80)
			p->bi++;
		p->ci++;
	}
	while (p->ci > ci && p->bi > p->base) {
		p->bi--;
		while (p->bi > p->base && (p->data[p->bi] & 0xC0) == 0x80)
			p->bi--;
		p->ci--;
	}
	return p->bi;
}

/* Width of the line break at i (YAML 1.1 counts NEL, LS and PS too, as libyaml does), or 0. */
static size_t break_width(const char *d, size_t i, size_t len)
{
	const unsigned char *u = (const unsigned char *)d;

	if (u[i] == '\n')
		return 1;
	if (u[i] == '\r')
		return (i + 1 < len && u[i + 1] == '\n') ? 2 : 1;
	if (u[i] == 0xC2 && i + 1 < len && u[i + 1] == 0x85)
		return 2;
	if (u[i] == 0xE2 && i + 2 < len && u[i + 1] == 0x80 &&
	    (u[i + 2] == 0xA8 || u[i + 2] == 0xA9))
		return 3;
	return 0;
}

int markers_add_problem(struct marker_set *out, const char *file, size_t line, const char *msg)
{
	struct marker_problem *p;

	if (out->problems_len == out->problems_cap) {
		size_t cap = out->problems_cap ? out->problems_cap * 2 : 8;
		void *n = realloc(out->problems, cap * sizeof(*out->problems));
		if (!n)
			return IG_EFAIL;
		out->problems = n;
		out->problems_cap = cap;
	}
	p = &out->problems[out->problems_len];
	p->file = strdup(file);
	p->message = strdup(msg);
	p->line = line;
	if (!p->file || !p->message) {
		free(p->file);
		free(p->message);
		return IG_EFAIL;
	}
	out->problems_len++;
	return 0;
}

static int add_problem(struct marker_set *out, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int add_problem(struct marker_set *out, const char *file, size_t line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return markers_add_problem(out, file, line, msg);
}

static int add_marker(struct marker_set *out, const char *file, struct cand *c)
{
	struct marker *m;

	if (out->len == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 16;
		void *n = realloc(out->items, cap * sizeof(*out->items));
		if (!n)
			return IG_EFAIL;
		out->items = n;
		out->cap = cap;
	}
	m = &out->items[out->len];
	m->file = strdup(file);
	if (!m->file)
		return IG_EFAIL;
	m->line = c->line;
	m->policy = c->policy;
	m->part = c->part;
	m->style = c->style;
	m->start = c->start;
	m->end = c->end;
	m->value = c->value;
	c->policy = c->value = NULL;
	m->setter = m->api_version = m->kind = m->name = m->namespace = NULL;
	m->packed = false;
	out->len++;
	return 0;
}

/* The setter Flux names ("ns:name[:part]") and the document identity of m. */
static int add_identity(struct marker *m, const struct docid *d)
{
	const char *slash = strchr(m->policy, '/');
	size_t nslen = slash ? (size_t)(slash - m->policy) : 0;
	const char *part = m->part == MARKER_IMAGE ? "" : markers_part_name(m->part);
	size_t len = strlen(m->policy) + strlen(part) + 2;
	char **dst[ID_FIELDS] = {&m->api_version, &m->kind, &m->name, &m->namespace};

	if (!(m->setter = malloc(len)))
		return IG_EFAIL;
	snprintf(m->setter, len, "%.*s:%s%s%s", (int)nslen, m->policy,
	         slash ? slash + 1 : m->policy, *part ? ":" : "", part);
	for (int i = 0; d && i < ID_FIELDS; i++)
		if (d->f[i] && !(*dst[i] = strdup(d->f[i])))
			return IG_EFAIL;
	return 0;
}

const char *markers_part_name(enum marker_part part)
{
	switch (part) {
	case MARKER_IMAGE:
		return "image";
	case MARKER_NAME:
		return "name";
	case MARKER_TAG:
		return "tag";
	case MARKER_DIGEST:
		return "digest";
	}
	return "?";
}

void markers_free_fields(struct marker *m)
{
	free(m->file);
	if (m->packed)
		return;
	free(m->policy);
	free(m->value);
	free(m->setter);
	free(m->api_version);
	free(m->kind);
	free(m->name);
	free(m->namespace);
}

/* Drops what one file appended (it failed to parse: nothing of it may be rewritten). */
static void truncate_set(struct marker_set *s, size_t len, size_t problems_len)
{
	while (s->len > len)
		markers_free_fields(&s->items[--s->len]);
	while (s->problems_len > problems_len) {
		struct marker_problem *p = &s->problems[--s->problems_len];
		free(p->file);
		free(p->message);
	}
}

void markers_release(struct marker_set *s)
{
	if (!s)
		return;
	truncate_set(s, 0, 0);
	free(s->items);
	free(s->problems);
	memset(s, 0, sizeof(*s));
}

/* "NS:NAME" or "NS:NAME:PART" -> "ns/name" and the part; false when malformed. */
static bool parse_policy(char **policy, enum marker_part *part, const char *s)
{
	static const char *const parts[] = {"name", "tag", "digest"};
	static const enum marker_part values[] = {MARKER_NAME, MARKER_TAG, MARKER_DIGEST};
	const char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	size_t name_len;

	if (!c1 || c1 == s || strpbrk(s, " \t/"))
		return false;
	name_len = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
	if (name_len == 0)
		return false;
	*part = MARKER_IMAGE;
	if (c2) {
		size_t i;
		for (i = 0; i < 3 && strcmp(c2 + 1, parts[i]) != 0; i++)
			;
		if (i == 3)
			return false;
		*part = values[i];
	}
	*policy = malloc((size_t)(c1 - s) + 1 + name_len + 1);
	if (!*policy)
		return false;
	memcpy(*policy, s, (size_t)(c1 - s));
	(*policy)[c1 - s] = '/';
	memcpy(*policy + (c1 - s) + 1, c1 + 1, name_len);
	(*policy)[(c1 - s) + 1 + name_len] = '\0';
	return true;
}

/* Reads a comment's marker, as Flux does: leading '#'s dropped, the rest one JSON object whose
 * "$imagepolicy" is a string. Returns 1 with policy/part set, 0 after reporting a problem. */
static int read_marker(struct scan *s, const char *text, size_t n, size_t line, char **policy,
                       enum marker_part *part)
{
	json_error_t jerr;
	json_t *root, *v;
	int rc = 0;

	while (n > 0 && *text == '#')
		text++, n--;
	/* Prose that merely mentions the key is not a marker attempt; an object is. */
	for (size_t i = 0; i < n && text[i] != '{'; i++)
		if (text[i] != ' ' && text[i] != '\t')
			return 0;
	root = json_loadb(text, n, 0, &jerr);
	if (!root || !json_is_object(root)) {
		rc = add_problem(s->out, s->file, line, "malformed marker comment: %s",
		                 root ? "not a JSON object" : jerr.text);
		goto done;
	}
	v = json_object_get(root, MARKER_KEY);
	if (!v || !json_is_string(v)) {
		rc = add_problem(s->out, s->file, line,
		                 "malformed marker comment: \"" MARKER_KEY "\" must be a string");
		goto done;
	}
	if (!parse_policy(policy, part, json_string_value(v))) {
		rc = add_problem(
		    s->out, s->file, line,
		    "malformed marker '%.200s': expected NS:NAME or NS:NAME:tag|name|digest",
		    json_string_value(v));
		goto done;
	}
	rc = 1;
done:
	json_decref(root);
	return rc;
}

static bool has_break(const struct scan *s, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (break_width(s->data, i, s->len))
			return true;
	return false;
}

static int add_cand(struct scan *s, const struct tok *t, char *policy, enum marker_part part)
{
	struct cand *c;
	bool quoted = t->style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
	              t->style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;

	if (s->ncands == s->capcands) {
		size_t cap = s->capcands ? s->capcands * 2 : 8;
		void *n = realloc(s->cands, cap * sizeof(*s->cands));
		if (!n) {
			free(policy);
			return IG_EFAIL;
		}
		s->cands = n;
		s->capcands = cap;
	}
	c = &s->cands[s->ncands++];
	memset(c, 0, sizeof(*c));
	c->tok_end = t->end_c;
	c->start = t->start + (quoted ? 1 : 0);
	c->end = t->end - (quoted ? 1 : 0);
	c->line = t->line;
	c->style = t->style == YAML_SINGLE_QUOTED_SCALAR_STYLE   ? MARKER_SINGLE_QUOTED
	           : t->style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ? MARKER_DOUBLE_QUOTED
	                                                         : MARKER_PLAIN;
	c->policy = policy;
	c->part = part;
	return 0;
}

/* Binds a marker comment at byte `at` to the scalar token it follows on its line. */
static int bind_comment(struct scan *s, size_t at, size_t line, enum bind how, char *policy,
                        enum marker_part part)
{
	const struct tok *t = &s->prev;
	const char *why = NULL;

	if (how == BIND_BLOCK_HEADER)
		why = "marker on a block scalar (| or >): not supported, use a plain or quoted "
		      "scalar";
	else if (how == BIND_OWN_LINE || t->type == YAML_NO_TOKEN)
		why = "marker comment on a line of its own marks nothing: put it after the value "
		      "on the same line";
	else if (t->type == YAML_FLOW_ENTRY_TOKEN && s->prev2.type == YAML_SCALAR_TOKEN &&
	         !has_break(s, s->prev2.end, at))
		t = &s->prev2;
	if (!why && t->type == YAML_ALIAS_TOKEN)
		why = "marker on an alias: mark the anchored value instead";
	else if (!why && (t->type == YAML_FLOW_SEQUENCE_END_TOKEN ||
	                  t->type == YAML_FLOW_MAPPING_END_TOKEN ||
	                  (t->type == YAML_FLOW_ENTRY_TOKEN &&
	                   (s->prev2.type == YAML_FLOW_SEQUENCE_END_TOKEN ||
	                    s->prev2.type == YAML_FLOW_MAPPING_END_TOKEN))))
		why = "marker on a flow sequence or mapping, not a scalar";
	else if (!why && t->type != YAML_SCALAR_TOKEN)
		why = "marker not on a scalar value (a mapping, sequence or empty value?): put it "
		      "after the value on the same line";
	if (why) {
		free(policy);
		return add_problem(s->out, s->file, line, "%s", why);
	}
	return add_cand(s, t, policy, part);
}

static int handle_comment(struct scan *s, size_t at, size_t end, size_t line, enum bind how)
{
	char *policy = NULL;
	enum marker_part part;
	int rc;

	/* Only comments that mention the key are read (as Flux screens files by it). */
	if (!mentions_key(s->data + at, end - at))
		return 0;
	rc = read_marker(s, s->data + at, end - at, line, &policy, &part);
	if (rc <= 0)
		return rc;
	return bind_comment(s, at, line, how, policy, part);
}

/* Examines the bytes between tokens up to `to`: whitespace, line breaks and comments. */
static int scan_gap(struct scan *s, size_t to)
{
	size_t i = s->done_to;
	bool trailing = s->prev.type != YAML_NO_TOKEN && s->prev.end == s->done_to;
	int rc;

	while (i < to) {
		size_t w = break_width(s->data, i, s->len);
		if (w) {
			s->line++;
			trailing = false;
			i += w;
		} else if (s->data[i] == '#') {
			size_t j = i;
			while (j < to && !break_width(s->data, j, s->len))
				j++;
			rc = handle_comment(s, i, j, s->line,
			                    trailing ? BIND_TRAILING : BIND_OWN_LINE);
			if (rc < 0)
				return rc;
			i = j;
		} else {
			i++;
		}
	}
	s->done_to = to;
	return 0;
}

/* Counts the line breaks inside a token so the comment lines stay right. */
static void skip_token(struct scan *s, size_t to)
{
	for (size_t i = s->done_to; i < to;) {
		size_t w = break_width(s->data, i, s->len);
		if (w)
			s->line++;
		i += w ? w : 1;
	}
	if (to > s->done_to)
		s->done_to = to;
}

/* A comment on a block scalar's header line (`key: | # ...`) lies inside its token. */
static int check_block_header(struct scan *s, const struct tok *t)
{
	size_t i;

	for (i = t->start; i < t->end && !break_width(s->data, i, s->len); i++) {
		if (s->data[i] == '#' && i > t->start &&
		    (s->data[i - 1] == ' ' || s->data[i - 1] == '\t')) {
			size_t j = i;
			while (j < t->end && !break_width(s->data, j, s->len))
				j++;
			return handle_comment(s, i, j, s->line, BIND_BLOCK_HEADER);
		}
	}
	return 0;
}

static int report_yaml_error(struct scan *s, const yaml_parser_t *p)
{
	size_t line = p->problem_mark.line + 1;

	if (p->error == YAML_MEMORY_ERROR)
		return IG_EFAIL;
	if (p->error == YAML_READER_ERROR) {
		line = 1;
		for (size_t i = 0; i < p->problem_offset && i < s->len;) {
			size_t w = break_width(s->data, i, s->len);
			line += w ? 1 : 0;
			i += w ? w : 1;
		}
		return add_problem(s->out, s->file, line, "invalid YAML: %s at byte %zu",
		                   p->problem ? p->problem : "unreadable input", p->problem_offset);
	}
	return add_problem(s->out, s->file, line, "invalid YAML: %s%s%s",
	                   p->problem ? p->problem : "syntax error", p->context ? " " : "",
	                   p->context ? p->context : "");
}

static void tok_from(struct scan *s, struct tok *out, const yaml_token_t *t)
{
	out->type = t->type;
	out->start = pos_byte(&s->pos, t->start_mark.index);
	out->end = pos_byte(&s->pos, t->end_mark.index);
	out->end_c = t->end_mark.index;
	out->line = t->start_mark.line + 1;
	out->style = t->type == YAML_SCALAR_TOKEN ? t->data.scalar.style : YAML_ANY_SCALAR_STYLE;
}

/* Pass 1: comments and the scalar tokens they follow. Returns 1 when the file failed to scan. */
static int token_pass(struct scan *s)
{
	yaml_parser_t p;
	yaml_token_t t;
	struct tok cur;
	int rc = 0;

	if (!yaml_parser_initialize(&p))
		return IG_EFAIL;
	yaml_parser_set_input_string(&p, (const unsigned char *)s->data, s->len);
	for (;;) {
		if (!yaml_parser_scan(&p, &t)) {
			rc = report_yaml_error(s, &p);
			rc = rc < 0 ? rc : 1;
			break;
		}
		tok_from(s, &cur, &t);
		yaml_token_delete(&t);
		if (cur.type == YAML_STREAM_END_TOKEN) {
			rc = scan_gap(s, s->len);
			break;
		}
		if (cur.end == cur.start)
			continue;
		if (cur.start > s->done_to && (rc = scan_gap(s, cur.start)) < 0)
			break;
		if (cur.type == YAML_SCALAR_TOKEN &&
		    (cur.style == YAML_LITERAL_SCALAR_STYLE ||
		     cur.style == YAML_FOLDED_SCALAR_STYLE) &&
		    (rc = check_block_header(s, &cur)) < 0)
			break;
		skip_token(s, cur.end);
		s->prev2 = s->prev;
		s->prev = cur;
	}
	yaml_parser_delete(&p);
	return rc;
}

/* Tracks whether the next node is a mapping key: one byte per open collection. */
struct roles {
	unsigned char *stack; /* bit 0: mapping; bit 1: the next node is a value */
	size_t depth, cap;
};

static int roles_node(struct roles *r, bool *is_key, bool opens, bool is_map)
{
	*is_key = false;
	if (r->depth > 0 && (r->stack[r->depth - 1] & 1)) {
		*is_key = !(r->stack[r->depth - 1] & 2);
		r->stack[r->depth - 1] ^= 2;
	}
	if (!opens)
		return 0;
	if (r->depth == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		void *n;
		if (cap > YAMLDEPTH_MAX)
			return IG_ETOOBIG;
		n = realloc(r->stack, cap);
		if (!n)
			return IG_EFAIL;
		r->stack = n;
		r->cap = cap;
	}
	r->stack[r->depth++] = is_map ? 1 : 0;
	return 0;
}

static int match_scalar(struct scan *s, size_t *k, const yaml_event_t *e, bool is_key)
{
	struct cand *c;

	while (*k < s->ncands && s->cands[*k].tok_end < e->end_mark.index)
		(*k)++;
	if (*k == s->ncands || e->start_mark.index == e->end_mark.index)
		return 0;
	c = &s->cands[*k];
	if (c->tok_end != e->end_mark.index)
		return 0;
	c->matched = true;
	c->doc = s->ndocs ? s->ndocs - 1 : 0;
	c->key = is_key;
	c->has_nul = memchr(e->data.scalar.value, '\0', e->data.scalar.length) != NULL;
	c->value = strndup((const char *)e->data.scalar.value, e->data.scalar.length);
	return c->value ? 0 : IG_EFAIL;
}

/* Where the event pass stands in a document's identity fields. */
struct idpath {
	int root_key;      /* the root mapping's pending key: an ID_ field, -1 other, -2 metadata */
	int meta_key;      /* metadata's pending key: ID_NAME, ID_NAMESPACE or -1 */
	size_t meta_depth; /* depth of the metadata mapping, 0 when not inside it */
};

static int new_doc(struct scan *s)
{
	if (s->ndocs == s->capdocs) {
		size_t cap = s->capdocs ? s->capdocs * 2 : 4;
		void *n = realloc(s->docs, cap * sizeof(*s->docs));

		if (!n)
			return IG_EFAIL;
		s->docs = n;
		s->capdocs = cap;
	}
	memset(&s->docs[s->ndocs++], 0, sizeof(*s->docs));
	return 0;
}

static int set_id(struct scan *s, int field, const yaml_event_t *e)
{
	struct docid *d = &s->docs[s->ndocs - 1];

	if (d->f[field])
		return 0;
	d->f[field] = strndup((const char *)e->data.scalar.value, e->data.scalar.length);
	return d->f[field] ? 0 : IG_EFAIL;
}

/* A scalar at depth (1: the root mapping) with its role: records identity fields. */
static int track_scalar(struct scan *s, struct idpath *ip, size_t depth, bool is_key,
                        const yaml_event_t *e)
{
	const char *v = (const char *)e->data.scalar.value;
	int rc = 0;

	if (!s->ndocs)
		return 0;
	if (depth == 1 && is_key) {
		ip->root_key = !strcmp(v, "apiVersion") ? ID_API_VERSION
		               : !strcmp(v, "kind")     ? ID_KIND
		               : !strcmp(v, "metadata") ? -2
		                                        : -1;
	} else if (depth == 1 && ip->root_key >= 0) {
		rc = set_id(s, ip->root_key, e);
	} else if (ip->meta_depth && depth == ip->meta_depth && is_key) {
		ip->meta_key = !strcmp(v, "name")        ? ID_NAME
		               : !strcmp(v, "namespace") ? ID_NAMESPACE
		                                         : -1;
	} else if (ip->meta_depth && depth == ip->meta_depth && ip->meta_key >= 0) {
		rc = set_id(s, ip->meta_key, e);
	}
	if (depth == 1 && !is_key)
		ip->root_key = -1;
	if (ip->meta_depth && depth == ip->meta_depth && !is_key)
		ip->meta_key = -1;
	return rc;
}

/* Pass 2: the events give each marked scalar's role and value, and each document's identity.
 * 1 when the file is invalid. */
static int event_pass(struct scan *s)
{
	yaml_parser_t p;
	yaml_event_t e;
	struct roles roles = {NULL, 0, 0};
	struct idpath ip = {-1, -1, 0};
	size_t k = 0;
	bool key, end = false;
	int rc = 0;

	if (!yaml_parser_initialize(&p))
		return IG_EFAIL;
	yaml_parser_set_input_string(&p, (const unsigned char *)s->data, s->len);
	while (!end && rc == 0) {
		if (!yaml_parser_parse(&p, &e)) {
			rc = report_yaml_error(s, &p);
			rc = rc < 0 ? rc : 1;
			break;
		}
		switch (e.type) {
		case YAML_DOCUMENT_START_EVENT:
			rc = new_doc(s);
			ip.root_key = ip.meta_key = -1;
			ip.meta_depth = 0;
			break;
		case YAML_SCALAR_EVENT:
			if ((rc = roles_node(&roles, &key, false, false)) == 0)
				rc = match_scalar(s, &k, &e, key);
			if (rc == 0)
				rc = track_scalar(s, &ip, roles.depth, key, &e);
			break;
		case YAML_ALIAS_EVENT:
			rc = roles_node(&roles, &key, false, false);
			if (roles.depth == 1 && !key)
				ip.root_key = -1;
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (roles.depth == 1 && ip.root_key == -2 &&
			    e.type == YAML_MAPPING_START_EVENT)
				ip.meta_depth = 2;
			else if (roles.depth == 1)
				ip.root_key = -1;
			rc = roles_node(&roles, &key, true, e.type == YAML_MAPPING_START_EVENT);
			if (rc == IG_ETOOBIG)
				rc = add_problem(s->out, s->file, e.start_mark.line + 1,
				                 "invalid YAML: nested deeper than %d levels",
				                 YAMLDEPTH_MAX) < 0
				         ? IG_EFAIL
				         : 1;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (ip.meta_depth && roles.depth == ip.meta_depth)
				ip.meta_depth = 0, ip.root_key = -1;
			roles.depth--;
			break;
		case YAML_STREAM_END_EVENT:
			end = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&e);
	}
	free(roles.stack);
	yaml_parser_delete(&p);
	return rc;
}

static int emit(struct scan *s)
{
	int rc = 0;

	for (size_t i = 0; i < s->ncands && rc == 0; i++) {
		struct cand *c = &s->cands[i];
		if (!c->matched)
			rc = add_problem(s->out, s->file, c->line,
			                 "marker could not be matched to a scalar value");
		else if (c->key)
			rc = add_problem(s->out, s->file, c->line,
			                 "marker on a mapping key, not a value");
		else if (c->has_nul)
			rc = add_problem(s->out, s->file, c->line,
			                 "marked value contains a NUL character");
		else if ((rc = add_marker(s->out, s->file, c)) == 0)
			rc = add_identity(&s->out->items[s->out->len - 1],
			                  c->doc < s->ndocs ? &s->docs[c->doc] : NULL);
	}
	return rc;
}

int markers_scan_buffer(struct marker_set *out, const char *file, const char *data, size_t len,
                        struct error *err)
{
	struct scan s;
	size_t len0 = out->len, plen0 = out->problems_len;
	const unsigned char *u = (const unsigned char *)data;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	s.out = out;
	s.file = file;
	s.data = data;
	s.len = len;
	s.line = 1;
	if (len > MARKERS_MAX_FILE_SIZE) {
		rc = add_problem(out, file, 0, "file is larger than %zu MiB, not scanned",
		                 MARKERS_MAX_FILE_SIZE >> 20);
		goto done;
	}
	if (len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) || (u[0] == 0xFF && u[1] == 0xFE))) {
		rc = add_problem(out, file, 1, "UTF-16 files are not supported (use UTF-8)");
		goto done;
	}
	if (!mentions_key(data, len))
		goto done;
	if ((rc = yamldepth_check(&s.line, data, len, YAMLDEPTH_MAX)) == IG_ETOOBIG) {
		rc = add_problem(out, file, s.line, "invalid YAML: nested deeper than %d levels",
		                 YAMLDEPTH_MAX);
		goto done;
	} else if (rc < 0) {
		goto done;
	}
	s.line = 1;
	s.pos.data = u;
	s.pos.len = len;
	s.pos.base = (len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) ? 3 : 0;
	s.pos.bi = s.done_to = s.pos.base;
	if ((rc = token_pass(&s)) != 0)
		goto done;
	s.pos.ci = 0;
	s.pos.bi = s.pos.base;
	if ((rc = event_pass(&s)) != 0)
		goto done;
	rc = emit(&s);
done:
	if (rc == 1) {
		/* Invalid YAML: keep only the last problem (the parse error); no markers. */
		struct marker_problem keep = out->problems[out->problems_len - 1];
		out->problems_len--;
		truncate_set(out, len0, plen0);
		out->problems[out->problems_len++] = keep;
		rc = 0;
	}
	for (size_t i = 0; i < s.ncands; i++) {
		free(s.cands[i].policy);
		free(s.cands[i].value);
	}
	free(s.cands);
	for (size_t i = 0; i < s.ndocs; i++)
		for (int f = 0; f < ID_FIELDS; f++)
			free(s.docs[i].f[f]);
	free(s.docs);
	if (rc < 0) {
		truncate_set(out, len0, plen0);
		return error_set(err, rc, "'%s': out of memory while scanning markers", file);
	}
	return 0;
}
