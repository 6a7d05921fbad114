/* The Prometheus registry behind /metrics: families declared once, series created on first use,
 * kept sorted by label values so the rendering is deterministic. One mutex guards it all:
 * updates are a few per marker per pass, far from contended. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/metrics.h"
#include "imageguard/util/strpack.h"
#include "imageguard/util/vec.h"

struct series {
	char **values;               /* one per label, owned */
	double value;                /* counter/gauge value; histogram sum */
	unsigned long long count;    /* histogram observations */
	unsigned long long *buckets; /* histogram: per bucket (not cumulative), n_buckets */
};

struct family {
	char *name, *help;
	enum metrics_type type;
	char **labels;
	size_t n_labels;
	double *bounds;
	size_t n_bounds;
	struct series *series; /* sorted by values */
	size_t len, cap;
};

struct metrics {
	pthread_mutex_t lock;
	struct family *families;
	size_t len, cap;
};

static bool is_valid_name(const char *s, bool label)
{
	if (!s || !*s)
		return false;
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		             (!label && c == ':');

		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

int metrics_new(struct metrics **out)
{
	struct metrics *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return IG_EFAIL;
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

static void family_clear(struct family *f)
{
	for (size_t i = 0; i < f->len; i++) {
		free(f->series[i].values);
		free(f->series[i].buckets);
	}
	free(f->series);
	f->series = NULL;
	f->len = f->cap = 0;
}

static void family_release(struct family *f)
{
	family_clear(f);
	free(f->name);
	free(f->help);
	free(f->labels);
	free(f->bounds);
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->len; i++)
		family_release(&m->families[i]);
	free(m->families);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct family *find_family(struct metrics *m, const char *name)
{
	for (size_t i = 0; i < m->len; i++)
		if (strcmp(m->families[i].name, name) == 0)
			return &m->families[i];
	return NULL;
}

/* n strings (NULL as "") and their pointers in one block: a series is one allocation, not
 * one per label (20,000 series at 5,000 policies). */
static char **copy_strings(const char *const *v, size_t n)
{
	size_t head = (n ? n : 1) * sizeof(char *),
	       bytes = strpack_size(v, NULL, n, STRPACK_NULL_EMPTY);
	char **out;

	if (bytes > SIZE_MAX - head || !(out = malloc(head + bytes)))
		return NULL;
	strpack_copy((char *)out + head, v, NULL, n, STRPACK_NULL_EMPTY, out);
	return out;
}

static int check_declaration(const char *name, enum metrics_type type,
                             const char *const *label_names, size_t n_labels, const double *buckets,
                             size_t n_buckets)
{
	if (!is_valid_name(name, false))
		return IG_EINVALID;
	for (size_t i = 0; i < n_labels; i++)
		if (!is_valid_name(label_names[i], true) ||
		    (type == METRICS_HISTOGRAM && strcmp(label_names[i], "le") == 0))
			return IG_EINVALID;
	if (type != METRICS_HISTOGRAM && n_buckets)
		return IG_EINVALID;
	for (size_t i = 0; i < n_buckets; i++)
		if (!isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1]))
			return IG_EINVALID;
	return 0;
}

static int add_family(struct metrics *m, struct family *f)
{
	struct family *p = vec_reserve(m->families, &m->cap, m->len, sizeof(*p), 8);

	if (!p)
		return IG_EFAIL;
	m->families = p;
	m->families[m->len++] = *f;
	return 0;
}

int metrics_declare(struct metrics *m, const char *name, enum metrics_type type, const char *help,
                    const char *const *label_names, size_t n_labels, const double *buckets,
                    size_t n_buckets)
{
	struct family f = {0};
	int error;

	if ((error = check_declaration(name, type, label_names, n_labels, buckets, n_buckets)) < 0)
		return error;
	f.type = type;
	f.n_labels = n_labels;
	f.n_bounds = n_buckets;
	f.name = strdup(name);
	f.help = strdup(help ? help : "");
	f.labels = copy_strings(label_names, n_labels);
	f.bounds = malloc((n_buckets ? n_buckets : 1) * sizeof(double));
	if (!f.name || !f.help || !f.labels || !f.bounds) {
		family_release(&f);
		return IG_EFAIL;
	}
	if (n_buckets)
		memcpy(f.bounds, buckets, n_buckets * sizeof(double));
	pthread_mutex_lock(&m->lock);
	error = find_family(m, name) ? IG_EINVALID : add_family(m, &f);
	pthread_mutex_unlock(&m->lock);
	if (error < 0)
		family_release(&f);
	return error;
}

static int compare_values(char *const *a, const char *const *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int c = strcmp(a[i], b[i] ? b[i] : "");

		if (c)
			return c;
	}
	return 0;
}

/* Binary search: returns the index of the series or where it would be inserted. */
static size_t search(const struct family *f, const char *const *values, bool *found)
{
	size_t lo = 0, hi = f->len;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = compare_values(f->series[mid].values, values, f->n_labels);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct series *get_series(struct family *f, const char *const *values)
{
	struct series s = {0}, *p;
	bool found;
	size_t at = search(f, values, &found);

	if (found)
		return &f->series[at];
	if (!(p = vec_reserve(f->series, &f->cap, f->len, sizeof(*p), 8)))
		return NULL;
	f->series = p;
	s.values = copy_strings(values, f->n_labels);
	if (f->type == METRICS_HISTOGRAM)
		s.buckets = calloc(f->n_bounds ? f->n_bounds : 1, sizeof(*s.buckets));
	if (!s.values || (f->type == METRICS_HISTOGRAM && !s.buckets)) {
		free(s.values);
		free(s.buckets);
		return NULL;
	}
	memmove(&f->series[at + 1], &f->series[at], (f->len - at) * sizeof(*f->series));
	f->series[at] = s;
	f->len++;
	return &f->series[at];
}

enum op { OP_ADD, OP_SET, OP_OBSERVE };

static int update(struct metrics *m, const char *name, const char *const *values, double v,
                  enum op op)
{
	struct family *f;
	struct series *s;
	int error = 0;

	pthread_mutex_lock(&m->lock);
	if (!(f = find_family(m, name))) {
		error = IG_ENOTFOUND;
		goto done;
	}
	if ((op == OP_OBSERVE) != (f->type == METRICS_HISTOGRAM) ||
	    (op == OP_SET && f->type != METRICS_GAUGE) ||
	    (f->type == METRICS_COUNTER && !(v >= 0))) {
		error = IG_EINVALID;
		goto done;
	}
	if (!(s = get_series(f, values))) {
		error = IG_EFAIL;
		goto done;
	}
	if (op == OP_SET) {
		s->value = v;
	} else if (op == OP_ADD) {
		s->value += v;
	} else {
		size_t i = 0;

		while (i < f->n_bounds && v > f->bounds[i])
			i++;
		if (i < f->n_bounds)
			s->buckets[i]++;
		s->count++;
		s->value += v;
	}
done:
	pthread_mutex_unlock(&m->lock);
	return error;
}

int metrics_add(struct metrics *m, const char *name, const char *const *label_values, double delta)
{
	return update(m, name, label_values, delta, OP_ADD);
}

int metrics_set(struct metrics *m, const char *name, const char *const *label_values, double value)
{
	return update(m, name, label_values, value, OP_SET);
}

int metrics_observe(struct metrics *m, const char *name, const char *const *label_values,
                    double value)
{
	return update(m, name, label_values, value, OP_OBSERVE);
}

double metrics_get(struct metrics *m, const char *name, const char *const *label_values)
{
	struct family *f;
	double v = 0;
	bool found;
	size_t at;

	pthread_mutex_lock(&m->lock);
	if ((f = find_family(m, name)) && f->type != METRICS_HISTOGRAM) {
		at = search(f, label_values, &found);
		if (found)
			v = f->series[at].value;
	}
	pthread_mutex_unlock(&m->lock);
	return v;
}

int metrics_clear(struct metrics *m, const char *name)
{
	struct family *f;

	pthread_mutex_lock(&m->lock);
	if ((f = find_family(m, name)))
		family_clear(f);
	pthread_mutex_unlock(&m->lock);
	return f ? 0 : IG_ENOTFOUND;
}

/* HELP text escapes backslash and newline; label values also escape the double quote. */
static int put_escaped(struct buf *out, const char *s, bool quote)
{
	int error = 0;

	for (; *s && error == 0; s++) {
		if (*s == '\\')
			error = buf_puts(out, "\\\\");
		else if (*s == '\n')
			error = buf_puts(out, "\\n");
		else if (quote && *s == '"')
			error = buf_puts(out, "\\\"");
		else
			error = buf_append(out, s, 1);
	}
	return error;
}

static int put_number(struct buf *out, double v)
{
	if (isnan(v))
		return buf_puts(out, "NaN");
	if (isinf(v))
		return buf_puts(out, v > 0 ? "+Inf" : "-Inf");
	if (v == floor(v) && fabs(v) < 1e15)
		return buf_printf(out, "%.0f", v);
	/* The shortest text that reads back as the same double: 0.1, not 0.10000000000000001. */
	for (int precision = 6; precision < 17; precision++) {
		char text[40];

		snprintf(text, sizeof(text), "%.*g", precision, v);
		if (strtod(text, NULL) == v)
			return buf_puts(out, text);
	}
	return buf_printf(out, "%.17g", v);
}

/* Writes `name{labels[,le="bound"]} ` */
static int put_series_name(struct buf *out, const struct family *f, const char *suffix,
                           const struct series *s, const char *le)
{
	int error = buf_printf(out, "%s%s", f->name, suffix);

	if (error == 0 && (f->n_labels || le))
		error = buf_puts(out, "{");
	for (size_t i = 0; error == 0 && i < f->n_labels; i++) {
		error = buf_printf(out, "%s%s=\"", i ? "," : "", f->labels[i]);
		if (error == 0)
			error = put_escaped(out, s->values[i], true);
		if (error == 0)
			error = buf_puts(out, "\"");
	}
	if (error == 0 && le)
		error = buf_printf(out, "%sle=\"%s\"", f->n_labels ? "," : "", le);
	if (error == 0 && (f->n_labels || le))
		error = buf_puts(out, "}");
	if (error == 0)
		error = buf_puts(out, " ");
	return error;
}

static int put_histogram(struct buf *out, const struct family *f, const struct series *s)
{
	unsigned long long cumulative = 0;
	struct buf le = BUF_INIT;
	int error = 0;

	for (size_t i = 0; error == 0 && i < f->n_bounds; i++) {
		cumulative += s->buckets[i];
		buf_reset(&le);
		if ((error = put_number(&le, f->bounds[i])) == 0 &&
		    (error = put_series_name(out, f, "_bucket", s, le.data)) == 0)
			error = buf_printf(out, "%llu\n", cumulative);
	}
	if (error == 0 && (error = put_series_name(out, f, "_bucket", s, "+Inf")) == 0)
		error = buf_printf(out, "%llu\n", s->count);
	if (error == 0 && (error = put_series_name(out, f, "_sum", s, NULL)) == 0 &&
	    (error = put_number(out, s->value)) == 0)
		error = buf_puts(out, "\n");
	if (error == 0 && (error = put_series_name(out, f, "_count", s, NULL)) == 0)
		error = buf_printf(out, "%llu\n", s->count);
	buf_release(&le);
	return error;
}

static const char *type_name(enum metrics_type t)
{
	return t == METRICS_COUNTER ? "counter" : t == METRICS_GAUGE ? "gauge" : "histogram";
}

static int render_family(struct buf *out, const struct family *f)
{
	int error = buf_printf(out, "# HELP %s ", f->name);

	if (error == 0)
		error = put_escaped(out, f->help, false);
	if (error == 0)
		error = buf_printf(out, "\n# TYPE %s %s\n", f->name, type_name(f->type));
	for (size_t i = 0; error == 0 && i < f->len; i++) {
		const struct series *s = &f->series[i];

		if (f->type == METRICS_HISTOGRAM) {
			error = put_histogram(out, f, s);
			continue;
		}
		if ((error = put_series_name(out, f, "", s, NULL)) == 0 &&
		    (error = put_number(out, s->value)) == 0)
			error = buf_puts(out, "\n");
	}
	return error;
}

int metrics_render(struct buf *out, struct metrics *m)
{
	int error = 0;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; error == 0 && i < m->len; i++)
		error = render_family(out, &m->families[i]);
	pthread_mutex_unlock(&m->lock);
	return error;
}
