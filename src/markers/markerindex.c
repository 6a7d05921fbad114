/* The marker index: per (path, blob id) the serialized results of markers_scan_buffer on that
 * file's work-tree bytes, merged each scan with the checked-out tree's file list (both sorted
 * by path), so only new or changed blobs are read. The file is a cache: a checksum and a
 * version stamp guard it, and anything odd about it reads as an empty index. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/markers/markerindex.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/safefile.h"
#include "imageguard/util/strpack.h"
#include "imageguard/util/yamldepth.h"
#include "markers_private.h"

#define MAGIC "IGMKIDX1"
#define MAGIC_LEN 8
#define INDEX_MAX ((size_t)512 << 20) /* the persisted file, read with this cap */
#define PATH_MAX_LEN 4096
#define NUL_STR 0xFFFFFFFFu /* a NULL string field */

struct entry {
	char *path; /* owned */
	unsigned char oid[MARKERINDEX_OID_LEN];
	unsigned char *rec; /* owned; the file's results, serialized (rec_put) */
	size_t rec_len;
};

struct markerindex {
	struct entry *items; /* sorted by path (strcmp), unique */
	size_t len, cap;
	char *root, *rel; /* where it persists */
	bool dirty;
};

/* ---- little-endian records, read with bounds checks ---- */

struct rd {
	const unsigned char *p, *end;
	bool bad;
};

static int put_u32(struct buf *b, uint32_t v)
{
	unsigned char c[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 24)};
	return buf_append(b, c, 4);
}

static int put_u64(struct buf *b, uint64_t v)
{
	return put_u32(b, (uint32_t)v) < 0 ? IG_EFAIL : put_u32(b, (uint32_t)(v >> 32));
}

static int put_str(struct buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (!s)
		return put_u32(b, NUL_STR);
	if (n >= NUL_STR)
		return IG_ETOOBIG;
	return put_u32(b, (uint32_t)n) < 0 ? IG_EFAIL : buf_append(b, s, n);
}

static uint32_t get_u32(struct rd *r)
{
	uint32_t v;

	if (r->bad || r->end - r->p < 4) {
		r->bad = true;
		return 0;
	}
	v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
	    (uint32_t)r->p[3] << 24;
	r->p += 4;
	return v;
}

static uint64_t get_u64(struct rd *r)
{
	uint64_t lo = get_u32(r);

	return lo | (uint64_t)get_u32(r) << 32;
}

/* The bytes of a string field (*n long, NULL for a NULL field). */
static const unsigned char *get_bytes(struct rd *r, uint32_t *n)
{
	const unsigned char *s;

	*n = get_u32(r);
	if (r->bad || *n == NUL_STR)
		return NULL;
	if ((size_t)(r->end - r->p) < *n) {
		r->bad = true;
		return NULL;
	}
	s = r->p;
	r->p += *n;
	return s;
}

/* A string field as a new C string; NULL for a NULL field or when bad/out of memory. */
static char *get_str(struct rd *r, bool *oom)
{
	uint32_t n;
	const unsigned char *s = get_bytes(r, &n);
	char *out;

	if (!s)
		return NULL;
	if (memchr(s, '\0', n)) {
		r->bad = true;
		return NULL;
	}
	if (!(out = strndup((const char *)s, n)))
		*oom = true;
	return out;
}

/* FNV-1a, 64 bits: the cache's check against a torn or damaged file (not an adversary's). */
static uint64_t checksum(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* ---- one file's results ---- */

/* Serializes what one scan of one file appended to s (from marker m0, problem p0). */
static int rec_put(struct buf *b, const struct marker_set *s, size_t m0, size_t p0)
{
	int rc = put_u32(b, (uint32_t)(s->len - m0));

	rc = rc < 0 ? rc : put_u32(b, (uint32_t)(s->problems_len - p0));
	for (size_t i = m0; i < s->len && rc == 0; i++) {
		const struct marker *m = &s->items[i];
		const char *f[] = {m->policy, m->value, m->setter,   m->api_version,
		                   m->kind,   m->name,  m->namespace};

		rc = put_u64(b, m->line);
		rc = rc < 0 ? rc : put_u64(b, m->start);
		rc = rc < 0 ? rc : put_u64(b, m->end);
		rc = rc < 0 ? rc : put_u32(b, (uint32_t)m->part << 8 | (uint32_t)m->style);
		for (size_t k = 0; k < sizeof(f) / sizeof(f[0]) && rc == 0; k++)
			rc = put_str(b, f[k]);
	}
	for (size_t i = p0; i < s->problems_len && rc == 0; i++) {
		rc = put_u64(b, s->problems[i].line);
		rc = rc < 0 ? rc : put_str(b, s->problems[i].message);
	}
	return rc;
}

static int grow_markers(struct marker_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16;
	void *n;

	if (s->len < s->cap)
		return 0;
	if (!(n = realloc(s->items, cap * sizeof(*s->items))))
		return IG_EFAIL;
	s->items = n;
	s->cap = cap;
	return 0;
}

/* One marker of a record into the next slot of s (not yet counted), packed: its path and its
 * seven strings in one block, the index's hot path (a pass decodes every marker it keeps, and
 * eight allocations a marker were most of a 5,000-marker set). 1 bad, IG_EFAIL, 0. */
static int rec_marker(struct marker *m, struct rd *r, const char *path)
{
	/* the file, then the record's order (rec_put) */
	char **f[] = {&m->file,        &m->policy, &m->value, &m->setter,
	              &m->api_version, &m->kind,   &m->name,  &m->namespace};
	enum { FIELDS = sizeof(f) / sizeof(f[0]) };
	const char *s[FIELDS] = {path};
	size_t n[FIELDS] = {strlen(path)}, bytes;
	char *out[FIELDS], *at;
	uint32_t ps;

	memset(m, 0, sizeof(*m));
	m->line = get_u64(r);
	m->start = get_u64(r);
	m->end = get_u64(r);
	ps = get_u32(r);
	m->part = (enum marker_part)(ps >> 8);
	m->style = (enum marker_style)(ps & 0xff);
	if ((ps >> 8) > MARKER_DIGEST || (ps & 0xff) > MARKER_DOUBLE_QUOTED)
		r->bad = true;
	for (size_t k = 1; k < FIELDS; k++) {
		uint32_t len = 0;

		s[k] = (const char *)get_bytes(r, &len);
		n[k] = len;
		if (s[k] && memchr(s[k], '\0', n[k]))
			r->bad = true;
	}
	if (r->bad || !s[1] || !s[2] || !s[3])
		return 1;
	bytes = strpack_size(s, n, FIELDS, 0); /* no overflow: each lies inside the record */
	if (!(at = malloc(bytes)))
		return IG_EFAIL;
	strpack_copy(at, s, n, FIELDS, 0, out);
	for (size_t k = 0; k < FIELDS; k++)
		*f[k] = out[k];
	m->packed = true;
	return 0;
}

static void drop_tail(struct marker_set *s, size_t len, size_t problems_len)
{
	while (s->len > len)
		markers_free_fields(&s->items[--s->len]);
	while (s->problems_len > problems_len) {
		struct marker_problem *p = &s->problems[--s->problems_len];

		free(p->file), free(p->message);
	}
}

/* Appends a record's markers and problems to out, named path. 1 when the record is bad
 * (nothing appended), IG_EFAIL, 0. */
static int rec_get(struct marker_set *out, const struct entry *e)
{
	struct rd r = {e->rec, e->rec + e->rec_len, false};
	size_t len0 = out->len, plen0 = out->problems_len;
	uint32_t nm = get_u32(&r), np = get_u32(&r);
	int rc = r.bad ? 1 : 0;

	for (uint32_t i = 0; i < nm && rc == 0; i++)
		if ((rc = grow_markers(out)) == 0 &&
		    (rc = rec_marker(&out->items[out->len], &r, e->path)) == 0)
			out->len++;
	for (uint32_t i = 0; i < np && rc == 0; i++) {
		size_t line = get_u64(&r);
		bool oom = false;
		char *msg = get_str(&r, &oom);

		rc = oom             ? IG_EFAIL
		     : r.bad || !msg ? 1
		                     : markers_add_problem(out, e->path, line, msg);
		free(msg);
	}
	if (rc == 0 && r.p != r.end)
		rc = 1;
	if (rc != 0) /* as if nothing was appended: the caller rescans or fails */
		drop_tail(out, len0, plen0);
	return rc;
}

/* ---- the entries ---- */

static void entries_free(struct entry *items, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		free(items[i].path);
		free(items[i].rec);
	}
	free(items);
}

static int push_entry(struct markerindex *ix, struct entry *e)
{
	if (ix->len == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 64;
		void *n = realloc(ix->items, cap * sizeof(*ix->items));

		if (!n)
			return IG_EFAIL;
		ix->items = n;
		ix->cap = cap;
	}
	ix->items[ix->len++] = *e;
	return 0;
}

/* Parses the persisted bytes into ix; 1 when they are not a valid index of this version. */
static int parse(struct markerindex *ix, const unsigned char *d, size_t n)
{
	struct rd r = {d + MAGIC_LEN, d + n - 8, false};
	uint32_t count;
	int rc = 0;

	if (n < MAGIC_LEN + 20 || memcmp(d, MAGIC, MAGIC_LEN) != 0)
		return 1;
	if (checksum(d, n - 8) != (get_u64(&(struct rd){d + n - 8, d + n, false})))
		return 1;
	if (get_u32(&r) != MARKERINDEX_SCANNER_VERSION || get_u64(&r) != MARKERS_MAX_FILE_SIZE ||
	    get_u32(&r) != (uint32_t)YAMLDEPTH_MAX || r.bad)
		return 1;
	count = get_u32(&r);
	if (count > MARKERS_MAX_FILES)
		return 1;
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		struct entry e = {0};
		uint32_t plen, rlen;
		const unsigned char *path = get_bytes(&r, &plen), *rec;

		if (!path || plen == 0 || plen > PATH_MAX_LEN || memchr(path, '\0', plen) ||
		    (size_t)(r.end - r.p) < MARKERINDEX_OID_LEN)
			return 1;
		memcpy(e.oid, r.p, MARKERINDEX_OID_LEN);
		r.p += MARKERINDEX_OID_LEN;
		if (!(rec = get_bytes(&r, &rlen)))
			return 1;
		if (!(e.path = strndup((const char *)path, plen)) ||
		    !(e.rec = malloc(rlen ? rlen : 1))) {
			free(e.path);
			return IG_EFAIL;
		}
		memcpy(e.rec, rec, rlen);
		e.rec_len = rlen;
		if (ix->len && strcmp(ix->items[ix->len - 1].path, e.path) >= 0)
			rc = 1; /* not sorted: not ours */
		if (rc != 0 || (rc = push_entry(ix, &e)) < 0) {
			free(e.path);
			free(e.rec);
		}
	}
	return rc == 0 && r.p != r.end ? 1 : rc;
}

int markerindex_load(struct markerindex **out, const char *root, const char *rel, struct error *err)
{
	struct markerindex *ix = calloc(1, sizeof(*ix));
	struct buf data = BUF_INIT_MAX(INDEX_MAX);
	struct error e = ERROR_INIT;
	int rc = 0;

	*out = NULL;
	if (!ix || !(ix->root = strdup(root)) || !(ix->rel = strdup(rel))) {
		rc = error_oom(err);
		goto done;
	}
	if (safefile_read(&data, root, rel, &e) == 0 &&
	    (rc = parse(ix, (const unsigned char *)data.data, data.len)) != 0) {
		entries_free(ix->items, ix->len);
		ix->items = NULL;
		ix->len = ix->cap = 0;
		if (rc < 0)
			rc = error_set(err, rc, "marker index '%s': out of memory", rel);
		else
			rc = 0;
	}
done:
	buf_release(&data);
	if (rc < 0)
		markerindex_free(ix);
	else
		*out = ix;
	return rc;
}

void markerindex_free(struct markerindex *ix)
{
	if (!ix)
		return;
	entries_free(ix->items, ix->len);
	free(ix->root);
	free(ix->rel);
	free(ix);
}

void markerindex_clear(struct markerindex *ix)
{
	int fd;

	if (!ix)
		return;
	entries_free(ix->items, ix->len);
	ix->items = NULL;
	ix->len = ix->cap = 0;
	ix->dirty = false;
	if (safefile_open_root(&fd, ix->root, &(struct error)ERROR_INIT) == 0) {
		unlinkat(fd, ix->rel, 0);
		close(fd);
	}
}

/* ---- the scan ---- */

/* Whether path (relative to the work tree) is one a walk of the whole tree would pick as a
 * YAML file: no .git component, a YAML name. */
static bool is_candidate(const struct markerindex_file *f)
{
	const char *p = f->path, *leaf = strrchr(p, '/');

	if ((f->mode & 0170000) != 0100000 || !*p)
		return false;
	for (const char *c = p; c; c = strchr(c, '/')) {
		c += *c == '/';
		if (strncmp(c, ".git", 4) == 0 && (c[4] == '/' || c[4] == '\0'))
			return false;
	}
	return markers_is_yaml_name(leaf ? leaf + 1 : p);
}

/* Whether a candidate lies below sub ("" the root) within the walk's depth. */
static bool is_selected(const char *path, const char *sub)
{
	size_t n = strlen(sub), depth = 0;
	const char *rest = path;

	if (n) {
		if (strncmp(path, sub, n) != 0 || path[n] != '/')
			return false;
		rest = path + n + 1;
	}
	for (; *rest; rest++)
		depth += *rest == '/';
	return depth <= MARKERS_MAX_DEPTH;
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp((*(const struct markerindex_file *const *)a)->path,
	              (*(const struct markerindex_file *const *)b)->path);
}

/* The candidates, sorted by path, duplicates (index stages) dropped. */
static int candidates(const struct markerindex_file ***out, size_t *len,
                      const struct markerindex_file *files, size_t n)
{
	const struct markerindex_file **v = malloc((n ? n : 1) * sizeof(*v));
	size_t k = 0, u = 0;
	bool sorted = true;

	if (!v)
		return IG_EFAIL;
	for (size_t i = 0; i < n; i++)
		if (is_candidate(&files[i])) {
			sorted = sorted && (k == 0 || strcmp(v[k - 1]->path, files[i].path) < 0);
			v[k++] = &files[i];
		}
	if (!sorted)
		qsort(v, k, sizeof(*v), cmp_file);
	for (size_t i = 0; i < k; i++)
		if (u == 0 || strcmp(v[u - 1]->path, v[i]->path) != 0)
			v[u++] = v[i];
	*out = v;
	*len = u;
	return 0;
}

/* Reads and scans one file into out, keeping its results in e when they depend only on its
 * bytes (e->rec NULL otherwise). */
static int scan_one(struct entry *e, struct marker_set *out, int rootfd, struct error *err)
{
	struct buf rec = BUF_INIT;
	size_t m0 = out->len, p0 = out->problems_len;
	bool read_ok = false;
	int rc;

	if ((rc = markers_scan_file_at(out, rootfd, e->path, &read_ok, err)) < 0)
		return rc;
	if (!read_ok)
		return 0;
	if ((rc = rec_put(&rec, out, m0, p0)) < 0) {
		buf_release(&rec);
		return error_oom(err);
	}
	e->rec_len = rec.len;
	e->rec = (unsigned char *)buf_detach(&rec);
	return 0;
}

/* One candidate: its results from the index entry old (NULL: none) when the blob is the same,
 * else a fresh read (*scanned set). Its entry, if any, goes to next; an unchanged one is moved
 * there (old->path becomes NULL), so that a pass holds the index once, not twice. */
static int take(struct markerindex *next, struct entry *old, const struct markerindex_file *f,
                bool selected, bool *scanned, struct marker_set *out, int rootfd, struct error *err)
{
	struct entry e = {0};
	bool same = old && memcmp(old->oid, f->oid, MARKERINDEX_OID_LEN) == 0;
	int rc = 0;

	if (!selected && !same)
		return 0; /* changed or new, and not needed by this scan: left to the next one */
	if (same && selected && (rc = rec_get(out, old)) < 0)
		return error_oom(err);
	if (same && rc == 0) {
		e = *old;
		old->path = NULL;
		old->rec = NULL;
	} else {
		if (!(e.path = strdup(f->path)))
			return error_oom(err);
		memcpy(e.oid, f->oid, MARKERINDEX_OID_LEN);
		*scanned = true; /* a new blob, or a record that does not read back */
		if ((rc = scan_one(&e, out, rootfd, err)) < 0) {
			free(e.path);
			return rc;
		}
	}
	if (!e.rec) { /* unreadable: nothing to keep */
		free(e.path);
		return 0;
	}
	next->items[next->len++] = e; /* merge reserved a slot for each candidate */
	return 0;
}

/* Drops the entries take moved out (their path NULL), keeping the order of the rest. */
static void drop_moved(struct markerindex *ix)
{
	size_t k = 0;

	for (size_t i = 0; i < ix->len; i++)
		if (ix->items[i].path)
			ix->items[k++] = ix->items[i];
		else
			free(ix->items[i].rec);
	ix->len = k;
}

/* Walks the sorted candidates and the sorted index together. */
static int merge(struct markerindex *ix, struct marker_set *out, int rootfd, const char *sub,
                 const struct markerindex_file **c, size_t n, struct error *err)
{
	struct markerindex next = {0};
	size_t j = 0;
	bool scanned = false;
	int rc = 0;

	if (!(next.items = malloc((n ? n : 1) * sizeof(*next.items))))
		return error_oom(err);
	next.cap = n;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct entry *old = NULL;

		while (j < ix->len && strcmp(ix->items[j].path, c[i]->path) < 0)
			j++;
		if (j < ix->len && strcmp(ix->items[j].path, c[i]->path) == 0)
			old = &ix->items[j++]; /* the candidates are unique: no other matches it */
		rc = take(&next, old, c[i], is_selected(c[i]->path, sub), &scanned, out, rootfd,
		          err);
	}
	if (rc < 0) {
		/* what was moved is lost to the index, as a cache may lose entries: their files
		 * are read again by the next scan */
		entries_free(next.items, next.len);
		drop_moved(ix);
		ix->dirty = true;
		return rc;
	}
	/* nothing read: next is a subset of the index, the same when as long */
	ix->dirty = ix->dirty || scanned || next.len != ix->len;
	entries_free(ix->items, ix->len);
	ix->items = next.items;
	ix->len = next.len;
	ix->cap = next.cap;
	return 0;
}

/* As the walk fails before it reads a file: too many YAML files below sub. */
static int check_count(const struct markerindex_file **c, size_t n, const char *sub,
                       struct error *err)
{
	size_t selected = 0;

	for (size_t i = 0; i < n; i++)
		if (is_selected(c[i]->path, sub) && ++selected > MARKERS_MAX_FILES)
			return error_set(err, IG_ETOOBIG, "more than %d YAML files",
			                 MARKERS_MAX_FILES);
	return 0;
}

static bool has_git_component(const char *sub)
{
	for (const char *c = sub; c; c = strchr(c, '/')) {
		c += *c == '/';
		if (strncmp(c, ".git", 4) == 0 && (c[4] == '/' || c[4] == '\0'))
			return true;
	}
	return false;
}

int markerindex_scan(struct markerindex *ix, struct marker_set *out, const char *root,
                     const char *subpath, const struct markerindex_file *files, size_t n,
                     struct error *err)
{
	struct buf sub = BUF_INIT;
	const struct markerindex_file **c = NULL;
	size_t nc = 0;
	int rootfd = -1, dirfd = -1, rc;

	if ((rc = markers_tree_open(&rootfd, &dirfd, &sub, root, subpath, err)) < 0)
		goto done;
	close(dirfd);
	if (has_git_component(sub.data)) { /* inside a .git: what Git does not track */
		rc = markers_scan_tree(out, root, subpath, err);
		goto done;
	}
	if ((rc = candidates(&c, &nc, files, n)) < 0) {
		rc = error_set(err, rc, "marker index: out of memory");
		goto done;
	}
	if ((rc = check_count(c, nc, sub.data, err)) == 0)
		rc = merge(ix, out, rootfd, sub.data, c, nc, err);
done:
	if (rootfd >= 0)
		close(rootfd);
	free(c);
	buf_release(&sub);
	return rc;
}

/* ---- persistence ---- */

static int serialize(struct buf *b, const struct markerindex *ix)
{
	int rc = buf_append(b, MAGIC, MAGIC_LEN);

	/* the stamp: the scanner's version and the caps its results depend on */
	rc = rc < 0 ? rc : put_u32(b, MARKERINDEX_SCANNER_VERSION);
	rc = rc < 0 ? rc : put_u64(b, MARKERS_MAX_FILE_SIZE);
	rc = rc < 0 ? rc : put_u32(b, (uint32_t)YAMLDEPTH_MAX);
	rc = rc < 0 ? rc : put_u32(b, (uint32_t)ix->len);
	for (size_t i = 0; i < ix->len && rc == 0; i++) {
		const struct entry *e = &ix->items[i];

		rc = put_str(b, e->path);
		rc = rc < 0 ? rc : buf_append(b, e->oid, MARKERINDEX_OID_LEN);
		rc = rc < 0 ? rc : put_u32(b, (uint32_t)e->rec_len);
		rc = rc < 0 ? rc : buf_append(b, e->rec, e->rec_len);
	}
	return rc < 0 ? rc : put_u64(b, checksum((const unsigned char *)b->data, b->len));
}

int markerindex_save(struct markerindex *ix, struct error *err)
{
	struct buf b = BUF_INIT;
	int rootfd = -1, fd, rc;

	if (!ix->dirty)
		return 0;
	if ((rc = serialize(&b, ix)) < 0) {
		rc = error_oom(err);
		goto done;
	}
	/* safefile_replace replaces a regular file only: create it first when absent */
	if ((rc = safefile_open_root(&rootfd, ix->root, err)) < 0)
		goto done;
	fd = openat(rootfd, ix->rel, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = error_set(err, IG_EFAIL, "marker index '%s': %s", ix->rel, strerror(errno));
		goto done;
	}
	close(fd);
	if ((rc = safefile_replace(ix->root, ix->rel, b.data, b.len, err)) == 0)
		ix->dirty = false;
done:
	if (rootfd >= 0)
		close(rootfd);
	buf_release(&b);
	return rc;
}
