/* Configuration loading: the files (config_files.c), their documents and kinds
 * (config_kinds.c, config_yaml.c), then references resolved and policies compiled here. Every
 * problem found is recorded; loading goes on after an error so that all of them are reported at
 * once. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_private.h"
#include "imageguard/util/buf.h"
#include "imageguard/config/config.h"
#include "imageguard/util/error.h"
#include "imageguard/policy/policy.h"

/* ---- references, duplicates, final compilation ---- */

struct head {
	char *ns, *name, *id;
	struct config_origin origin;
};

#define SAME_HEAD(type)                                                                            \
	_Static_assert(offsetof(type, ns) == offsetof(struct head, ns) &&                          \
	                   offsetof(type, name) == offsetof(struct head, name) &&                  \
	                   offsetof(type, id) == offsetof(struct head, id) &&                      \
	                   offsetof(type, origin) == offsetof(struct head, origin),                \
	               #type " must begin like struct head")
SAME_HEAD(struct config_repository);
SAME_HEAD(struct config_policy);
SAME_HEAD(struct config_git_source);
SAME_HEAD(struct config_automation);

/* The array of one kind, as the index's key function reads it. */
struct kind_array {
	const void *items;
	size_t size, len;
};

static struct kind_array kind_array(const struct config *c, enum config_kind k)
{
	switch (k) {
	case CONFIG_KIND_REPOSITORY:
		return (struct kind_array){c->repositories, sizeof(*c->repositories),
		                           c->repositories_len};
	case CONFIG_KIND_POLICY:
		return (struct kind_array){c->policies, sizeof(*c->policies), c->policies_len};
	case CONFIG_KIND_GIT_SOURCE:
		return (struct kind_array){c->git_sources, sizeof(*c->git_sources),
		                           c->git_sources_len};
	default:
		return (struct kind_array){c->automations, sizeof(*c->automations),
		                           c->automations_len};
	}
}

static const char *id_at(const void *ctx, size_t i)
{
	const struct kind_array *a = ctx;
	const struct head *h = (const struct head *)((const char *)a->items + i * a->size);

	return h->id ? h->id : "";
}

static const void *find(const struct config *c, enum config_kind k, const char *ns,
                        const char *name)
{
	struct kind_array a = kind_array(c, k);
	size_t i = strindex_find(&c->index[k], ns, name ? "/" : NULL, name, id_at, &a);

	return i == STRINDEX_NONE ? NULL : (const char *)a.items + i * a.size;
}

const struct config_repository *config_find_repository(const struct config *c, const char *ns,
                                                       const char *name)
{
	return find(c, CONFIG_KIND_REPOSITORY, ns, name);
}

const struct config_policy *config_find_policy(const struct config *c, const char *ns,
                                               const char *name)
{
	return find(c, CONFIG_KIND_POLICY, ns, name);
}

const struct config_git_source *config_find_git_source(const struct config *c, const char *ns,
                                                       const char *name)
{
	return find(c, CONFIG_KIND_GIT_SOURCE, ns, name);
}

const struct config_automation *config_find_automation(const struct config *c, const char *ns,
                                                       const char *name)
{
	return find(c, CONFIG_KIND_AUTOMATION, ns, name);
}

const struct config_policy *config_find_policy_id(const struct config *c, const char *id)
{
	return find(c, CONFIG_KIND_POLICY, id, NULL);
}

/* ---- the four kinds alike ---- */

/* The members every object struct begins with, in this order (checked below), so that
 * duplicates, invalid marks and compaction are written once for all four kinds. */
static struct head *head_at(void *items, size_t size, size_t i)
{
	return (struct head *)((char *)items + i * size);
}

static const struct config_invalid *invalid_of(const struct loader *L, enum config_kind k,
                                               const struct head *h)
{
	return config_invalid_at(L->c, k, h->origin.file, h->origin.line);
}

/* Indexes kind k by id. With dups, every object of a duplicated name is invalid (which one is
 * meant cannot be told): the error goes on the second, which names the first, and the index
 * keeps the first. */
static void index_kind(struct loader *L, enum config_kind k, bool dups)
{
	struct kind_array arr = kind_array(L->c, k);

	strindex_release(&L->c->index[k]);
	for (size_t i = 0; i < arr.len && !L->oom; i++) {
		struct head *a = head_at((void *)arr.items, arr.size, i), *b;
		size_t first = L->diags->len, dup;

		if (strindex_add(&L->c->index[k], i, id_at, &arr, &dup) < 0) {
			L->oom = true;
			break;
		}
		if (dup == STRINDEX_NONE || !dups)
			continue;
		b = head_at((void *)arr.items, arr.size, dup);
		config_diag_error(L, a->origin.file, a->origin.line,
		                  "%s '%s/%s' is already defined at %s:%zu", config_kind_name(k),
		                  a->ns, a->name, b->origin.file, b->origin.line);
		if (!invalid_of(L, k, a))
			config_invalid_note(L, k, a->ns, a->name, a->origin.file, a->origin.line,
			                    first);
		if (!invalid_of(L, k, b))
			config_invalid_dependent(
			    L, k, b->ns, b->name, b->origin.file, b->origin.line,
			    "%s '%s/%s' is defined again at %s:%zu", config_kind_name(k), b->ns,
			    b->name, a->origin.file, a->origin.line);
	}
}

/* Drops the invalid objects of one array (release frees one), keeping the order. */
static size_t compact(struct loader *L, enum config_kind k, void *items, size_t len, size_t size,
                      void (*release)(void *))
{
	size_t w = 0;

	for (size_t r = 0; r < len; r++) {
		struct head *h = head_at(items, size, r);

		if (invalid_of(L, k, h))
			release(h);
		else if (w++ != r)
			memcpy(head_at(items, size, w - 1), h, size);
	}
	return w;
}

/* ---- references ---- */

/* The reason Flux gives an object whose reference is missing or invalid: image-reflector-
 * controller's for a policy (its ImageRepository), image-automation-controller's for an
 * automation (the source manager it could not build). */
static const char *dependency_reason(enum config_kind k)
{
	return k == CONFIG_KIND_POLICY ? CONFIG_REASON_DEPENDENCY_NOT_READY
	                               : CONFIG_REASON_SOURCE_MANAGER_FAILED;
}

/* The object ref points at is missing or invalid: so is the object that refers to it (k, h). */
static void check_ref(struct loader *L, enum config_kind k, const struct head *h, size_t ref_line,
                      const char *field, enum config_kind target_kind, const struct head *target,
                      const char *ns, const char *name)
{
	const struct config_invalid *bad, *self = invalid_of(L, k, h);
	struct config_invalid *v = NULL;
	size_t first = L->diags->len;

	bad = target ? invalid_of(L, target_kind, target)
	             : config_find_invalid(L->c, target_kind, ns, name);
	if (bad && !self)
		v = config_invalid_dependent(
		    L, k, h->ns, h->name, h->origin.file, h->origin.line,
		    "%s '%s': %s '%s/%s' is invalid (%s)", config_kind_name(k), h->id,
		    config_kind_name(target_kind), ns, name, bad->message ? bad->message : "");
	else if (!bad && !target) {
		/* reported even for an object already invalid: every error is listed */
		config_diag_error(L, h->origin.file, ref_line,
		                  "%s '%s': '%s': %s '%s/%s' not found", config_kind_name(k), h->id,
		                  field, config_kind_name(target_kind), ns, name);
		if (!self)
			v = config_invalid_note(L, k, h->ns, h->name, h->origin.file,
			                        h->origin.line, first);
	}
	if (v)
		v->reason = dependency_reason(k);
}

static void check_policy_ref(struct loader *L, struct config_policy *p)
{
	const struct config_repository *r;

	if (!p->repo_name)
		return; /* already reported, and invalid */
	/* --no-cross-namespace-refs first, as Flux: a missing repository is refused alike */
	if (config_acl_refuse_policy_ref(L, p))
		return;
	r = config_find_repository(L->c, p->repo_ns, p->repo_name);
	check_ref(L, CONFIG_KIND_POLICY, (const struct head *)p, p->repo_ref_line,
	          "spec.imageRepositoryRef", CONFIG_KIND_REPOSITORY, (const struct head *)r,
	          p->repo_ns, p->repo_name);
	if (r && !invalid_of(L, CONFIG_KIND_REPOSITORY, (const struct head *)r))
		config_acl_check_policy(L, p, r); /* Flux's ACL: spec.accessFrom */
}

static void check_automation_ref(struct loader *L, struct config_automation *a)
{
	const struct config_git_source *g;
	size_t first = L->diags->len;

	if (!a->source_name || config_acl_refuse_source_ref(L, a))
		return;
	g = config_find_git_source(L->c, a->source_ns, a->source_name);
	check_ref(L, CONFIG_KIND_AUTOMATION, (const struct head *)a, a->source_ref_line,
	          "spec.sourceRef", CONFIG_KIND_GIT_SOURCE, (const struct head *)g, a->source_ns,
	          a->source_name);
	if (!g || a->checkout_branch || !g->ref_field)
		return;
	config_diag_error(L, a->origin.file, a->source_ref_line,
	                  "ImageUpdateAutomation '%s': GitRepository '%s' checks out "
	                  "'spec.ref.%s' (%s:%zu), and imageguard checks out a branch only: "
	                  "set spec.git.checkout.ref.branch",
	                  a->id, g->id, g->ref_field, g->origin.file, g->ref_line);
	if (!invalid_of(L, CONFIG_KIND_AUTOMATION, (const struct head *)a))
		config_invalid_note(L, CONFIG_KIND_AUTOMATION, a->ns, a->name, a->origin.file,
		                    a->origin.line, first);
}

/* ---- the valid objects completed ---- */

static void compile_policy(struct loader *L, struct config_policy *p)
{
	struct policy_spec spec;
	struct error err = ERROR_INIT;
	char *digest_pattern = NULL;
	size_t first = L->diags->len;

	p->repository = config_find_repository(L->c, p->repo_ns, p->repo_name);
	/* the policy checked while reading was compiled with the default exclusions */
	if (p->policy && p->repository && !config_kinds_default_exclusions(p->repository)) {
		policy_free(p->policy);
		p->policy = NULL;
	}
	if (config_kinds_policy_spec(&spec, &digest_pattern, p, p->repository) < 0)
		L->oom = true;
	else if (!p->policy && policy_new(&p->policy, &spec, &err) < 0)
		config_diag_error(L, p->origin.file, p->origin.line, "ImagePolicy '%s': %s", p->id,
		                  err.msg);
	if (L->diags->len > first) {
		struct config_invalid *v = config_invalid_note(
		    L, CONFIG_KIND_POLICY, p->ns, p->name, p->origin.file, p->origin.line, first);

		if (v)
			v->reason = CONFIG_REASON_INVALID_POLICY;
	}
	free(digest_pattern);
}

/* The defaults: the config's strings are shared (none is freed on its own). */
static void complete_automation(struct loader *L, struct config_automation *a)
{
	const struct config_git_source *g;

	g = a->source = config_find_git_source(L->c, a->source_ns, a->source_name);
	if (!a->checkout_branch)
		a->checkout_branch = g->branch ? g->branch : config_strdup(L, "master");
	if (!a->push_branch)
		a->push_branch = a->checkout_branch;
	if (!a->author_name)
		a->author_name = config_strdup(L, "imageguard");
	if (!a->author_email)
		a->author_email = config_strdup(L, "imageguard@localhost");
	if (!a->update_path)
		a->update_path = config_strdup(L, "./");
}

/* ---- the objects' strings ---- */

/* Blocks of the config's strings, newest first: 1 KiB doubling to 32 KiB, and a string over a
 * quarter of that in a block of its own. A string costs its bytes, not a malloc each. */
#define ARENA_FIRST 1024u
#define ARENA_MAX (32u << 10)

struct config_arena {
	struct config_arena *next;
	size_t used, size;
	char data[]; /* at offset 24: aligned for a pointer, as malloc's result is */
};
_Static_assert(offsetof(struct config_arena, data) % sizeof(void *) == 0, "data aligned");

static struct config_arena *arena_block(struct config_arena *next, size_t size)
{
	struct config_arena *b = malloc(sizeof(*b) + size);

	if (b)
		*b = (struct config_arena){next, 0, size};
	return b;
}

/* n bytes aligned for a pointer (every block's data is) when align, else anywhere. */
static char *arena_alloc(struct config *c, size_t n, bool align)
{
	struct config_arena *a = c->strings, *b;
	size_t size = a ? a->size * 2 : ARENA_FIRST, pad = 0;

	if (a && align)
		pad = (sizeof(void *) - a->used % sizeof(void *)) % sizeof(void *);
	if (a && a->size - a->used >= n && a->size - a->used - n >= pad) {
		a->used += pad + n;
		return a->data + a->used - n;
	}
	if (size > ARENA_MAX)
		size = ARENA_MAX;
	if (n > ARENA_MAX / 4) { /* behind the current block, which keeps its room */
		if (!(b = arena_block(a ? a->next : NULL, n)))
			return NULL;
		if (a)
			a->next = b;
		else
			c->strings = b;
		b->used = n;
		return b->data;
	}
	if (!(b = arena_block(a, size < n ? n : size)))
		return NULL;
	c->strings = b;
	b->used = n;
	return b->data;
}

char *config_strndup(struct loader *L, const char *s, size_t n)
{
	char *p = n < SIZE_MAX ? arena_alloc(L->c, n + 1, false) : NULL;

	if (!p) {
		L->oom = true;
		return NULL;
	}
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *config_strdup(struct loader *L, const char *s)
{
	return config_strndup(L, s, strlen(s));
}

char *config_strjoin(struct loader *L, const char *a, char sep, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	char *p = na + nb < SIZE_MAX - 1 ? arena_alloc(L->c, na + nb + 2, false) : NULL;

	if (!p) {
		L->oom = true;
		return NULL;
	}
	memcpy(p, a, na);
	p[na] = sep;
	memcpy(p + na + 1, b, nb + 1);
	return p;
}

void *config_alloc(struct loader *L, size_t n)
{
	void *p = arena_alloc(L->c, n, true);

	if (!p)
		L->oom = true;
	return p;
}

static void arena_free(struct config_arena *a)
{
	while (a) {
		struct config_arena *next = a->next;

		free(a);
		a = next;
	}
}

/* ---- lifecycle ---- */

static void repository_release(void *v)
{
	struct config_repository *r = v;

	imageref_release(&r->ref);
	config_acl_release(r);
}

static void policy_release(void *v)
{
	struct config_policy *p = v;

	strvec_release(&p->labels);
	policy_free(p->policy);
}

static void git_source_release(void *v)
{
	(void)v; /* its strings are the config's */
}

static void automation_release(void *v)
{
	struct config_automation *a = v;

	config_selector_release(&a->selector);
	strvec_release(&a->template_values);
}

#define COMPACT(L, k, arr, len, release)                                                           \
	((len) = compact((L), (k), (arr), (len), sizeof(*(arr)), (release)))

/* An array at its exact size: the loader doubles them as documents come (up to half unused).
 * Done before any pointer into it is taken. */
static void *fit(void *items, size_t len, size_t size)
{
	void *p;

	if (!len) {
		free(items);
		return NULL;
	}
	p = realloc(items, len * size);
	return p ? p : items; /* a smaller block that cannot be had: keep the larger */
}

#define FIT(arr, len) ((arr) = fit((arr), (len), sizeof(*(arr))))

/* Indexes again each kind that compaction shortened since lens (which gets the new lengths):
 * an array that kept all its objects kept their positions. */
static void reindex_moved(struct loader *L, size_t *lens)
{
	for (int k = 0; k < CONFIG_KIND_FILE; k++) {
		size_t len = kind_array(L->c, (enum config_kind)k).len;

		if (len != lens[k])
			index_kind(L, (enum config_kind)k, false);
		lens[k] = len;
	}
}

/* Duplicates, secrets, references; then the invalid objects (and what depends on them) leave
 * the arrays, and the valid ones get their pointers, defaults and compiled policies. */
static void resolve(struct loader *L)
{
	struct config *c = L->c;
	size_t lens[CONFIG_KIND_FILE];

	for (int k = 0; k < CONFIG_KIND_FILE; k++) {
		index_kind(L, (enum config_kind)k, true);
		lens[k] = kind_array(c, (enum config_kind)k).len;
	}
	if (L->opts.check_secrets)
		config_secrets_check_all(L);
	for (size_t i = 0; i < c->automations_len; i++)
		check_automation_ref(L, &c->automations[i]);
	for (size_t i = 0; i < c->policies_len; i++)
		check_policy_ref(L, &c->policies[i]);
	COMPACT(L, CONFIG_KIND_REPOSITORY, c->repositories, c->repositories_len,
	        repository_release);
	COMPACT(L, CONFIG_KIND_POLICY, c->policies, c->policies_len, policy_release);
	COMPACT(L, CONFIG_KIND_GIT_SOURCE, c->git_sources, c->git_sources_len, git_source_release);
	COMPACT(L, CONFIG_KIND_AUTOMATION, c->automations, c->automations_len, automation_release);
	FIT(c->repositories, c->repositories_len);
	FIT(c->policies, c->policies_len);
	FIT(c->git_sources, c->git_sources_len);
	FIT(c->automations, c->automations_len);
	/* where positions moved, the lookups below must find the objects kept where they are */
	reindex_moved(L, lens);
	for (size_t i = 0; i < c->automations_len; i++)
		complete_automation(L, &c->automations[i]);
	for (size_t i = 0; i < c->policies_len && !L->oom; i++)
		compile_policy(L, &c->policies[i]);
	if (lens[CONFIG_KIND_POLICY] !=
	    COMPACT(L, CONFIG_KIND_POLICY, c->policies, c->policies_len, policy_release))
		FIT(c->policies, c->policies_len);
	reindex_moved(L, lens);
}

void config_free(struct config *c)
{
	if (!c)
		return;
	for (int k = 0; k < CONFIG_KIND_FILE; k++)
		strindex_release(&c->index[k]);
	for (size_t i = 0; i < c->repositories_len; i++)
		repository_release(&c->repositories[i]);
	for (size_t i = 0; i < c->policies_len; i++)
		policy_release(&c->policies[i]);
	for (size_t i = 0; i < c->git_sources_len; i++)
		git_source_release(&c->git_sources[i]);
	for (size_t i = 0; i < c->automations_len; i++)
		automation_release(&c->automations[i]);
	free(c->repositories);
	free(c->policies);
	free(c->git_sources);
	free(c->automations);
	config_invalid_release(c);
	config_acl_release_namespaces(c);
	strvec_release(&c->files);
	arena_free(c->strings);
	free(c);
}

/* Objects found, valid or not (an invalid file is not an object). */
static size_t objects_found(const struct config *c)
{
	size_t n = c->repositories_len + c->policies_len + c->git_sources_len + c->automations_len;

	for (size_t i = 0; i < c->invalid_len; i++)
		n += c->invalid[i].kind != CONFIG_KIND_FILE;
	return n;
}

int config_load_documents(struct config **out, const struct config_document *docs, size_t n,
                          const char *source, const struct config_load_options *o,
                          struct config_diags *diags, struct error *err)
{
	struct loader L = {0};
	size_t errors;

	*out = NULL;
	L.errors_before = diags->errors;
	L.diags = diags;
	if (o)
		L.opts = *o;
	if (!(L.c = calloc(1, sizeof(*L.c))))
		return error_set(err, IG_EFAIL, "config '%s': out of memory", source);
	for (size_t i = 0; i < n; i++)
		if (strvec_push(&L.c->files, docs[i].name) < 0) {
			config_free(L.c);
			return error_set(err, IG_EFAIL, "config '%s': out of memory", source);
		}
	/* origins point into files: read only once every name is in place */
	for (size_t i = 0; i < n; i++) {
		size_t len = docs[i].len;
		char *made = docs[i].data || !L.opts.document_text
		                 ? NULL
		                 : L.opts.document_text(L.opts.document_ctx, i, &len);

		if (!docs[i].data && !made) {
			L.oom = true;
			break;
		}
		config_kinds_read_buffer(&L, L.c->files.items[i], made ? made : docs[i].data, len);
		free(made);
	}
	resolve(&L);
	errors = diags->errors - L.errors_before;
	if (L.oom || (errors && (!L.opts.keep_valid || !objects_found(L.c)))) {
		config_free(L.c);
		return L.oom ? error_set(err, IG_EFAIL, "config '%s': out of memory", source)
		             : error_set(err, IG_EINVALID, "config '%s': %zu error%s", source,
		                         errors, errors == 1 ? "" : "s");
	}
	*out = L.c;
	return 0;
}

int config_load_with(struct config **out, const char *path, const struct config_load_options *o,
                     struct config_diags *diags, struct error *err)
{
	struct loader L = {0};
	size_t errors_before = diags->errors, errors;
	int rc;

	*out = NULL;
	L.errors_before = errors_before;
	if (o)
		L.opts = *o;
	if (!(L.c = calloc(1, sizeof(*L.c))))
		return error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	L.diags = diags;
	if ((rc = config_files_list(&L.c->files, path, err)) < 0)
		goto done;
	config_patches_skip(&L, &L.c->files);
	for (size_t i = 0; i < L.c->files.len; i++)
		config_kinds_read_file(&L, L.c->files.items[i]);
	resolve(&L);
	if (!objects_found(L.c) && !L.unselected && diags->errors == errors_before)
		config_diag_error(&L, path, 0,
		                  "no ImageRepository, ImagePolicy, GitRepository or "
		                  "ImageUpdateAutomation found");
	errors = diags->errors - errors_before;
	if (L.oom)
		rc = error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	else if (errors && (!L.opts.keep_valid || !objects_found(L.c)))
		rc = error_set(err, IG_EINVALID, "config '%s': %zu error%s", path, errors,
		               errors == 1 ? "" : "s");
done:
	if (rc < 0) {
		config_free(L.c);
		return rc;
	}
	*out = L.c;
	return 0;
}

int config_load(struct config **out, const char *path, struct config_diags *diags,
                struct error *err)
{
	return config_load_with(out, path, NULL, diags, err);
}

/* ---- small public helpers ---- */

int config_secret_path(char **out, const char *secrets_dir, const char *name, struct error *err)
{
	struct buf b = BUF_INIT;

	*out = NULL;
	if (!kubename_is_dns_name(name, 253, true))
		return error_set(err, IG_EINVALID, "secret '%s': not a valid Kubernetes name",
		                 name);
	if (!secrets_dir) /* never the current directory */
		return error_set(err, IG_EINVALID, "secret '%s' needs --secrets-dir", name);
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

int config_automation_path_error(struct error *err, const struct config_automation *a)
{
	return error_set(err, IG_ENOTFOUND,
	                 "%s:%zu: ImageUpdateAutomation '%s': 'spec.update.path': '%s' does not "
	                 "exist on branch '%s'",
	                 a->origin.file, a->update_path_line, a->id, a->update_path,
	                 a->checkout_branch);
}
