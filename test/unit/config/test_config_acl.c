/* Flux's cross-namespace reference checks (test/data/flux/acl.txt, transcribed from fluxcd/pkg
 * runtime/acl, image-reflector-controller and image-automation-controller tests at the commits it
 * names): every case is loaded as the documents it describes (a Namespace with its labels, the
 * referenced and the referring object, --no-cross-namespace-refs or not) and the loader's verdict
 * must be Flux's: the reference used, refused with reason AccessDenied and Flux's message naming
 * both objects, missing, or (a policy marker of another namespace) never selected. A case
 * imageguard answers differently on purpose carries `exception` and an `ours` line. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/config/config.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define CASES_MAX 128
#define FIELD 512

/* One case of the data file (fields as written, "" when absent). */
struct acase {
	int line;
	char source[FIELD];
	char name[FIELD];
	char from[FIELD], nslabels[FIELD], ref[FIELD], to[FIELD], accessfrom[FIELD];
	char selectors[8][FIELD];
	size_t nselectors;
	bool has_nslabels, flag;
	char expect[FIELD], reason[FIELD], message[FIELD], exception[FIELD];
};

static struct acase cases[CASES_MAX];
static size_t ncases;

#define need(cond, ...)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "test/data/flux/acl.txt: " __VA_ARGS__);                   \
			fputc('\n', stderr);                                                       \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

static void set(char *dst, const char *s)
{
	need(strlen(s) < FIELD, "field too long: %s", s);
	snprintf(dst, FIELD, "%s", s);
}

/* One "key rest" line into case c. */
static void field(struct acase *c, const char *key, const char *rest, int line)
{
	if (!strcmp(key, "from"))
		set(c->from, rest);
	else if (!strcmp(key, "nslabels"))
		set(c->nslabels, rest), c->has_nslabels = true;
	else if (!strcmp(key, "ref"))
		set(c->ref, rest);
	else if (!strcmp(key, "to"))
		set(c->to, rest);
	else if (!strcmp(key, "accessfrom"))
		set(c->accessfrom, rest);
	else if (!strcmp(key, "selector")) {
		need(c->nselectors < 8, "line %d: too many selectors", line);
		set(c->selectors[c->nselectors++], rest);
	} else if (!strcmp(key, "flags"))
		c->flag = !strcmp(rest, "no-cross-namespace-refs");
	else if (!strcmp(key, "expect"))
		set(c->expect, rest);
	else if (!strcmp(key, "reason"))
		set(c->reason, rest);
	else if (!strcmp(key, "message"))
		set(c->message, rest);
	else if (!strcmp(key, "exception"))
		set(c->exception, rest);
	else if (!strcmp(key, "origin"))
		; /* flux or derived: named in failures through the source */
	else
		need(0, "line %d: unknown record '%s'", line, key);
}

static void load_cases(void)
{
	const char *src = getenv("IMAGEGUARD_SRC");
	char path[1024], text[2048], source[FIELD] = "";
	FILE *f;
	int line = 0;

	snprintf(path, sizeof(path), "%s/test/data/flux/acl.txt", src ? src : ".");
	need((f = fopen(path, "r")) != NULL, "cannot read %s", path);
	while (fgets(text, sizeof(text), f)) {
		char *nl = strchr(text, '\n'), *sp, *rest;
		struct acase *c = ncases ? &cases[ncases - 1] : NULL;

		line++;
		if (nl)
			*nl = '\0';
		if (!text[0] || text[0] == '#')
			continue;
		sp = strchr(text, ' ');
		rest = sp ? sp + 1 : text + strlen(text);
		if (sp)
			*sp = '\0';
		if (!strcmp(text, "source")) {
			set(source, rest);
		} else if (!strcmp(text, "case")) {
			need(ncases < CASES_MAX, "too many cases");
			c = &cases[ncases++];
			memset(c, 0, sizeof(*c));
			c->line = line;
			set(c->name, rest);
			set(c->source, source);
		} else if (!strcmp(text, "ours")) {
			/* replaces the line it names: "ours expect allowed" */
			char key[64];
			const char *r2 = strchr(rest, ' ');

			need(c && c->exception[0] && r2, "line %d: ours without exception", line);
			snprintf(key, sizeof(key), "%.*s", (int)(r2 - rest), rest);
			if (!strcmp(key, "expect"))
				c->reason[0] = c->message[0] = '\0';
			field(c, key, r2 + 1, line);
		} else {
			need(c, "line %d: '%s' before any case", line, text);
			field(c, text, rest, line);
		}
	}
	fclose(f);
	need(ncases >= 41, "%zu cases read, 41 expected", ncases);
}

/* "KIND NAME NS [missing]" */
struct obj {
	char kind[64], name[128], ns[64];
	bool missing;
};

/* The next space-separated word of *s into out (n bytes); "" at the end. */
static void word(char *out, size_t n, const char **s)
{
	size_t len;

	*s += strspn(*s, " ");
	len = strcspn(*s, " ");
	need(len < n, "word too long: %s", *s);
	memcpy(out, *s, len);
	out[len] = '\0';
	*s += len;
}

static struct obj parse_obj(const char *s)
{
	struct obj o = {0};
	char missing[16];
	const char *p = s;

	word(o.kind, sizeof(o.kind), &p);
	word(o.name, sizeof(o.name), &p);
	word(o.ns, sizeof(o.ns), &p);
	word(missing, sizeof(missing), &p);
	need(o.kind[0] && o.name[0] && o.ns[0], "object '%s'", s);
	o.missing = !strcmp(missing, "missing");
	return o;
}

/* "K=V K=V" as YAML mapping lines indented by ind. */
static void labels_yaml(struct buf *b, const char *list, const char *ind)
{
	const char *p = list;
	char kv[FIELD], *eq;

	for (word(kv, sizeof(kv), &p); kv[0]; word(kv, sizeof(kv), &p)) {
		need((eq = strchr(kv, '=')), "label '%s'", kv);
		*eq = '\0';
		buf_printf(b, "%s\"%s\": \"%s\"\n", ind, kv, eq + 1);
	}
}

static void namespace_doc(struct buf *b, const struct acase *c, const struct obj *from)
{
	if (!strcmp(c->nslabels, "absent"))
		return;
	buf_printf(b, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", from->ns);
	if (c->nslabels[0]) {
		buf_puts(b, "  labels:\n");
		labels_yaml(b, c->nslabels, "    ");
	}
}

static void access_from(struct buf *b, const struct acase *c)
{
	if (!strcmp(c->accessfrom, "empty")) {
		buf_puts(b, "  accessFrom:\n    namespaceSelectors: []\n");
		return;
	}
	if (strcmp(c->accessfrom, "selectors") != 0)
		return;
	buf_puts(b, "  accessFrom:\n    namespaceSelectors:\n");
	for (size_t i = 0; i < c->nselectors; i++) {
		if (!c->selectors[i][0]) {
			buf_puts(b, "      - matchLabels: {}\n");
			continue;
		}
		buf_puts(b, "      - matchLabels:\n");
		labels_yaml(b, c->selectors[i], "          ");
	}
}

static void repository_doc(struct buf *b, const struct obj *o, const struct acase *c)
{
	buf_printf(b,
	           "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
	           "metadata:\n  name: %s\n  namespace: %s\nspec:\n  image: registry.example/%s\n",
	           o->name, o->ns, o->name);
	if (c)
		access_from(b, c);
}

static void policy_doc(struct buf *b, const char *name, const char *ns, const char *repo,
                       const char *repo_ns)
{
	buf_printf(b,
	           "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
	           "metadata:\n  name: %s\n  namespace: %s\nspec:\n  imageRepositoryRef:\n"
	           "    name: %s\n",
	           name, ns, repo);
	if (repo_ns)
		buf_printf(b, "    namespace: %s\n", repo_ns);
	buf_puts(b, "  policy:\n    semver:\n      range: \">=1.0.0\"\n");
}

static void git_doc(struct buf *b, const char *name, const char *ns)
{
	buf_printf(b,
	           "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
	           "metadata:\n  name: %s\n  namespace: %s\nspec:\n  interval: 1m\n"
	           "  url: https://git.example/%s.git\n  ref:\n    branch: main\n",
	           name, ns, name);
}

static void automation_doc(struct buf *b, const char *name, const char *ns, const char *src,
                           const char *src_ns)
{
	buf_printf(b,
	           "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
	           "metadata:\n  name: %s\n  namespace: %s\nspec:\n  interval: 1m\n"
	           "  sourceRef:\n    kind: GitRepository\n    name: %s\n",
	           name, ns, src);
	if (src_ns)
		buf_printf(b, "    namespace: %s\n", src_ns);
	buf_puts(b, "  update:\n    path: ./\n    strategy: Setters\n");
}

/* The documents of case c: the referring object, what it refers to, the Namespace. */
static void build(struct buf *b, const struct acase *c, struct obj *from, struct obj *to)
{
	const char *ref_ns = strcmp(c->ref, "-") ? c->ref : NULL;

	*from = parse_obj(c->from);
	*to = parse_obj(c->to);
	namespace_doc(b, c, from);
	if (!strcmp(to->kind, "ImageRepository")) {
		need(!strcmp(from->kind, "ImagePolicy"), "case '%s': from", c->name);
		if (!to->missing)
			repository_doc(b, to, c);
		policy_doc(b, from->name, from->ns, to->name, ref_ns);
	} else if (!strcmp(to->kind, "GitRepository")) {
		if (!to->missing)
			git_doc(b, to->name, to->ns);
		automation_doc(b, from->name, from->ns, to->name, ref_ns);
	} else { /* ImagePolicy: a marker of the automation names it; its repository is its own */
		struct obj repo = {"ImageRepository", "app", "", false};

		git_doc(b, "gitops", from->ns);
		automation_doc(b, from->name, from->ns, "gitops", NULL);
		snprintf(repo.ns, sizeof(repo.ns), "%s", to->ns);
		repository_doc(b, &repo, NULL);
		policy_doc(b, to->name, to->ns, "app", NULL);
	}
}

static enum config_kind kind_of(const char *k)
{
	return !strcmp(k, "ImagePolicy") ? CONFIG_KIND_POLICY : CONFIG_KIND_AUTOMATION;
}

/* The referring object was used: valid, resolved to the object the case names. */
static void check_allowed(const struct acase *c, const struct config *cfg, const struct obj *f,
                          const struct obj *t)
{
	const char *where = c->source;

	if (kind_of(f->kind) == CONFIG_KIND_POLICY) {
		const struct config_policy *p = config_find_policy(cfg, f->ns, f->name);

		ck_assert_msg(p, "case '%s' (acl.txt:%d, %s): refused", c->name, c->line, where);
		ck_assert_msg(!strcmp(p->repository->ns, t->ns) &&
		                  !strcmp(p->repository->name, t->name),
		              "case '%s': resolved to %s", c->name, p->repository->id);
	} else {
		const struct config_automation *a = config_find_automation(cfg, f->ns, f->name);

		ck_assert_msg(a, "case '%s' (acl.txt:%d, %s): refused", c->name, c->line, where);
		ck_assert_msg(!strcmp(a->source->ns, t->ns), "case '%s': source %s", c->name,
		              a->source->id);
	}
}

/* Refused or missing: invalid, with Flux's reason and message naming both objects. */
static void check_refused(const struct acase *c, const struct config *cfg, const struct obj *f,
                          const struct obj *t)
{
	const struct config_invalid *v = config_find_invalid(cfg, kind_of(f->kind), f->ns, f->name);
	char to_id[256], from_id[256];

	ck_assert_msg(v, "case '%s' (acl.txt:%d, %s): %s, expected %s", c->name, c->line, c->source,
	              "used", c->expect);
	snprintf(to_id, sizeof(to_id), "%s/%s", t->ns, t->name);
	snprintf(from_id, sizeof(from_id), "%s/%s", f->ns, f->name);
	ck_assert_msg(strstr(v->message, to_id) && strstr(v->message, from_id),
	              "case '%s': the message names both objects: %s", c->name, v->message);
	if (!strcmp(c->expect, "missing")) {
		/* Flux's reason for a policy whose repository is missing (image-reflector-
		 * controller: DependencyNotReady) */
		ck_assert_msg(strstr(v->message, "not found"), "case '%s': %s", c->name,
		              v->message);
		ck_assert_msg(v->reason && !strcmp(v->reason, c->reason), "case '%s': reason %s",
		              c->name, v->reason ? v->reason : "(none)");
		return;
	}
	ck_assert_msg(v->reason && !strcmp(v->reason, c->reason),
	              "case '%s' (acl.txt:%d): reason %s", c->name, c->line,
	              v->reason ? v->reason : "(none)");
	ck_assert_msg(!c->message[0] || strstr(v->message, c->message),
	              "case '%s' (acl.txt:%d, %s): message\n  %s\nwant Flux's\n  %s", c->name,
	              c->line, c->source, v->message, c->message);
}

/* A marker naming a policy of another namespace: the automation never selects it. */
static void check_ignored(const struct acase *c, const struct config *cfg, const struct obj *f,
                          const struct obj *t)
{
	const struct config_automation *a = config_find_automation(cfg, f->ns, f->name);
	const struct config_policy *p = config_find_policy(cfg, t->ns, t->name);

	ck_assert_msg(a && p, "case '%s': both objects valid", c->name);
	ck_assert_msg(!config_automation_selects(a, p), "case '%s' (acl.txt:%d): %s selects %s",
	              c->name, c->line, a->id, p->id);
}

START_TEST(flux_case)
{
	const struct acase *c = &cases[_i];
	struct buf text = BUF_INIT;
	struct config_document doc = {"acl.yaml", NULL, 0};
	struct config_load_options o = {.keep_valid = true};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *cfg = NULL;
	struct error err = ERROR_INIT;
	struct obj f, t;

	build(&text, c, &f, &t);
	doc.data = text.data;
	doc.len = text.len;
	o.no_cross_namespace_refs = c->flag;
	ck_assert_msg(config_load_documents(&cfg, &doc, 1, "acl", &o, &diags, &err) == 0,
	              "case '%s': %s\n%s", c->name, err.msg, text.data);
	if (!strcmp(c->expect, "allowed"))
		check_allowed(c, cfg, &f, &t);
	else if (!strcmp(c->expect, "ignored"))
		check_ignored(c, cfg, &f, &t);
	else
		check_refused(c, cfg, &f, &t);
	config_free(cfg);
	config_diags_release(&diags);
	buf_release(&text);
}
END_TEST

/* What the API returns of a Namespace: kubernetes.io/metadata.name is its name, whatever a
 * document says; one without a document has that label alone. */
START_TEST(namespace_labels)
{
	static const char docs[] =
	    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels:\n"
	    "    tenant: a\n    kubernetes.io/metadata.name: team-b\n"
	    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
	    "metadata:\n  name: base\n  namespace: shared\nspec:\n  image: r.example/base\n"
	    "  accessFrom:\n    namespaceSelectors:\n"
	    "      - matchLabels:\n          kubernetes.io/metadata.name: team-b\n";
	struct config_document doc = {"ns.yaml", docs, sizeof(docs) - 1};
	struct config_load_options o = {.keep_valid = true};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *cfg = NULL;
	struct error err = ERROR_INIT;
	char why[400];

	ck_assert_int_eq(config_load_documents(&cfg, &doc, 1, "ns", &o, &diags, &err), 0);
	ck_assert_uint_eq(cfg->namespaces_len, 1);
	/* team-a's document cannot pass for team-b */
	ck_assert(!config_policy_access(why, sizeof(why), cfg, "team-a", &cfg->repositories[0]));
	ck_assert_msg(strstr(why, "ACL labels mismatch on namespace 'team-a'"), "%s", why);
	/* team-b has no document: the label the API server sets is its name */
	ck_assert(config_policy_access(why, sizeof(why), cfg, "team-b", &cfg->repositories[0]));
	ck_assert(!config_policy_access(why, sizeof(why), cfg, "team-c", &cfg->repositories[0]));
	ck_assert(config_policy_access(why, sizeof(why), cfg, "shared", &cfg->repositories[0]));
	config_free(cfg);
	config_diags_release(&diags);
}
END_TEST

/* Names a reference gives are Kubernetes names before they are looked up (in run --kube they
 * become API paths and message text). */
START_TEST(reference_names_are_checked)
{
	static const char *const bad[][2] = {{"..", NULL},  {"a/b", NULL},  {"ok", ".."},
	                                     {"ok", "a.b"}, {"ok", "Team"}, {"A", NULL}};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf text = BUF_INIT;
		struct config_document doc = {"ref.yaml", NULL, 0};
		struct config_load_options o = {.keep_valid = true};
		struct config_diags diags = CONFIG_DIAGS_INIT;
		struct config *cfg = NULL;
		struct error err = ERROR_INIT;
		const struct config_invalid *v;

		repository_doc(&text, &(struct obj){"ImageRepository", "ok", "default", false},
		               NULL);
		policy_doc(&text, "app", "default", bad[i][0], bad[i][1]);
		doc.data = text.data;
		doc.len = text.len;
		ck_assert_int_eq(config_load_documents(&cfg, &doc, 1, "ref", &o, &diags, &err), 0);
		v = config_find_invalid(cfg, CONFIG_KIND_POLICY, "default", "app");
		ck_assert_msg(v && strstr(v->message, bad[i][1] ? "imageRepositoryRef.namespace'"
		                                                : "imageRepositoryRef.name'"),
		              "%zu: %s", i, v ? v->message : "accepted");
		config_free(cfg);
		config_diags_release(&diags);
		buf_release(&text);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("config_acl");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	load_cases();
	tcase_add_loop_test(tc, flux_case, 0, (int)ncases);
	tcase_add_test(tc, namespace_labels);
	tcase_add_test(tc, reference_names_are_checked);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
