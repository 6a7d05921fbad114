/* Sprig's list, dict and default functions (list, first, append, uniq, dict, get, keys,
 * default, coalesce, ternary, split, join, sortAlpha, ...) over template values. Where Go's
 * map order would make Sprig's output random (keys, values), the keys' sorted order is used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template_private.h"

#define IFACE_LIST "[]interface {}"
#define STRING_LIST "[]string"
#define DICT "map[string]interface {}"

static struct tval *new_list(struct texec *x, size_t cap, const char *type)
{
	struct tval *l =
	    tval_list(x->arena, cap, type, strcmp(type, STRING_LIST) ? TV_NIL : TV_STRING);

	if (!l)
		texec_check(x, NULL);
	return l;
}

static bool push(struct texec *x, struct tval *l, const struct tval *v)
{
	if (tval_list_push(x->arena, l, v) < 0) {
		texec_check(x, NULL);
		return false;
	}
	return true;
}

static bool need_list(struct texec *x, const char *what, const struct tval *v)
{
	if (v->kind == TV_LIST)
		return true;
	texec_fail(x, IG_EINVALID, "error calling %s: Cannot %s on type %s", what, what,
	           v->kind == TV_NIL ? "invalid" : tval_kind_name(v));
	return false;
}

static bool need_dict(struct texec *x, const char *fn, const struct tval *v)
{
	if (v->kind == TV_MAP && strcmp(v->type, DICT) == 0)
		return true;
	texec_fail(x, IG_EINVALID, "%s: wrong type for value; expected %s; got %s", fn, DICT,
	           v->kind == TV_NIL ? "<nil>" : v->type);
	return false;
}

/* Whether l holds v (reflect.DeepEqual); a comparison costs the compared values' weight, so
 * uniq's quadratic work and values sharing parts are held to the budget (x->rc tells). */
static bool in_list(struct texec *x, const struct tval *l, const struct tval *v)
{
	size_t i;

	for (i = 0; i < l->len; i++) {
		if (!texec_charge_deep(x, v) || !texec_charge_deep(x, l->items[i]))
			return false;
		if (tval_deep_equal(l->items[i], v))
			return true;
	}
	return false;
}

static const struct tval *fn_list(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *l = new_list(x, n, IFACE_LIST);
	size_t i;

	for (i = 0; l && i < n; i++)
		if (!push(x, l, a[i]))
			return NULL;
	return l;
}

static const struct tval *fn_first(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	if (!need_list(x, "find first", a[0]))
		return NULL;
	return a[0]->len ? a[0]->items[0] : tval_nil();
}

static const struct tval *fn_last(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	if (!need_list(x, "find last", a[0]))
		return NULL;
	return a[0]->len ? a[0]->items[a[0]->len - 1] : tval_nil();
}

/* A copy of items [from, to) of l as []interface{} (nil when l is empty, as Sprig returns). */
static const struct tval *sub(struct texec *x, const struct tval *l, size_t from, size_t to)
{
	struct tval *r;
	size_t i;

	if (!l->len)
		return tval_nil();
	if (!(r = new_list(x, to - from, IFACE_LIST)))
		return NULL;
	for (i = from; i < to; i++)
		if (!push(x, r, l->items[i]))
			return NULL;
	return r;
}

static const struct tval *fn_rest(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	if (!need_list(x, "find rest", a[0]))
		return NULL;
	return sub(x, a[0], a[0]->len ? 1 : 0, a[0]->len);
}

static const struct tval *fn_initial(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	if (!need_list(x, "find initial", a[0]))
		return NULL;
	return sub(x, a[0], 0, a[0]->len ? a[0]->len - 1 : 0);
}

static const struct tval *fn_append(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *r;

	(void)n;
	if (!need_list(x, "push", a[0]))
		return NULL;
	if (!(r = (struct tval *)(a[0]->len ? sub(x, a[0], 0, a[0]->len)
	                                    : new_list(x, 1, IFACE_LIST))))
		return NULL;
	return push(x, r, a[1]) ? r : NULL;
}

static const struct tval *fn_prepend(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *r;
	size_t i;

	(void)n;
	if (!need_list(x, "prepend", a[0]) || !(r = new_list(x, a[0]->len + 1, IFACE_LIST)) ||
	    !push(x, r, a[1]))
		return NULL;
	for (i = 0; i < a[0]->len; i++)
		if (!push(x, r, a[0]->items[i]))
			return NULL;
	return r;
}

static const struct tval *fn_concat(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *r = new_list(x, 0, IFACE_LIST);
	size_t i, j;

	for (i = 0; r && i < n; i++) {
		if (a[i]->kind != TV_LIST)
			return texec_fail(x, IG_EINVALID,
			                  "error calling concat: Cannot concat type %s as list",
			                  tval_kind_name(a[i]));
		for (j = 0; j < a[i]->len; j++)
			if (!push(x, r, a[i]->items[j]))
				return NULL;
	}
	return r;
}

static const struct tval *fn_reverse(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *r;
	size_t i;

	(void)n;
	if (!need_list(x, "find reverse", a[0]))
		return NULL;
	if (!a[0]->len)
		return tval_nil();
	if (!(r = new_list(x, a[0]->len, IFACE_LIST)))
		return NULL;
	for (i = a[0]->len; i-- > 0;)
		if (!push(x, r, a[0]->items[i]))
			return NULL;
	return r;
}

/* uniq, without and compact: the items a predicate keeps. */
static const struct tval *filter(struct texec *x, const struct tval *l, const char *what, int mode,
                                 const struct tval *const *omit, size_t nomit)
{
	struct tval *r, omitted = {.kind = TV_LIST, .type = IFACE_LIST};
	size_t i;

	if (!need_list(x, what, l) || !(r = new_list(x, l->len, IFACE_LIST)))
		return NULL;
	omitted.items = (const struct tval **)omit;
	omitted.len = nomit;
	for (i = 0; i < l->len; i++) {
		const struct tval *v = l->items[i];
		bool keep = mode == 'u'   ? !in_list(x, r, v)
		            : mode == 'w' ? !in_list(x, &omitted, v)
		                          : tval_truth(v);

		if (x->rc || (keep && !push(x, r, v)))
			return NULL;
	}
	return r;
}

static const struct tval *fn_uniq(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return filter(x, a[0], "find uniq", 'u', NULL, 0);
}

static const struct tval *fn_without(struct texec *x, const struct tval *const *a, size_t n)
{
	return filter(x, a[0], "find without", 'w', a + 1, n - 1);
}

static const struct tval *fn_compact(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return filter(x, a[0], "compact", 'c', NULL, 0);
}

static const struct tval *fn_has(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	if (a[1]->kind == TV_NIL)
		return tval_bool(false);
	if (!need_list(x, "find has", a[1]))
		return NULL;
	return in_list(x, a[1], a[0]) ? tval_bool(true) : x->rc ? NULL : tval_bool(false);
}

static const struct tval *fn_slice(struct texec *x, const struct tval *const *a, size_t n)
{
	const struct tval *l = a[0];
	long long start = 0, end;
	struct tval *r;
	size_t i;

	if (!need_list(x, "slice", l))
		return NULL;
	if (!l->len)
		return tval_nil();
	end = (long long)l->len;
	if (n > 1)
		start = tconv_int64(a[1]);
	if (n > 2)
		end = tconv_int64(a[2]);
	if (start < 0 || end < start || (unsigned long long)end > l->len)
		return texec_fail(x, IG_EINVALID, "error calling slice: slice index out of range");
	if (!(r = new_list(x, (size_t)(end - start), l->type)))
		return NULL;
	for (i = (size_t)start; i < (size_t)end; i++)
		if (!push(x, r, l->items[i]))
			return NULL;
	return r;
}

static const struct tval *fn_chunk(struct texec *x, const struct tval *const *a, size_t n)
{
	const struct tval *l = a[1];
	struct tval *r, *c = NULL;
	long long size;
	size_t i;

	(void)n;
	if (!targ_int(x, "chunk", a[0], &size) || !need_list(x, "chunk", l) ||
	    !(r = new_list(x, 0, "[][]interface {}")))
		return NULL;
	for (i = 0; size > 0 && i < l->len; i++) {
		if (i % (size_t)size == 0 && (!(c = new_list(x, 0, IFACE_LIST)) || !push(x, r, c)))
			return NULL;
		if (!push(x, c, l->items[i]))
			return NULL;
	}
	return r;
}

static const struct tval *until_step(struct texec *x, long long start, long long stop,
                                     long long step)
{
	struct tval *r = new_list(x, 0, "[]int");
	long long i;

	if (!r)
		return NULL;
	if (stop < start && step < 0) {
		for (i = start; i > stop; i += step)
			if (!push(x, r, tval_int(x->arena, i, "int")))
				return NULL;
	} else if (stop >= start && step > 0) {
		for (i = start; i < stop; i += step)
			if (!push(x, r, tval_int(x->arena, i, "int")))
				return NULL;
	}
	return r;
}

static const struct tval *fn_until(struct texec *x, const struct tval *const *a, size_t n)
{
	long long count;

	(void)n;
	if (!targ_int(x, "until", a[0], &count))
		return NULL;
	return until_step(x, 0, count, count < 0 ? -1 : 1);
}

static const struct tval *fn_until_step(struct texec *x, const struct tval *const *a, size_t n)
{
	long long start, stop, step;

	(void)n;
	if (!targ_int(x, "untilStep", a[0], &start) || !targ_int(x, "untilStep", a[1], &stop) ||
	    !targ_int(x, "untilStep", a[2], &step))
		return NULL;
	return until_step(x, start, stop, step);
}

/* ---- strings and lists ---- */

/* Sprig's strslice: the non-nil items of a list through strval, else [strval(v)]. */
static struct tval *strslice(struct texec *x, const struct tval *v)
{
	struct tval *r = new_list(x, v->kind == TV_LIST ? v->len : 1, STRING_LIST);
	const struct tval *s;
	size_t i;

	if (!r)
		return NULL;
	if (v->kind != TV_LIST) {
		if (v->kind == TV_NIL)
			return r;
		return (s = tfmt_strval(x, v)) && push(x, r, s) ? r : NULL;
	}
	for (i = 0; i < v->len; i++)
		if (v->items[i]->kind != TV_NIL &&
		    (!(s = tfmt_strval(x, v->items[i])) || !push(x, r, s)))
			return NULL;
	return r;
}

static const struct tval *fn_join(struct texec *x, const struct tval *const *a, size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const struct tval *l;
	const char *sep;
	size_t slen, i;
	int rc = 0;

	(void)n;
	if (!targ_string(x, "join", a[0], &sep, &slen) || !(l = strslice(x, a[1])))
		return NULL;
	for (i = 0; rc == 0 && i < l->len; i++) {
		if (i)
			rc = buf_append(&b, sep, slen);
		if (rc == 0)
			rc = buf_append(&b, l->items[i]->s, l->items[i]->len);
	}
	return texec_string(x, &b, rc);
}

static int cmp_strings(const void *pa, const void *pb)
{
	return tval_compare_keys(*(const struct tval *const *)pa, *(const struct tval *const *)pb);
}

static const struct tval *fn_sort_alpha(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *l;
	const struct tval *s;

	(void)n;
	if (a[0]->kind != TV_LIST) {
		if (!(s = tfmt_strval(x, a[0])) || !(l = new_list(x, 1, STRING_LIST)))
			return NULL;
		return push(x, l, s) ? l : NULL;
	}
	if (!(l = strslice(x, a[0])))
		return NULL;
	if (l->len)
		qsort(l->items, l->len, sizeof(*l->items), cmp_strings);
	return l;
}

static const struct tval *fn_to_strings(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return strslice(x, a[0]);
}

/* strings.SplitN(s, sep, max) (max < 0: all) into a []string. */
static struct tval *split_n(struct texec *x, const char *s, size_t len, const char *sep,
                            size_t slen, long long max)
{
	struct tval *r = new_list(x, 0, STRING_LIST);
	size_t i = 0, start = 0;
	unsigned cp;

	if (!r || max == 0)
		return r;
	if (!texec_charge(x, (len / 64 + 1) * (slen / 64 + 1))) /* the naive search's worst */
		return NULL;
	while (i < len && (max < 0 || (long long)r->len + 1 < max)) {
		size_t w = slen ? slen : tutf8_decode(s + i, len - i, &cp);

		if (!slen || (i + slen <= len && !memcmp(s + i, sep, slen))) {
			if (!push(x, r, tval_string(x->arena, s + start, slen ? i - start : w)))
				return NULL;
			i += w;
			start = i;
		} else {
			i++;
		}
	}
	if (slen || start < len)
		if (!push(x, r, tval_string(x->arena, s + start, len - start)))
			return NULL;
	return r;
}

static const struct tval *as_index_dict(struct texec *x, const struct tval *l)
{
	struct tval *d = tval_map(x->arena, DICT, TV_NIL);
	char key[32];
	size_t i;

	if (!d || !l)
		return texec_check(x, NULL);
	for (i = 0; i < l->len; i++) {
		snprintf(key, sizeof(key), "_%zu", i);
		if (tval_map_set(x->arena, d, tval_cstring(x->arena, key), l->items[i]) < 0)
			return texec_check(x, NULL);
	}
	return d;
}

static const struct tval *fn_split_list(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *sep, *s;
	size_t slen, len;

	(void)n;
	if (!targ_string(x, "splitList", a[0], &sep, &slen) ||
	    !targ_string(x, "splitList", a[1], &s, &len))
		return NULL;
	return split_n(x, s, len, sep, slen, -1);
}

static const struct tval *fn_split(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *sep, *s;
	size_t slen, len;

	(void)n;
	if (!targ_string(x, "split", a[0], &sep, &slen) || !targ_string(x, "split", a[1], &s, &len))
		return NULL;
	return as_index_dict(x, split_n(x, s, len, sep, slen, -1));
}

static const struct tval *fn_splitn(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *sep, *s;
	size_t slen, len;
	long long max;

	(void)n;
	if (!targ_string(x, "splitn", a[0], &sep, &slen) || !targ_int(x, "splitn", a[1], &max) ||
	    !targ_string(x, "splitn", a[2], &s, &len))
		return NULL;
	return as_index_dict(x, split_n(x, s, len, sep, slen, max));
}

/* ---- dicts ---- */

static const struct tval *fn_dict(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *d = tval_map(x->arena, DICT, TV_NIL);
	const struct tval *k, *empty;
	size_t i;

	if (!d)
		return texec_check(x, NULL);
	for (i = 0; i < n; i += 2) {
		if (!(k = tfmt_strval(x, a[i])))
			return NULL;
		empty = i + 1 < n ? a[i + 1] : tval_cstring(x->arena, "");
		if (tval_map_set(x->arena, d, k, empty) < 0)
			return texec_check(x, NULL);
	}
	return d;
}

static const struct tval *fn_get(struct texec *x, const struct tval *const *a, size_t n)
{
	const struct tval *v;
	const char *k;
	size_t klen;

	(void)n;
	if (!need_dict(x, "get", a[0]) || !targ_string(x, "get", a[1], &k, &klen))
		return NULL;
	v = tval_map_get(a[0], a[1]);
	return v ? v : texec_check(x, tval_cstring(x->arena, ""));
}

static const struct tval *fn_set(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *k;
	size_t klen;

	(void)n;
	if (!need_dict(x, "set", a[0]) || !targ_string(x, "set", a[1], &k, &klen))
		return NULL;
	/* dicts are only ever made by dict and its kin, in this render's arena */
	if (tval_map_set(x->arena, (struct tval *)a[0], a[1], a[2]) < 0)
		return texec_check(x, NULL);
	return a[0];
}

static const struct tval *fn_unset(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *d = (struct tval *)a[0];
	const char *k;
	size_t klen, i;

	(void)n;
	if (!need_dict(x, "unset", a[0]) || !targ_string(x, "unset", a[1], &k, &klen))
		return NULL;
	for (i = 0; i < d->len; i++)
		if (tval_compare_keys(d->items[i], a[1]) == 0) {
			memmove(d->items + i, d->items + i + 1,
			        (d->len - i - 1) * sizeof(*d->items));
			memmove(d->vals + i, d->vals + i + 1, (d->len - i - 1) * sizeof(*d->vals));
			d->len--;
			break;
		}
	return d;
}

static const struct tval *fn_has_key(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *k;
	size_t klen;

	(void)n;
	if (!need_dict(x, "hasKey", a[0]) || !targ_string(x, "hasKey", a[1], &k, &klen))
		return NULL;
	return tval_bool(tval_map_get(a[0], a[1]) != NULL);
}

static const struct tval *fn_keys(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *r = new_list(x, 0, STRING_LIST);
	size_t i, j;

	for (i = 0; r && i < n; i++) {
		if (!need_dict(x, "keys", a[i]))
			return NULL;
		for (j = 0; j < a[i]->len; j++)
			if (!push(x, r, a[i]->items[j]))
				return NULL;
	}
	return r;
}

static const struct tval *fn_values(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *r;
	size_t j;

	(void)n;
	if (!need_dict(x, "values", a[0]) || !(r = new_list(x, a[0]->len, IFACE_LIST)))
		return NULL;
	for (j = 0; j < a[0]->len; j++)
		if (!push(x, r, a[0]->vals[j]))
			return NULL;
	return r;
}

/* pick (keep the named keys) and omit (drop them). */
static const struct tval *pick_omit(struct texec *x, const struct tval *const *a, size_t n,
                                    const char *fn, bool keep)
{
	struct tval *d;
	size_t i, j;

	if (!need_dict(x, fn, a[0]) || !(d = tval_map(x->arena, DICT, TV_NIL)))
		return texec_check(x, NULL);
	for (i = 1; i < n; i++)
		if (a[i]->kind != TV_STRING)
			return texec_fail(x, IG_EINVALID,
			                  "wrong type for value; expected string; got %s",
			                  a[i]->type);
	for (j = 0; j < a[0]->len; j++) {
		bool named = false;

		for (i = 1; i < n && !named; i++)
			named = tval_compare_keys(a[i], a[0]->items[j]) == 0;
		if (named == keep && tval_map_set(x->arena, d, a[0]->items[j], a[0]->vals[j]) < 0)
			return texec_check(x, NULL);
	}
	return d;
}

static const struct tval *fn_pick(struct texec *x, const struct tval *const *a, size_t n)
{
	return pick_omit(x, a, n, "pick", true);
}

static const struct tval *fn_omit(struct texec *x, const struct tval *const *a, size_t n)
{
	return pick_omit(x, a, n, "omit", false);
}

static const struct tval *fn_pluck(struct texec *x, const struct tval *const *a, size_t n)
{
	struct tval *r = new_list(x, 0, IFACE_LIST);
	const struct tval *v;
	const char *k;
	size_t klen, i;

	if (!r || !targ_string(x, "pluck", a[0], &k, &klen))
		return NULL;
	for (i = 1; i < n; i++) {
		if (!need_dict(x, "pluck", a[i]))
			return NULL;
		if ((v = tval_map_get(a[i], a[0])) && !push(x, r, v))
			return NULL;
	}
	return r;
}

static const struct tval *fn_dig(struct texec *x, const struct tval *const *a, size_t n)
{
	const struct tval *d = a[n - 1], *v;
	size_t i;

	if (n < 3)
		return texec_fail(x, IG_EINVALID,
		                  "error calling dig: dig needs at least three arguments");
	for (i = 0; i < n - 2; i++) {
		if (a[i]->kind != TV_STRING || !need_dict(x, "dig", d))
			return a[i]->kind != TV_STRING
			           ? texec_fail(x, IG_EINVALID,
			                        "error calling dig: interface conversion")
			           : NULL;
		if (!(v = tval_map_get(d, a[i])))
			return a[n - 2];
		d = v;
	}
	return d;
}

static const struct tval *deep_copy(struct texec *x, const struct tval *v)
{
	struct tval *c;
	size_t i;

	if (v->kind == TV_LIST) {
		if (!(c = new_list(x, v->len, v->type)))
			return NULL;
		c->elem = v->elem;
		for (i = 0; i < v->len; i++)
			if (!push(x, c, deep_copy(x, v->items[i])))
				return NULL;
		return c;
	}
	if (v->kind == TV_MAP) {
		if (!(c = tval_map(x->arena, v->type, v->elem)))
			return texec_check(x, NULL);
		for (i = 0; i < v->len; i++)
			if (tval_map_set(x->arena, c, v->items[i], deep_copy(x, v->vals[i])) < 0)
				return texec_check(x, NULL);
		return c;
	}
	return v;
}

static const struct tval *fn_deep_copy(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return texec_charge_deep(x, a[0]) ? deep_copy(x, a[0]) : NULL;
}

/* ---- defaults ---- */

static const struct tval *fn_default(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)x;
	return n < 2 || !tval_truth(a[1]) ? a[0] : a[1];
}

static const struct tval *fn_empty(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)x, (void)n;
	return tval_bool(!tval_truth(a[0]));
}

static const struct tval *fn_coalesce(struct texec *x, const struct tval *const *a, size_t n)
{
	size_t i;

	(void)x;
	for (i = 0; i < n; i++)
		if (tval_truth(a[i]))
			return a[i];
	return tval_nil();
}

static const struct tval *all_any(const struct tval *const *a, size_t n, bool all)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tval_truth(a[i]) != all)
			return tval_bool(!all);
	return tval_bool(all);
}

static const struct tval *fn_all(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)x;
	return all_any(a, n, true);
}

static const struct tval *fn_any(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)x;
	return all_any(a, n, false);
}

static const struct tval *fn_ternary(struct texec *x, const struct tval *const *a, size_t n)
{
	bool b;

	(void)n;
	if (!targ_bool(x, "ternary", a[2], &b))
		return NULL;
	return b ? a[0] : a[1];
}

const struct tfunc_entry sprig_lists_table[] = {
    {"list", fn_list, 0, -1},
    {"tuple", fn_list, 0, -1},
    {"first", fn_first, 1, 1},
    {"mustFirst", fn_first, 1, 1},
    {"last", fn_last, 1, 1},
    {"mustLast", fn_last, 1, 1},
    {"rest", fn_rest, 1, 1},
    {"mustRest", fn_rest, 1, 1},
    {"initial", fn_initial, 1, 1},
    {"mustInitial", fn_initial, 1, 1},
    {"append", fn_append, 2, 2},
    {"push", fn_append, 2, 2},
    {"mustAppend", fn_append, 2, 2},
    {"mustPush", fn_append, 2, 2},
    {"prepend", fn_prepend, 2, 2},
    {"mustPrepend", fn_prepend, 2, 2},
    {"concat", fn_concat, 0, -1},
    {"reverse", fn_reverse, 1, 1},
    {"mustReverse", fn_reverse, 1, 1},
    {"uniq", fn_uniq, 1, 1},
    {"mustUniq", fn_uniq, 1, 1},
    {"without", fn_without, 1, -1},
    {"mustWithout", fn_without, 1, -1},
    {"has", fn_has, 2, 2},
    {"mustHas", fn_has, 2, 2},
    {"compact", fn_compact, 1, 1},
    {"mustCompact", fn_compact, 1, 1},
    {"slice", fn_slice, 1, 3},
    {"mustSlice", fn_slice, 1, 3},
    {"chunk", fn_chunk, 2, 2},
    {"mustChunk", fn_chunk, 2, 2},
    {"until", fn_until, 1, 1},
    {"untilStep", fn_until_step, 3, 3},
    {"join", fn_join, 2, 2},
    {"sortAlpha", fn_sort_alpha, 1, 1},
    {"toStrings", fn_to_strings, 1, 1},
    {"split", fn_split, 2, 2},
    {"splitList", fn_split_list, 2, 2},
    {"splitn", fn_splitn, 3, 3},
    {"dict", fn_dict, 0, -1},
    {"get", fn_get, 2, 2},
    {"set", fn_set, 3, 3},
    {"unset", fn_unset, 2, 2},
    {"hasKey", fn_has_key, 2, 2},
    {"keys", fn_keys, 0, -1},
    {"values", fn_values, 1, 1},
    {"pick", fn_pick, 1, -1},
    {"omit", fn_omit, 1, -1},
    {"pluck", fn_pluck, 1, -1},
    {"dig", fn_dig, 0, -1},
    {"deepCopy", fn_deep_copy, 1, 1},
    {"mustDeepCopy", fn_deep_copy, 1, 1},
    {"default", fn_default, 1, -1},
    {"empty", fn_empty, 1, 1},
    {"coalesce", fn_coalesce, 0, -1},
    {"all", fn_all, 0, -1},
    {"any", fn_any, 0, -1},
    {"ternary", fn_ternary, 3, 3},
    {NULL, NULL, 0, 0},
};
