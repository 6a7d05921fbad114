/* Configuration loading: the files (config_files.c), their documents and kinds
 * (config_kinds.c, config_yaml.c), then references resolved and policies compiled here. Every
 * problem found is recorded; loading goes on after an error so that all of them are reported at
 * once. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_private.h"
#include "imageguard/util/buf.h"
#include "imageguard/config/config.h"
#include "imageguard/util/error.h"
#include "imageguard/policy/policy.h"

/* ---- diagnostics ---- */

void config_diags_release(struct config_diags *d)
{
	for (size_t i = 0; i < d->len; i++) {
		free(d->items[i].file);
		free(d->items[i].message);
	}
	free(d->items);
	*d = (struct config_diags)CONFIG_DIAGS_INIT;
}

void config_diag_v(struct loader *L, enum config_severity sev, const char *file, size_t line,
                   const char *fmt, va_list ap)
{
	struct config_diags *d = L->diags;
	struct buf msg = BUF_INIT;
	char *f = strdup(file);

	if (buf_vprintf(&msg, fmt, ap) < 0 || !f)
		goto oom;
	error_flatten(msg.data); /* values quoted from the YAML may span lines */
	if (d->len == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct config_diag *p = realloc(d->items, cap * sizeof(*p));

		if (!p)
			goto oom;
		d->items = p;
		d->cap = cap;
	}
	d->items[d->len++] = (struct config_diag){sev, f, line, buf_detach(&msg)};
	if (sev == CONFIG_ERROR)
		d->errors++;
	else
		d->warnings++;
	return;
oom:
	L->oom = true;
	if (sev == CONFIG_ERROR)
		d->errors++; /* the config must still be refused */
	free(f);
	buf_release(&msg);
}

void config_diag_error(struct loader *L, const char *file, size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_diag_v(L, CONFIG_ERROR, file, line, fmt, ap);
	va_end(ap);
}

void config_diag_warn(struct loader *L, const char *file, size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_diag_v(L, CONFIG_WARNING, file, line, fmt, ap);
	va_end(ap);
}

/* ---- references, duplicates, final compilation ---- */

#define FIND(arr, len, ns_, name_)                                                                 \
	do {                                                                                       \
		for (size_t i_ = 0; i_ < (len); i_++)                                              \
			if (!strcmp((arr)[i_].ns, (ns_)) && !strcmp((arr)[i_].name, (name_)))      \
				return &(arr)[i_];                                                 \
		return NULL;                                                                       \
	} while (0)

const struct config_repository *config_find_repository(const struct config *c, const char *ns,
                                                       const char *name)
{
	FIND(c->repositories, c->repositories_len, ns, name);
}

const struct config_policy *config_find_policy(const struct config *c, const char *ns,
                                               const char *name)
{
	FIND(c->policies, c->policies_len, ns, name);
}

const struct config_git_source *config_find_git_source(const struct config *c, const char *ns,
                                                       const char *name)
{
	FIND(c->git_sources, c->git_sources_len, ns, name);
}

const struct config_automation *config_find_automation(const struct config *c, const char *ns,
                                                       const char *name)
{
	FIND(c->automations, c->automations_len, ns, name);
}

const struct config_policy *config_find_policy_id(const struct config *c, const char *id)
{
	for (size_t i = 0; i < c->policies_len; i++)
		if (c->policies[i].id && !strcmp(c->policies[i].id, id))
			return &c->policies[i];
	return NULL;
}

/* Reports the second and later objects of one kind with the same ns/name. */
#define CHECK_DUPLICATES(L, kind, arr, len)                                                        \
	for (size_t i_ = 0; i_ < (len); i_++) {                                                    \
		for (size_t j_ = 0; j_ < i_; j_++) {                                               \
			if (!strcmp((arr)[i_].ns, (arr)[j_].ns) &&                                 \
			    !strcmp((arr)[i_].name, (arr)[j_].name)) {                             \
				config_diag_error((L), (arr)[i_].origin.file,                      \
				                  (arr)[i_].origin.line,                           \
				                  "%s '%s/%s' is already defined at %s:%zu",       \
				                  (kind), (arr)[i_].ns, (arr)[i_].name,            \
				                  (arr)[j_].origin.file, (arr)[j_].origin.line);   \
				break;                                                             \
			}                                                                          \
		}                                                                                  \
	}

static void resolve_policy(struct loader *L, struct config_policy *p)
{
	struct policy_spec spec;
	struct error err = ERROR_INIT;
	char *digest_pattern = NULL;

	if (!p->repo_name)
		return; /* already reported */
	p->repository = config_find_repository(L->c, p->repo_ns, p->repo_name);
	if (!p->repository) {
		config_diag_error(L, p->origin.file, p->repo_ref_line,
		                  "ImagePolicy '%s': "
		                  "'spec.imageRepositoryRef': ImageRepository '%s/%s' not found",
		                  p->id, p->repo_ns, p->repo_name);
		return;
	}
	if (L->diags->errors > L->errors_before || L->oom)
		return; /* compiling is for a config that will be returned */
	if (config_kinds_policy_spec(&spec, &digest_pattern, p, p->repository) < 0)
		L->oom = true;
	else if (policy_new(&p->policy, &spec, &err) < 0)
		config_diag_error(L, p->origin.file, p->origin.line, "ImagePolicy '%s': %s", p->id,
		                  err.msg);
	else if (p->kind == CONFIG_POLICY_SEMVER) {
		/* The SemVer order itself, every version in range (prereleases too). */
		spec.range = ">=0.0.0-0";
		if (policy_new(&p->order_policy, &spec, &err) < 0)
			config_diag_error(L, p->origin.file, p->origin.line, "ImagePolicy '%s': %s",
			                  p->id, err.msg);
	}
	free(digest_pattern);
}

static char *dup_or(struct loader *L, const char *a, const char *b)
{
	char *s = strdup(a ? a : b);

	if (!s)
		L->oom = true;
	return s;
}

static void resolve_automation(struct loader *L, struct config_automation *a)
{
	const struct config_git_source *g;

	if (!a->source_name)
		return;
	if (!(g = a->source = config_find_git_source(L->c, a->source_ns, a->source_name))) {
		config_diag_error(L, a->origin.file, a->source_ref_line,
		                  "ImageUpdateAutomation '%s': "
		                  "'spec.sourceRef': GitRepository '%s/%s' not found",
		                  a->id, a->source_ns, a->source_name);
		return;
	}
	if (!a->checkout_branch)
		a->checkout_branch = dup_or(L, g->branch, "master");
	if (!a->push_branch && a->checkout_branch)
		a->push_branch = dup_or(L, a->checkout_branch, "");
	if (!a->author_name)
		a->author_name = dup_or(L, NULL, "imageguard");
	if (!a->author_email)
		a->author_email = dup_or(L, NULL, "imageguard@localhost");
	if (!a->update_path)
		a->update_path = dup_or(L, NULL, "./");
}

static void resolve(struct loader *L)
{
	struct config *c = L->c;

	CHECK_DUPLICATES(L, "ImageRepository", c->repositories, c->repositories_len)
	CHECK_DUPLICATES(L, "ImagePolicy", c->policies, c->policies_len)
	CHECK_DUPLICATES(L, "GitRepository", c->git_sources, c->git_sources_len)
	CHECK_DUPLICATES(L, "ImageUpdateAutomation", c->automations, c->automations_len)
	for (size_t i = 0; i < c->automations_len; i++)
		resolve_automation(L, &c->automations[i]);
	/* Policies last: they compile only when nothing else went wrong. */
	for (size_t i = 0; i < c->policies_len; i++)
		resolve_policy(L, &c->policies[i]);
}

/* ---- lifecycle ---- */

void config_free(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->repositories_len; i++) {
		struct config_repository *r = &c->repositories[i];

		free(r->ns), free(r->name), free(r->id), free(r->image);
		imageref_release(&r->ref);
		free(r->secret_ref), free(r->cert_secret_ref);
		strvec_release(&r->exclusion);
	}
	for (size_t i = 0; i < c->policies_len; i++) {
		struct config_policy *p = &c->policies[i];

		free(p->ns), free(p->name), free(p->id), free(p->repo_ns), free(p->repo_name);
		free(p->pattern), free(p->extract), free(p->range), free(p->digest_tag);
		free(p->digest_platform);
		free(p->override.tag), free(p->override.reason);
		policy_free(p->policy);
		policy_free(p->order_policy);
	}
	for (size_t i = 0; i < c->git_sources_len; i++) {
		struct config_git_source *g = &c->git_sources[i];

		free(g->ns), free(g->name), free(g->id), free(g->url), free(g->branch);
		free(g->secret_ref);
	}
	for (size_t i = 0; i < c->automations_len; i++) {
		struct config_automation *a = &c->automations[i];

		free(a->ns), free(a->name), free(a->id), free(a->source_ns), free(a->source_name);
		free(a->checkout_branch), free(a->push_branch), free(a->author_name);
		free(a->author_email), free(a->message_template), free(a->update_path);
	}
	free(c->repositories);
	free(c->policies);
	free(c->git_sources);
	free(c->automations);
	strvec_release(&c->files);
	free(c);
}

/* Resolves what L read, and hands the configuration out unless something went wrong. */
static int finish(struct config **out, struct loader *L, const char *path, struct error *err)
{
	struct config_diags *diags = L->diags;
	int rc = 0;

	resolve(L);
	if (L->oom) {
		rc = error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	} else if (diags->errors > L->errors_before) {
		rc = error_set(err, IG_EINVALID, "config '%s': %zu error%s", path,
		               diags->errors - L->errors_before,
		               diags->errors - L->errors_before == 1 ? "" : "s");
	}
	if (rc < 0) {
		config_free(L->c);
		return rc;
	}
	*out = L->c;
	return 0;
}

int config_load_documents(struct config **out, const struct config_document *docs, size_t n,
                          const char *source, struct config_diags *diags, struct error *err)
{
	struct loader L = {0};

	*out = NULL;
	L.errors_before = diags->errors;
	L.diags = diags;
	if (!(L.c = calloc(1, sizeof(*L.c))))
		return error_set(err, IG_EFAIL, "config '%s': out of memory", source);
	for (size_t i = 0; i < n; i++)
		if (strvec_push(&L.c->files, docs[i].name) < 0) {
			config_free(L.c);
			return error_set(err, IG_EFAIL, "config '%s': out of memory", source);
		}
	/* origins point into files: read only once every name is in place */
	for (size_t i = 0; i < n; i++)
		config_kinds_read_buffer(&L, L.c->files.items[i], docs[i].data, docs[i].len);
	return finish(out, &L, source, err);
}

int config_load(struct config **out, const char *path, struct config_diags *diags,
                struct error *err)
{
	struct loader L = {0};
	size_t errors_before = diags->errors;
	int rc;

	L.errors_before = errors_before;

	*out = NULL;
	if (!(L.c = calloc(1, sizeof(*L.c))))
		return error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	L.diags = diags;
	if ((rc = config_files_list(&L.c->files, path, err)) < 0)
		goto done;
	for (size_t i = 0; i < L.c->files.len; i++)
		config_kinds_read_file(&L, L.c->files.items[i]);
	resolve(&L);
	if (L.oom) {
		rc = error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	} else if (diags->errors > errors_before) {
		rc = error_set(err, IG_EINVALID, "config '%s': %zu error%s", path,
		               diags->errors - errors_before,
		               diags->errors - errors_before == 1 ? "" : "s");
	}
done:
	if (rc < 0) {
		config_free(L.c);
		return rc;
	}
	*out = L.c;
	return 0;
}

/* ---- small public helpers ---- */

int config_secret_path(char **out, const char *secrets_dir, const char *name, struct error *err)
{
	struct buf b = BUF_INIT;

	*out = NULL;
	if (!config_yaml_is_dns_name(name, 253, true))
		return error_set(err, IG_EINVALID, "secret '%s': not a valid Kubernetes name",
		                 name);
	if (buf_printf(&b, "%s/%s", secrets_dir, name) < 0) {
		buf_release(&b);
		return error_set(err, IG_EFAIL, "secret '%s': out of memory", name);
	}
	*out = buf_detach(&b);
	return 0;
}

bool config_override_active(const struct config_override *o, time_t now)
{
	return o->tag && (!o->has_until || now < o->until);
}

const char *config_reflect_name(enum config_reflect r)
{
	switch (r) {
	case CONFIG_REFLECT_NEVER:
		return "Never";
	case CONFIG_REFLECT_IF_NOT_PRESENT:
		return "IfNotPresent";
	case CONFIG_REFLECT_ALWAYS:
		return "Always";
	}
	return "unknown";
}
