/* Sprig's toJson and toPrettyJson: Go's encoding/json over template values (sorted map keys,
 * HTML-safe string escapes, struct fields by name or tag, embedded structs flattened). What
 * encoding/json cannot encode (a map with struct keys, NaN) gives "" as Sprig does, or an
 * error from the must* forms. */
#include <math.h>
#include <string.h>

#include "template_private.h"

static int json_value(struct buf *b, const struct tval *v, int indent, int depth);

static int json_string(struct buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0;
	int rc = buf_puts(b, "\"");

	while (rc == 0 && i < len) {
		unsigned cp;
		size_t w = tutf8_decode(s + i, len - i, &cp);
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			rc = buf_printf(b, "\\%c", c);
		else if (c == '\n')
			rc = buf_puts(b, "\\n");
		else if (c == '\r')
			rc = buf_puts(b, "\\r");
		else if (c == '\t')
			rc = buf_puts(b, "\\t");
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			rc = buf_printf(b, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
		else if (cp == 0xFFFD && w == 1)
			rc = buf_puts(b, "\\ufffd");
		else if (cp == 0x2028 || cp == 0x2029)
			rc = buf_printf(b, "\\u%04x", cp);
		else
			rc = buf_append(b, s + i, w);
		i += w;
	}
	return rc ? rc : buf_puts(b, "\"");
}

static int newline(struct buf *b, int indent, int depth)
{
	int rc = indent ? buf_puts(b, "\n") : 0, i;

	for (i = 0; rc == 0 && indent && i < depth * indent; i++)
		rc = buf_puts(b, " ");
	return rc;
}

static int json_float(struct buf *b, double f)
{
	double abs = fabs(f);
	bool e = abs != 0 && (abs < 1e-6 || abs >= 1e21);
	size_t start = b->len;
	int rc;

	if (isnan(f) || isinf(f))
		return IG_EINVALID;
	rc = tfmt_float_shortest(b, f, e ? 'e' : 'f');
	/* encoding/json writes e-7, not e-07 */
	if (rc == 0 && e && b->len - start >= 4 && b->data[b->len - 4] == 'e' &&
	    b->data[b->len - 2] == '0') {
		b->data[b->len - 2] = b->data[b->len - 1];
		b->data[--b->len] = 0;
	}
	return rc;
}

static bool is_empty(const struct tval *v)
{
	return v->kind != TV_STRUCT && !tval_truth(v);
}

static int json_fields(struct buf *b, const struct tval *v, int indent, int depth, bool *first)
{
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && i < v->len; i++) {
		const struct tval_field *f = &v->fields[i];

		if (f->method || (f->omitempty && is_empty(f->v)))
			continue;
		if (f->embedded && !f->json) {
			rc = json_fields(b, f->v, indent, depth, first);
			continue;
		}
		if (!*first)
			rc = buf_puts(b, ",");
		*first = false;
		if (rc == 0)
			rc = newline(b, indent, depth + 1);
		if (rc == 0)
			rc = json_string(b, f->json ? f->json : f->name,
			                 strlen(f->json ? f->json : f->name));
		if (rc == 0)
			rc = buf_puts(b, indent ? ": " : ":");
		if (rc == 0)
			rc = json_value(b, f->v, indent, depth + 1);
	}
	return rc;
}

static int json_container(struct buf *b, const struct tval *v, int indent, int depth)
{
	bool first = true;
	size_t i;
	int rc = buf_puts(b, v->kind == TV_LIST ? "[" : "{");

	if (v->kind == TV_STRUCT)
		rc = rc ? rc : json_fields(b, v, indent, depth, &first);
	for (i = 0; rc == 0 && v->kind != TV_STRUCT && i < v->len; i++) {
		if (v->kind == TV_MAP && v->items[i]->kind != TV_STRING &&
		    v->items[i]->kind != TV_INT)
			return IG_EINVALID; /* json: unsupported type */
		if (i)
			rc = buf_puts(b, ",");
		first = false;
		if (rc == 0)
			rc = newline(b, indent, depth + 1);
		if (rc == 0 && v->kind == TV_MAP) {
			if (v->items[i]->kind == TV_STRING)
				rc = json_string(b, v->items[i]->s, v->items[i]->len);
			else
				rc = buf_printf(b, "\"%lld\"", v->items[i]->i);
			if (rc == 0)
				rc = buf_puts(b, indent ? ": " : ":");
		}
		if (rc == 0)
			rc = json_value(b, v->kind == TV_MAP ? v->vals[i] : v->items[i], indent,
			                depth + 1);
	}
	if (rc == 0 && !first)
		rc = newline(b, indent, depth);
	return rc ? rc : buf_puts(b, v->kind == TV_LIST ? "]" : "}");
}

static int json_value(struct buf *b, const struct tval *v, int indent, int depth)
{
	if (depth > 64)
		return IG_EINVALID;
	switch (v->kind) {
	case TV_NIL:
		return buf_puts(b, "null");
	case TV_BOOL:
		return buf_puts(b, v->b ? "true" : "false");
	case TV_INT:
		return buf_printf(b, "%lld", v->i);
	case TV_FLOAT:
		return json_float(b, v->f);
	case TV_STRING:
		return json_string(b, v->s, v->len);
	default:
		return json_container(b, v, indent, depth);
	}
}

static const struct tval *to_json(struct texec *x, const struct tval *v, const char *fn, int indent,
                                  bool must)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	int rc;

	if (!texec_charge_deep(x, v))
		return NULL;
	rc = json_value(&b, v, indent, 0);

	if (rc == IG_EINVALID) {
		buf_release(&b);
		if (must)
			return texec_fail(x, IG_EINVALID,
			                  "error calling %s: json: unsupported value of type %s",
			                  fn, v->type);
		return texec_check(x, tval_cstring(x->arena, ""));
	}
	return texec_string(x, &b, rc);
}

static const struct tval *fn_to_json(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return to_json(x, a[0], "toJson", 0, false);
}

static const struct tval *fn_to_pretty_json(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return to_json(x, a[0], "toPrettyJson", 2, false);
}

static const struct tval *fn_must_to_json(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return to_json(x, a[0], "mustToJson", 0, true);
}

static const struct tval *fn_must_to_pretty_json(struct texec *x, const struct tval *const *a,
                                                 size_t n)
{
	(void)n;
	return to_json(x, a[0], "mustToPrettyJson", 2, true);
}

const struct tfunc_entry sprig_json_table[] = {
    {"toJson", fn_to_json, 1, 1},
    {"toPrettyJson", fn_to_pretty_json, 1, 1},
    {"mustToJson", fn_must_to_json, 1, 1},
    {"mustToPrettyJson", fn_must_to_pretty_json, 1, 1},
    {NULL, NULL, 0, 0},
};
