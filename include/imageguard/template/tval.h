/* The dynamic values a Go text/template sees: strings, ints, floats, bools, lists, maps and
 * structs (fixed fields, Go type names), all allocated in one capped arena per render. */
#ifndef IMAGEGUARD_TVAL_H
#define IMAGEGUARD_TVAL_H

#include <stdbool.h>
#include <stddef.h>

enum tval_kind { TV_NIL, TV_BOOL, TV_INT, TV_FLOAT, TV_STRING, TV_LIST, TV_MAP, TV_STRUCT };

struct tval;

/* A struct field. An embedded field's own fields are promoted (Go's embedding); a method is
 * reachable as `.Name` but not printed (Flux's Result.Changes and Result.Objects). */
struct tval_field {
	const char *name;
	const struct tval *v;
	bool embedded;
	bool method;
	const char *json; /* encoding/json name (a tag), NULL: the field name */
	bool omitempty;
};

struct tval {
	enum tval_kind kind;
	const char *type; /* Go type name, static: "string", "int64", "[]interface {}", ... */
	bool b;
	long long i;
	double f;
	const char *s; /* TV_STRING bytes (NUL-terminated, may hold NULs: use len) */
	size_t len;    /* TV_STRING bytes, TV_LIST items, TV_MAP entries, TV_STRUCT fields */
	const struct tval **items; /* TV_LIST; TV_MAP keys (sorted by tval_compare_keys) */
	const struct tval **vals;  /* TV_MAP values */
	struct tval_field *fields; /* TV_STRUCT */
	const char *stringer;      /* a struct's String() (types.NamespacedName), or NULL */
	/* TV_LIST/TV_MAP element kind: TV_STRING for []string and map[string]string (the zero
	 * value of a missing key is ""), TV_NIL for interface{} elements (no value) */
	enum tval_kind elem;
	size_t cap; /* TV_LIST/TV_MAP allocated slots */
};

/* All memory of one render. Allocation past max bytes fails (the render is IG_ETOOBIG). */
struct tarena {
	struct tarena_block *head;
	size_t used, max;
	bool exhausted;
};

#define TARENA_INIT(m)                                                                             \
	{                                                                                          \
		NULL, 0, (m), false                                                                \
	}

void *tarena_alloc(struct tarena *a, size_t n); /* zeroed; NULL past the cap */
char *tarena_strndup(struct tarena *a, const char *s, size_t n);
void tarena_release(struct tarena *a);

/* Constructors: NULL when the arena is exhausted. Strings are copied. */
const struct tval *tval_nil(void);
const struct tval *tval_bool(bool b);
struct tval *tval_int(struct tarena *a, long long i, const char *type);
struct tval *tval_float(struct tarena *a, double f);
struct tval *tval_string(struct tarena *a, const char *s, size_t len);
struct tval *tval_cstring(struct tarena *a, const char *s);
struct tval *tval_list(struct tarena *a, size_t cap, const char *type, enum tval_kind elem);
int tval_list_push(struct tarena *a, struct tval *list, const struct tval *v);
struct tval *tval_map(struct tarena *a, const char *type, enum tval_kind elem);
/* Sets key to v (replacing, or inserting in key order); 0 or -1 when the arena is full. */
int tval_map_set(struct tarena *a, struct tval *map, const struct tval *key, const struct tval *v);
const struct tval *tval_map_get(const struct tval *map, const struct tval *key);
const struct tval *tval_map_gets(const struct tval *map, const char *key);
struct tval *tval_struct(struct tarena *a, const char *type, size_t nfields);

/* Go's truth: false, 0, nil, and empty strings, lists and maps are false. */
bool tval_truth(const struct tval *v);
/* Go's fmtsort order for map keys: numbers, strings byte-wise, structs field by field. */
int tval_compare_keys(const struct tval *a, const struct tval *b);
/* reflect.DeepEqual over these values. */
bool tval_deep_equal(const struct tval *a, const struct tval *b);
/* A struct's field by name, searching embedded structs as Go promotes them; NULL: none. */
const struct tval *tval_field(const struct tval *st, const char *name);
/* reflect's Kind name: "string", "int", "int64", "float64", "bool", "slice", "map", "struct",
 * "invalid". */
const char *tval_kind_name(const struct tval *v);

#endif
