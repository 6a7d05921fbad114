/* reconcile: the order of one pass, over Debian's docker-registry behind the fault proxy (its
 * request log shows what was asked) and a bare Git remote: only the repositories some marker
 * needs are listed, each once; a manifest HEAD is made once per tag however often the marker
 * is decided; the report lists markers in scan order per automation, then the policies no
 * marker names; a failed automation turns only the unmarked policies into error/git; plan
 * decides the same and writes nothing. */
#include <check.h>
#include <git2.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/pass/reconcile.h"
#include "imageguard/report/report.h"
#include "imageguard/config/config.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "support/fixture.h"

static struct fixture reg, fault;
static char dir[64];
static int started;

static int sh(const char *cmd)
{
	char line[2048];

	snprintf(line, sizeof(line), "cd '%s' && (%s) >/dev/null 2>&1", dir, cmd);
	return system(line);
}

static void start_peers(void)
{
	char d[128], upstream[160];

	snprintf(dir, sizeof(dir), "/tmp/imageguard-test-reconcile.XXXXXX");
	started = mkdtemp(dir) && fixture_registry_start(&reg, NULL) == 0;
	snprintf(upstream, sizeof(upstream), "http://%s", reg.host);
	started = started && fixture_fault_start(&fault, upstream) == 0 &&
	          fixture_registry_push(&reg, "team/a", "1.0.0", 0, d, sizeof(d)) == 0 &&
	          fixture_registry_push(&reg, "team/a", "1.1.0", 0, d, sizeof(d)) == 0 &&
	          fixture_registry_push(&reg, "team/b", "2.0.0", 0, d, sizeof(d)) == 0 &&
	          fixture_registry_push(&reg, "team/unused", "1.0.0", 0, d, sizeof(d)) == 0;
}

static void stop_peers(void)
{
	char cmd[128];

	fixture_fault_stop(&fault);
	fixture_registry_stop(&reg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* A fresh bare remote with apps/a.yaml (policy a, whole image, behind) and b.yaml (policy b,
 * a :tag marker, up to date); a fresh state dir; the config; an empty request log. */
static void setup(void)
{
	char cmd[2048], path[128];
	FILE *f;

	ck_assert_msg(started, "peers did not start");
	ck_assert_int_eq(sh("rm -rf remote.git work state && git init -q --bare -b main remote.git "
	                    "&& git clone -q remote.git work && mkdir -p work/apps"),
	                 0);
	snprintf(path, sizeof(path), "%s/work/apps/a.yaml", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "image: %s/team/a:1.0.0 # {\"$imagepolicy\": \"ns:a\"}\n", fault.host);
	fclose(f);
	snprintf(path, sizeof(path), "%s/work/b.yaml", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "tag: 2.0.0 # {\"$imagepolicy\": \"ns:b:tag\"}\n");
	fclose(f);
	ck_assert_int_eq(sh("cd work && git add -A && git -c user.name=t -c user.email=t@t "
	                    "commit -qm seed && git push -q origin main"),
	                 0);
	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = {"a", "b", "unused"};
		fprintf(
		    f,
		    "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n"
		    "metadata: {name: %s, namespace: ns}\nspec: {image: %s/team/%s, insecure: "
		    "true}\n---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n"
		    "metadata: {name: %s, namespace: ns}\nspec:\n  imageRepositoryRef: {name: %s}\n"
		    "  policy: {semver: {range: '>=1.0.0'}}\n",
		    names[i], fault.host, names[i], names[i], names[i]);
	}
	fprintf(f,
	        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
	        "metadata: {name: fleet, namespace: ns}\nspec: {url: 'file://%s/remote.git', "
	        "ref: {branch: main}}\n---\napiVersion: image.toolkit.fluxcd.io/v1beta2\n"
	        "kind: ImageUpdateAutomation\nmetadata: {name: fleet, namespace: ns}\nspec:\n"
	        "  sourceRef: {kind: GitRepository, name: fleet}\n  git: {commit: {author: "
	        "{name: t, email: t@t}}}\n",
	        dir);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "curl -s -o /dev/null -X DELETE http://%s/_fault/requests",
	         fault.host);
	ck_assert_int_eq(system(cmd), 0);
}

/* Requests the fault proxy saw whose path starts with prefix. */
static int requests(const char *method, const char *prefix)
{
	struct buf body = BUF_INIT;
	char url[256];
	json_t *log, *e;
	size_t i;
	int n = 0;

	snprintf(url, sizeof(url), "http://%s/_fault/requests", fault.host);
	ck_assert_int_eq(fixture_http_get(&body, url), 200);
	ck_assert_ptr_nonnull(log = json_loads(body.data, 0, NULL));
	json_array_foreach(log, i, e)
	{
		const char *p = json_string_value(json_object_get(e, "path"));
		const char *m = json_string_value(json_object_get(e, "method"));
		if (p && m && !strcmp(m, method) && !strncmp(p, prefix, strlen(prefix)))
			n++;
	}
	json_decref(log);
	buf_release(&body);
	return n;
}

static struct config *load(const char *extra)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct error err = ERROR_INIT;
	struct config *c = NULL;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	if (extra) {
		ck_assert_ptr_nonnull(f = fopen(path, "a"));
		fputs(extra, f);
		fclose(f);
	}
	ck_assert_msg(config_load(&c, path, &diags, &err) == 0, "%s", err.msg);
	config_diags_release(&diags);
	return c;
}

static void run(struct report *r, const struct config *c, bool dry_run)
{
	struct reconcile_options o = {0};
	struct error err = ERROR_INIT;
	char state[128];

	snprintf(state, sizeof(state), "%s/state", dir);
	o.config = c;
	o.state_dir = state;
	o.concurrency = 2;
	o.dry_run = dry_run;
	ck_assert_msg(reconcile_pass(r, &o, &err) == 0, "%s", err.msg);
}

static void want(const struct report *r, size_t i, const char *policy, const char *file,
                 const char *decision, const char *reason)
{
	const struct report_item *it = &r->items[i];

	ck_assert_uint_lt(i, r->len);
	ck_assert_str_eq(it->policy, policy);
	ck_assert_pstr_eq(it->file, file);
	ck_assert_msg(!strcmp(guard_decision_name(it->decision), decision) &&
	                  !strcmp(guard_reason_name(it->reason), reason),
	              "item %zu (%s): %s/%s (%s)", i, policy, guard_decision_name(it->decision),
	              guard_reason_name(it->reason), it->message ? it->message : "");
}

static char *remote_file(const char *name)
{
	struct buf out = BUF_INIT;
	char spec[64], gitdir[128];
	const char *argv[] = {"/usr/bin/git", "--git-dir", gitdir, "show", spec, NULL};

	snprintf(gitdir, sizeof(gitdir), "%s/remote.git", dir);
	snprintf(spec, sizeof(spec), "main:%s", name);
	ck_assert_int_eq(fixture_run(&out, argv), 0);
	return buf_detach(&out);
}

/* Appends to y a GitRepository 'name' of url (none when url is NULL: the automation uses the
 * fixture's 'fleet') and an ImageUpdateAutomation 'name' on it, under path when given. */
static void add_automation(struct buf *y, const char *name, const char *url, const char *path)
{
	if (url)
		ck_assert_int_ge(
		    buf_printf(y,
		               "---\napiVersion: source.toolkit.fluxcd.io/v1\n"
		               "kind: GitRepository\nmetadata: {name: %s, namespace: ns}\n"
		               "spec: {url: '%s', ref: {branch: main}}\n",
		               name, url),
		    0);
	ck_assert_int_ge(buf_printf(y,
	                            "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\n"
	                            "kind: ImageUpdateAutomation\n"
	                            "metadata: {name: %s, namespace: ns}\n"
	                            "spec:\n  sourceRef: {kind: GitRepository, name: %s}\n",
	                            name, url ? name : "fleet"),
	                 0);
	if (path)
		ck_assert_int_ge(buf_printf(y, "  update: {path: %s}\n", path), 0);
}

START_TEST(pass_order)
{
	struct config *c = load(NULL);
	struct report r = REPORT_INIT;
	char *a;

	run(&r, c, false);
	ck_assert_uint_eq(r.len, 3);
	want(&r, 0, "ns/a", "apps/a.yaml", "update", "forward");
	want(&r, 1, "ns/b", "b.yaml", "none", "up-to-date");
	want(&r, 2, "ns/unused", NULL, "none", "no-markers");
	ck_assert_ptr_nonnull(r.items[0].commit);
	ck_assert_uint_eq(r.commits, 1);
	ck_assert_uint_eq(r.errors, 0);
	/* listed once each, and only what a marker needs */
	ck_assert_int_eq(requests("GET", "/v2/team/a/tags/list"), 1);
	ck_assert_int_eq(requests("GET", "/v2/team/b/tags/list"), 1);
	ck_assert_int_eq(requests("GET", "/v2/team/unused/"), 0);
	/* decided twice (before the commit and in its edit), HEADed once */
	ck_assert_int_eq(requests("HEAD", "/v2/team/a/manifests/1.1.0"), 1);
	ck_assert_int_eq(requests("HEAD", "/v2/team/b/manifests/"), 0);
	a = remote_file("apps/a.yaml");
	ck_assert_ptr_nonnull(strstr(a, "/team/a:1.1.0 #"));
	free(a);
	report_release(&r);
	config_free(c);
}
END_TEST

START_TEST(plan_writes_nothing)
{
	struct config *c = load(NULL);
	struct report r = REPORT_INIT;
	char *a;

	run(&r, c, true);
	ck_assert_uint_eq(r.len, 3);
	want(&r, 0, "ns/a", "apps/a.yaml", "update", "forward");
	ck_assert_ptr_null(r.items[0].commit);
	ck_assert_uint_eq(r.commits, 0);
	a = remote_file("apps/a.yaml");
	ck_assert_ptr_nonnull(strstr(a, "/team/a:1.0.0 #"));
	free(a);
	report_release(&r);
	config_free(c);
}
END_TEST

/* An automation whose remote cannot be read: the healthy one still commits, the policies no
 * readable marker names are error/git (their markers may be in the unreadable one). */
START_TEST(failed_automation)
{
	struct buf y = BUF_INIT;
	struct config *c;
	struct report r = REPORT_INIT;

	add_automation(&y, "gone", "file:///nonexistent/remote.git", NULL);
	c = load(y.data);
	run(&r, c, false);
	ck_assert_uint_eq(r.len, 3);
	want(&r, 0, "ns/a", "apps/a.yaml", "update", "forward");
	want(&r, 1, "ns/b", "b.yaml", "none", "up-to-date");
	want(&r, 2, "ns/unused", NULL, "error", "git");
	ck_assert_ptr_nonnull(strstr(r.items[2].message, "automation 'ns/gone'"));
	ck_assert_uint_eq(r.commits, 1);
	ck_assert_uint_eq(r.errors, 1);
	report_release(&r);
	config_free(c);
	buf_release(&y);
}
END_TEST

/* Two automations on one GitRepository (Flux's flux-system habit): the cache they share is
 * locked while open, so the first closes it after reading its markers and reopens it to
 * commit; the pass ends, and the marker moves once. */
START_TEST(shared_source)
{
	struct buf y = BUF_INIT;
	struct config *c;
	struct report r = REPORT_INIT;
	char *a;

	add_automation(&y, "apps", NULL, "./apps");
	c = load(y.data);
	ck_assert_uint_eq(c->automations_len, 2);
	run(&r, c, false);
	ck_assert_uint_eq(r.len, 4); /* a.yaml under both automations, b.yaml, unused */
	/* whichever automation had its listings first moved a.yaml; the other found it done */
	{
		size_t moved = 0, current = 0;

		for (size_t i = 0; i < r.len; i++)
			if (r.items[i].file && !strcmp(r.items[i].file, "apps/a.yaml")) {
				moved += r.items[i].decision == GUARD_UPDATE && r.items[i].commit;
				current += r.items[i].decision == GUARD_NONE;
			}
		ck_assert_uint_eq(moved, 1);
		ck_assert_uint_eq(current, 1);
	}
	ck_assert_uint_eq(r.commits, 1);
	ck_assert_uint_eq(r.errors, 0);
	a = remote_file("apps/a.yaml");
	ck_assert_ptr_nonnull(strstr(a, "/team/a:1.1.0 #"));
	free(a);
	report_release(&r);
	config_free(c);
	buf_release(&y);
}
END_TEST

/* Phase one opens the automations with caches of their own side by side and those sharing one
 * in turn: two unreadable remotes (opened on threads) beside two automations of one
 * GitRepository; both failures are reported, the shared cache still moves its marker once. */
START_TEST(opened_side_by_side)
{
	struct buf y = BUF_INIT;
	struct config *c;
	struct report r = REPORT_INIT;
	size_t moved = 0, failures = 0;
	char *a;

	add_automation(&y, "gone1", "file:///nonexistent/remote1.git", NULL);
	add_automation(&y, "apps", NULL, "./apps");
	add_automation(&y, "gone2", "file:///nonexistent/remote2.git", NULL);
	c = load(y.data);
	ck_assert_uint_eq(c->automations_len, 4);
	run(&r, c, false);
	for (size_t i = 0; i < r.len; i++)
		if (r.items[i].file && !strcmp(r.items[i].file, "apps/a.yaml"))
			moved += r.items[i].decision == GUARD_UPDATE && r.items[i].commit != NULL;
	for (size_t i = 0; i < r.failures_len; i++)
		failures += strstr(r.failures[i].automation, "ns/gone") != NULL;
	ck_assert_uint_eq(moved, 1);
	ck_assert_uint_eq(failures, 2);
	ck_assert_uint_eq(r.commits, 1);
	a = remote_file("apps/a.yaml");
	ck_assert_ptr_nonnull(strstr(a, "/team/a:1.1.0 #"));
	free(a);
	report_release(&r);
	config_free(c);
	buf_release(&y);
}
END_TEST

/* A second GitRepository naming the same remote with user info is the same Git cache (its key
 * is the URL without it): opened in turn, never while the other holds the cache's lock (which
 * would wait for ever). The pass ends and the marker moves once. */
START_TEST(user_info_is_the_same_cache)
{
	struct buf y = BUF_INIT, url = BUF_INIT;
	struct config *c;
	struct report r = REPORT_INIT;
	char *a;

	ck_assert_int_ge(buf_printf(&url, "file://someone@%s/remote.git", dir), 0);
	add_automation(&y, "twin", url.data, "./apps");
	c = load(y.data);
	ck_assert_uint_eq(c->automations_len, 2);
	run(&r, c, false);
	ck_assert_uint_eq(r.commits, 1);
	a = remote_file("apps/a.yaml");
	ck_assert_ptr_nonnull(strstr(a, "/team/a:1.1.0 #"));
	free(a);
	report_release(&r);
	config_free(c);
	buf_release(&y);
	buf_release(&url);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reconcile");
	TCase *tc = tcase_create("pass");
	SRunner *sr;
	int failed;

	git_libgit2_init();
	tcase_add_unchecked_fixture(tc, start_peers, stop_peers);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, pass_order);
	tcase_add_test(tc, plan_writes_nothing);
	tcase_add_test(tc, failed_automation);
	tcase_add_test(tc, shared_source);
	tcase_add_test(tc, opened_side_by_side);
	tcase_add_test(tc, user_info_is_the_same_cache);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	git_libgit2_shutdown();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
