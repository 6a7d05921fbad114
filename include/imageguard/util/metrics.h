/* A small thread-safe Prometheus registry: counters, gauges and histograms with labels,
 * rendered in the text exposition format (version 0.0.4) for /metrics. */
#ifndef IMAGEGUARD_METRICS_H
#define IMAGEGUARD_METRICS_H

#include <stddef.h>

struct buf;
struct error;

enum metrics_type { METRICS_COUNTER, METRICS_GAUGE, METRICS_HISTOGRAM };

struct metrics; /* opaque; every function below may be called from any thread */

/* Creates an empty registry; returns 0 or IG_EFAIL (out of memory). Free with metrics_free. */
int metrics_new(struct metrics **out);
void metrics_free(struct metrics *m);

/* Declares a family. label_names (n_labels of them, borrowed: copied) name its labels;
 * buckets (n_buckets upper bounds, strictly increasing, +Inf implied) only for histograms.
 * Returns 0, IG_EINVALID for a bad name or a name declared twice, IG_EFAIL out of memory. */
int metrics_declare(struct metrics *m, const char *name, enum metrics_type type, const char *help,
                    const char *const *label_names, size_t n_labels, const double *buckets,
                    size_t n_buckets);

/* Adds delta to a counter (delta >= 0) or gauge series; the series is created at 0 the first
 * time its label values (one per declared label, borrowed) are seen. Returns 0, IG_ENOTFOUND
 * for an undeclared family, IG_EINVALID for a wrong type or a negative counter delta. */
int metrics_add(struct metrics *m, const char *name, const char *const *label_values, double delta);
/* Sets a gauge series. */
int metrics_set(struct metrics *m, const char *name, const char *const *label_values, double value);
/* Records one observation in a histogram series. */
int metrics_observe(struct metrics *m, const char *name, const char *const *label_values,
                    double value);
/* Reads a counter or gauge series' value (0 when the series does not exist yet). */
double metrics_get(struct metrics *m, const char *name, const char *const *label_values);
/* Drops every series of a family (gauges whose label sets change, e.g. after a reload). */
int metrics_clear(struct metrics *m, const char *name);

/* Appends the whole registry in the text exposition format to out (families in declaration
 * order, series sorted by label values). Returns 0 or the buf error. */
int metrics_render(struct buf *out, struct metrics *m);

#endif
