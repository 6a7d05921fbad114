/* The invalid objects of a configuration loaded with keep_valid: each one with the first error
 * found in it, or the dependency that failed, so that a pass can report it as error/config
 * while every other object runs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_private.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

const char *config_kind_name(enum config_kind k)
{
	static const char *const names[] = {"ImageRepository", "ImagePolicy", "GitRepository",
	                                    "ImageUpdateAutomation", "file"};

	return k <= CONFIG_KIND_FILE ? names[k] : "object";
}

static struct config_invalid *invalid_add(struct loader *L, enum config_kind kind, const char *ns,
                                          const char *name, const char *file, size_t line)
{
	struct config *c = L->c;
	struct config_invalid *v;

	if (c->invalid_len == L->invalid_cap) {
		size_t cap = L->invalid_cap ? L->invalid_cap * 2 : 8;

		if (!(v = realloc(c->invalid, cap * sizeof(*v)))) {
			L->oom = true;
			return NULL;
		}
		c->invalid = v;
		L->invalid_cap = cap;
	}
	v = &c->invalid[c->invalid_len];
	*v = (struct config_invalid){kind, NULL, NULL, NULL, file, line, NULL, NULL};
	if (ns && name) {
		struct buf id = BUF_INIT;

		v->ns = strdup(ns);
		v->name = strdup(name);
		if (buf_printf(&id, "%s/%s", ns, name) == 0)
			v->id = buf_detach(&id);
		buf_release(&id);
		if (!v->ns || !v->name || !v->id) {
			free(v->ns), free(v->name), free(v->id);
			L->oom = true;
			return NULL;
		}
	}
	c->invalid_len++;
	return v;
}

static void set_message(struct loader *L, struct config_invalid *v, const char *file, size_t line,
                        const char *msg)
{
	struct buf b = BUF_INIT;

	if (line ? buf_printf(&b, "%s:%zu: %s", file, line, msg) < 0
	         : buf_printf(&b, "%s: %s", file, msg) < 0) {
		L->oom = true;
		buf_release(&b);
		return;
	}
	v->message = buf_detach(&b);
}

struct config_invalid *config_invalid_note(struct loader *L, enum config_kind kind, const char *ns,
                                           const char *name, const char *file, size_t line,
                                           size_t first_diag)
{
	struct config_invalid *v = invalid_add(L, kind, ns, name, file, line);
	const struct config_diags *d = L->diags;

	if (!v)
		return NULL;
	for (size_t i = first_diag; i < d->len; i++)
		if (d->items[i].severity == CONFIG_ERROR) {
			set_message(L, v, d->items[i].file, d->items[i].line, d->items[i].message);
			return v;
		}
	set_message(L, v, file, line, "invalid (out of memory)");
	return v;
}

struct config_invalid *config_invalid_dependent(struct loader *L, enum config_kind kind,
                                                const char *ns, const char *name, const char *file,
                                                size_t line, const char *fmt, ...)
{
	struct config_invalid *v = invalid_add(L, kind, ns, name, file, line);
	struct buf msg = BUF_INIT;
	va_list ap;
	int rc;

	if (!v)
		return NULL;
	va_start(ap, fmt);
	rc = buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc < 0)
		L->oom = true;
	else
		set_message(L, v, file, line, msg.data);
	buf_release(&msg);
	return v;
}

const struct config_invalid *config_invalid_at(const struct config *c, enum config_kind kind,
                                               const char *file, size_t line)
{
	for (size_t i = 0; i < c->invalid_len; i++)
		if (c->invalid[i].kind == kind && c->invalid[i].file == file &&
		    c->invalid[i].line == line)
			return &c->invalid[i];
	return NULL;
}

const struct config_invalid *config_find_invalid(const struct config *c, enum config_kind kind,
                                                 const char *ns, const char *name)
{
	for (size_t i = 0; i < c->invalid_len; i++) {
		const struct config_invalid *v = &c->invalid[i];

		if (v->kind == kind && v->ns && !strcmp(v->ns, ns) && !strcmp(v->name, name))
			return v;
	}
	return NULL;
}

const struct config_invalid *config_find_invalid_id(const struct config *c, enum config_kind kind,
                                                    const char *id)
{
	for (size_t i = 0; i < c->invalid_len; i++)
		if (c->invalid[i].kind == kind && c->invalid[i].id && !strcmp(c->invalid[i].id, id))
			return &c->invalid[i];
	return NULL;
}

const struct config_invalid *config_find_invalid_in(const struct config *c, enum config_kind kind,
                                                    const char *ns)
{
	for (size_t i = 0; i < c->invalid_len; i++)
		if (c->invalid[i].kind == kind && c->invalid[i].ns && !strcmp(c->invalid[i].ns, ns))
			return &c->invalid[i];
	return NULL;
}

void config_invalid_release(struct config *c)
{
	for (size_t i = 0; i < c->invalid_len; i++) {
		free(c->invalid[i].ns), free(c->invalid[i].name), free(c->invalid[i].id);
		free(c->invalid[i].message);
	}
	free(c->invalid);
	c->invalid = NULL;
	c->invalid_len = 0;
}
