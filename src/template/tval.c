/* Template values and their arena: one capped allocation pool per render, freed at once, so
 * that no value needs an owner and a runaway template stops at the cap instead of the heap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/template/tval.h"

#define BLOCK_MIN (16 * 1024)

struct tarena_block {
	struct tarena_block *next;
	size_t size, used;
	max_align_t data[];
};

static const struct tval nil_value = {.kind = TV_NIL, .type = "<nil>"};
static const struct tval true_value = {.kind = TV_BOOL, .type = "bool", .b = true};
static const struct tval false_value = {.kind = TV_BOOL, .type = "bool", .b = false};

void *tarena_alloc(struct tarena *a, size_t n)
{
	struct tarena_block *b = a->head;
	size_t need = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	void *p;

	if (need < n || a->exhausted || need > a->max - a->used) {
		a->exhausted = true;
		return NULL;
	}
	if (!b || b->size - b->used < need) {
		size_t size = need > BLOCK_MIN ? need : BLOCK_MIN;

		if (!(b = malloc(sizeof(*b) + size))) {
			a->exhausted = true;
			return NULL;
		}
		b->size = size;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	p = (char *)b->data + b->used;
	b->used += need;
	a->used += need;
	memset(p, 0, n);
	return p;
}

char *tarena_strndup(struct tarena *a, const char *s, size_t n)
{
	char *p = n + 1 > n ? tarena_alloc(a, n + 1) : NULL;

	if (p && n)
		memcpy(p, s, n);
	return p;
}

void tarena_release(struct tarena *a)
{
	while (a->head) {
		struct tarena_block *next = a->head->next;

		free(a->head);
		a->head = next;
	}
	a->used = 0;
	a->exhausted = false;
}

const struct tval *tval_nil(void)
{
	return &nil_value;
}

const struct tval *tval_bool(bool b)
{
	return b ? &true_value : &false_value;
}

static struct tval *new_value(struct tarena *a, enum tval_kind kind, const char *type)
{
	struct tval *v = tarena_alloc(a, sizeof(*v));

	if (v) {
		v->kind = kind;
		v->type = type;
	}
	return v;
}

struct tval *tval_int(struct tarena *a, long long i, const char *type)
{
	struct tval *v = new_value(a, TV_INT, type ? type : "int");

	if (v)
		v->i = i;
	return v;
}

struct tval *tval_float(struct tarena *a, double f)
{
	struct tval *v = new_value(a, TV_FLOAT, "float64");

	if (v)
		v->f = f;
	return v;
}

struct tval *tval_string(struct tarena *a, const char *s, size_t len)
{
	struct tval *v = new_value(a, TV_STRING, "string");

	if (v && !(v->s = tarena_strndup(a, s, len)))
		return NULL;
	if (v)
		v->len = len;
	return v;
}

struct tval *tval_cstring(struct tarena *a, const char *s)
{
	return tval_string(a, s ? s : "", s ? strlen(s) : 0);
}

struct tval *tval_list(struct tarena *a, size_t cap, const char *type, enum tval_kind elem)
{
	struct tval *v = new_value(a, TV_LIST, type ? type : "[]interface {}");

	if (!v)
		return NULL;
	v->elem = elem;
	if (cap && cap < SIZE_MAX / sizeof(*v->items) &&
	    !(v->items = tarena_alloc(a, cap * sizeof(*v->items))))
		return NULL;
	v->cap = cap;
	return v;
}

static int grow(struct tarena *a, struct tval *v, bool with_vals)
{
	size_t cap = v->cap ? v->cap * 2 : 8;
	const struct tval **items, **vals = NULL;

	if (cap > SIZE_MAX / sizeof(*items) / 2)
		return -1;
	if (!(items = tarena_alloc(a, cap * sizeof(*items))))
		return -1;
	if (with_vals && !(vals = tarena_alloc(a, cap * sizeof(*vals))))
		return -1;
	if (v->len) {
		memcpy(items, v->items, v->len * sizeof(*items));
		if (with_vals)
			memcpy(vals, v->vals, v->len * sizeof(*vals));
	}
	v->items = items;
	v->vals = vals;
	v->cap = cap;
	return 0;
}

int tval_list_push(struct tarena *a, struct tval *list, const struct tval *v)
{
	if (!v || (list->len == list->cap && grow(a, list, false) < 0))
		return -1;
	list->items[list->len++] = v;
	return 0;
}

struct tval *tval_map(struct tarena *a, const char *type, enum tval_kind elem)
{
	struct tval *v = new_value(a, TV_MAP, type ? type : "map[string]interface {}");

	if (v)
		v->elem = elem;
	return v;
}

/* Index of key, or of where it would go (with *found false). */
static size_t map_find(const struct tval *map, const struct tval *key, bool *found)
{
	size_t lo = 0, hi = map->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = tval_compare_keys(map->items[mid], key);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

int tval_map_set(struct tarena *a, struct tval *map, const struct tval *key, const struct tval *v)
{
	bool found;
	size_t at;

	if (!key || !v)
		return -1;
	at = map_find(map, key, &found);
	if (found) {
		map->vals[at] = v;
		return 0;
	}
	if (map->len == map->cap && grow(a, map, true) < 0)
		return -1;
	memmove(map->items + at + 1, map->items + at, (map->len - at) * sizeof(*map->items));
	memmove(map->vals + at + 1, map->vals + at, (map->len - at) * sizeof(*map->vals));
	map->items[at] = key;
	map->vals[at] = v;
	map->len++;
	return 0;
}

const struct tval *tval_map_get(const struct tval *map, const struct tval *key)
{
	bool found;
	size_t at;

	if (!map || map->kind != TV_MAP)
		return NULL;
	at = map_find(map, key, &found);
	return found ? map->vals[at] : NULL;
}

const struct tval *tval_map_gets(const struct tval *map, const char *key)
{
	struct tval k = {.kind = TV_STRING, .type = "string", .s = key, .len = strlen(key)};

	return tval_map_get(map, &k);
}

struct tval *tval_struct(struct tarena *a, const char *type, size_t nfields)
{
	struct tval *v = new_value(a, TV_STRUCT, type);

	if (v && nfields && !(v->fields = tarena_alloc(a, nfields * sizeof(*v->fields))))
		return NULL;
	if (v)
		v->len = nfields;
	return v;
}

bool tval_truth(const struct tval *v)
{
	switch (v->kind) {
	case TV_NIL:
		return false;
	case TV_BOOL:
		return v->b;
	case TV_INT:
		return v->i != 0;
	case TV_FLOAT:
		return v->f != 0;
	case TV_STRING:
	case TV_LIST:
	case TV_MAP:
		return v->len != 0;
	case TV_STRUCT:
		return true;
	}
	return false;
}

static int cmp_num(double a, double b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

int tval_compare_keys(const struct tval *a, const struct tval *b)
{
	size_t i, n;
	int c;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	switch (a->kind) {
	case TV_BOOL:
		return (int)a->b - (int)b->b;
	case TV_INT:
		return a->i < b->i ? -1 : a->i > b->i;
	case TV_FLOAT:
		return cmp_num(a->f, b->f);
	case TV_STRING:
		n = a->len < b->len ? a->len : b->len;
		if ((c = memcmp(a->s, b->s, n)) != 0)
			return c;
		return a->len < b->len ? -1 : a->len > b->len;
	case TV_STRUCT:
		for (i = 0; i < a->len && i < b->len; i++)
			if ((c = tval_compare_keys(a->fields[i].v, b->fields[i].v)) != 0)
				return c;
		return 0;
	default:
		return 0;
	}
}

bool tval_deep_equal(const struct tval *a, const struct tval *b)
{
	size_t i;

	if (a->kind != b->kind || strcmp(a->type, b->type) != 0)
		return false;
	switch (a->kind) {
	case TV_LIST:
		if (a->len != b->len)
			return false;
		for (i = 0; i < a->len; i++)
			if (!tval_deep_equal(a->items[i], b->items[i]))
				return false;
		return true;
	case TV_MAP:
		if (a->len != b->len)
			return false;
		for (i = 0; i < a->len; i++)
			if (tval_compare_keys(a->items[i], b->items[i]) != 0 ||
			    !tval_deep_equal(a->vals[i], b->vals[i]))
				return false;
		return true;
	case TV_STRUCT:
		for (i = 0; i < a->len && i < b->len; i++)
			if (!tval_deep_equal(a->fields[i].v, b->fields[i].v))
				return false;
		return a->len == b->len;
	case TV_FLOAT:
		return a->f == b->f;
	default:
		return tval_compare_keys(a, b) == 0;
	}
}

const struct tval *tval_field(const struct tval *st, const char *name)
{
	size_t i;

	if (st->kind != TV_STRUCT)
		return NULL;
	for (i = 0; i < st->len; i++)
		if (strcmp(st->fields[i].name, name) == 0)
			return st->fields[i].v;
	for (i = 0; i < st->len; i++) {
		const struct tval *v;

		if (st->fields[i].embedded && (v = tval_field(st->fields[i].v, name)))
			return v;
	}
	return NULL;
}

const char *tval_kind_name(const struct tval *v)
{
	switch (v->kind) {
	case TV_NIL:
		return "invalid";
	case TV_BOOL:
		return "bool";
	case TV_INT:
		return v->type;
	case TV_FLOAT:
		return "float64";
	case TV_STRING:
		return "string";
	case TV_LIST:
		return "slice";
	case TV_MAP:
		return "map";
	case TV_STRUCT:
		return "struct";
	}
	return "invalid";
}
