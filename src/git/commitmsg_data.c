/* The value Flux gives a messageTemplate (image-automation-controller's source.TemplateData):
 * AutomationObject (types.NamespacedName), Changed (update.Result: FileChanges, and the methods
 * Changes and Objects) and Values, as template values with Flux's Go types and field names.
 * Outside text (file names, values, object names) goes in escaped, so it stays on its line. */
#include <stdio.h>
#include <string.h>

#include "commitmsg_private.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/escape.h"

static const struct tval *text(struct tarena *a, const char *s)
{
	struct buf b = BUF_INIT;
	const struct tval *v;

	if (!s || escape_is_plain(s))
		return tval_cstring(a, s ? s : "");
	if (escape_append(&b, s) < 0) {
		buf_release(&b);
		return NULL;
	}
	v = tval_string(a, b.data ? b.data : "", b.len);
	buf_release(&b);
	return v;
}

static void field(struct tval *st, size_t i, const char *name, const struct tval *v, bool embedded,
                  const char *json)
{
	st->fields[i].name = name;
	st->fields[i].v = v;
	st->fields[i].embedded = embedded;
	st->fields[i].json = json;
	st->fields[i].omitempty = json && *json;
}

static const struct tval *namespaced_name(struct tarena *a, const char *ns, const char *name)
{
	struct tval *st = tval_struct(a, "types.NamespacedName", 3);
	size_t len = strlen(ns ? ns : "") + strlen(name ? name : "") + 2;
	char *s = tarena_alloc(a, len);

	if (!st || !s)
		return NULL;
	field(st, 0, "Namespace", text(a, ns), false, NULL);
	field(st, 1, "Name", text(a, name), false, NULL);
	if (!st->fields[0].v || !st->fields[1].v)
		return NULL;
	/* NamespacedName.String() */
	memcpy(s, st->fields[0].v->s, st->fields[0].v->len);
	s[st->fields[0].v->len] = '/';
	memcpy(s + st->fields[0].v->len + 1, st->fields[1].v->s, st->fields[1].v->len + 1);
	st->stringer = s;
	/* the String method, callable as {{ .AutomationObject.String }} */
	field(st, 2, "String", tval_cstring(a, s), false, NULL);
	st->fields[2].method = true;
	return st->fields[2].v ? st : NULL;
}

/* update.ObjectIdentifier{yaml.ResourceIdentifier{yaml.TypeMeta{APIVersion, Kind},
 * yaml.NameMeta{Name, Namespace}}}: printed {{{apps/v1 Deployment} {name ns}}}, sorted by
 * field order, fields promoted. */
static const struct tval *object_id(struct tarena *a, const struct commitmsg_change *c)
{
	struct tval *oid = tval_struct(a, "update.ObjectIdentifier", 1);
	struct tval *rid = tval_struct(a, "yaml.ResourceIdentifier", 2);
	struct tval *tm = tval_struct(a, "yaml.TypeMeta", 2);
	struct tval *nm = tval_struct(a, "yaml.NameMeta", 2);

	if (!oid || !rid || !tm || !nm)
		return NULL;
	field(tm, 0, "APIVersion", text(a, c->api_version), false, "apiVersion");
	field(tm, 1, "Kind", text(a, c->kind), false, "kind");
	field(nm, 0, "Name", text(a, c->name), false, "name");
	field(nm, 1, "Namespace", text(a, c->namespace), false, "namespace");
	field(rid, 0, "TypeMeta", tm, true, NULL);
	field(rid, 1, "NameMeta", nm, true, NULL);
	field(oid, 0, "ResourceIdentifier", rid, true, NULL);
	for (size_t i = 0; i < 2; i++)
		if (!tm->fields[i].v || !nm->fields[i].v)
			return NULL;
	return oid;
}

/* The marker's setter, or "ns:name" from the policy when the caller has none. */
static const struct tval *setter(struct tarena *a, const struct commitmsg_change *c)
{
	char tmp[512];
	const char *slash;

	if (c->setter)
		return text(a, c->setter);
	slash = strchr(c->policy, '/');
	if (!slash)
		return text(a, c->policy);
	snprintf(tmp, sizeof(tmp), "%.*s:%s", (int)(slash - c->policy), c->policy, slash + 1);
	return text(a, tmp);
}

static const struct tval *change(struct tarena *a, const struct commitmsg_change *c)
{
	struct tval *st = tval_struct(a, "update.Change", 3);

	if (!st)
		return NULL;
	field(st, 0, "OldValue", text(a, c->old_value), false, NULL);
	field(st, 1, "NewValue", text(a, c->new_value), false, NULL);
	field(st, 2, "Setter", setter(a, c), false, NULL);
	return st->fields[0].v && st->fields[1].v && st->fields[2].v ? st : NULL;
}

/* The file name as Flux's reader gives it: relative to spec.update.path. */
static const char *relative_file(const char *file, const char *update_path)
{
	size_t n;

	while (update_path && update_path[0] == '.' && update_path[1] == '/')
		update_path += 2;
	n = update_path ? strlen(update_path) : 0;
	while (n && update_path[n - 1] == '/')
		n--;
	if (n == 1 && update_path[0] == '.')
		n = 0;
	if (n && !strncmp(file, update_path, n) && file[n] == '/')
		return file + n + 1;
	return file;
}

static bool empty(const char *s)
{
	return !s || !*s;
}

/* FileChanges[file][object] = append(..., change). Flux records nothing for a document without
 * apiVersion, kind and metadata (kyaml's GetMeta fails with ErrMissingMetadata), e.g. a Helm
 * values file: its changes are written but absent from the template data. */
static int add_change(struct tarena *a, struct tval *files, const struct commitmsg_change *c,
                      const char *update_path)
{
	const struct tval *key = text(a, relative_file(c->file, update_path)),
	                  *oid = object_id(a, c);
	struct tval *objects, *list;

	if (empty(c->api_version) && empty(c->kind) && empty(c->name) && empty(c->namespace))
		return 0;
	if (!key || !oid)
		return -1;
	if (!(objects = (struct tval *)tval_map_get(files, key))) {
		if (!(objects = tval_map(a, "update.ObjectChanges", TV_NIL)) ||
		    tval_map_set(a, files, key, objects) < 0)
			return -1;
	}
	if (!(list = (struct tval *)tval_map_get(objects, oid))) {
		if (!(list = tval_list(a, 1, "[]update.Change", TV_NIL)) ||
		    tval_map_set(a, objects, oid, list) < 0)
			return -1;
	}
	return tval_list_push(a, list, change(a, c));
}

/* Result.Changes(): every distinct change, in file then object order (Go's map order is
 * random; this is the sorted one), and Result.Objects(): objects across files, a later file's
 * entry replacing an earlier one's as Flux's loop does. */
static int methods(struct tarena *a, const struct tval *files, struct tval **changes,
                   struct tval **objects)
{
	size_t i, j, k;

	if (!(*changes = tval_list(a, 0, "[]update.Change", TV_NIL)) ||
	    !(*objects = tval_map(a, "update.ObjectChanges", TV_NIL)))
		return -1;
	for (i = 0; i < files->len; i++) {
		const struct tval *objs = files->vals[i];

		for (j = 0; j < objs->len; j++) {
			const struct tval *list = objs->vals[j];

			if (tval_map_set(a, *objects, objs->items[j], list) < 0)
				return -1;
			for (k = 0; k < list->len; k++) {
				size_t m;
				bool seen = false;

				for (m = 0; m < (*changes)->len && !seen; m++)
					seen =
					    tval_deep_equal((*changes)->items[m], list->items[k]);
				if (!seen && tval_list_push(a, *changes, list->items[k]) < 0)
					return -1;
			}
		}
	}
	return 0;
}

static const struct tval *result(struct tarena *a, const struct commitmsg_input *in)
{
	struct tval *st = tval_struct(a, "update.Result", 3), *files, *changes, *objects;
	size_t i;

	if (!st || !(files = tval_map(a, "map[string]update.ObjectChanges", TV_NIL)))
		return NULL;
	for (i = 0; i < in->n; i++)
		if (add_change(a, files, &in->changes[i], in->update_path) < 0)
			return NULL;
	if (methods(a, files, &changes, &objects) < 0)
		return NULL;
	field(st, 0, "FileChanges", files, false, NULL);
	field(st, 1, "Changes", changes, false, NULL);
	field(st, 2, "Objects", objects, false, NULL);
	st->fields[1].method = st->fields[2].method = true;
	return st;
}

static const struct tval *values(struct tarena *a, const struct commitmsg_input *in)
{
	struct tval *m = tval_map(a, "map[string]string", TV_STRING);
	size_t i;

	for (i = 0; m && i < in->nvalues; i++)
		if (tval_map_set(a, m, text(a, in->values[2 * i]), text(a, in->values[2 * i + 1])) <
		    0)
			return NULL;
	return m;
}

const struct tval *commitmsg_data(struct tarena *a, const struct commitmsg_input *in)
{
	struct tval *st = tval_struct(a, "source.TemplateData", 3);

	if (!st)
		return NULL;
	field(st, 0, "AutomationObject",
	      namespaced_name(a, in->automation_namespace, in->automation_name), false, NULL);
	field(st, 1, "Changed", result(a, in), false, NULL);
	field(st, 2, "Values", values(a, in), false, NULL);
	return st->fields[0].v && st->fields[1].v && st->fields[2].v ? st : NULL;
}
