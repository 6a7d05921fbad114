/* runverify (run --verify-interval): one verification between passes against the API fixture
 * kubeapi.py (Deployment prod/web, pods web-0 and web-1 running r/web@sha256:0...00 and
 * 0...01) and a bare Git remote whose marker pins a digest: the drift gauge, one audit drift
 * record per drifting container (audit_write_drift), the report handed over, the last
 * success; failures (refused token, kubeconfig gone, Git unreachable) logged and counted in
 * imageguard_verify_errors_total without stopping anything; nothing at all while not
 * leading. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/config/config.h"
#include "imageguard/controller/leader.h"
#include "imageguard/controller/runverify.h"
#include "imageguard/inspect/verify.h"
#include "imageguard/registry/registry.h"
#include "imageguard/report/audit.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/metrics.h"
#include "support/fixture.h"
#include "support/gitrepo.h"

#define D0 "sha256:0000000000000000000000000000000000000000000000000000000000000000"
#define D1 "sha256:0000000000000000000000000000000000000000000000000000000000000001"
#define D7 "sha256:0000000000000000000000000000000000000000000000000000000000000007"
#define TOKEN "imageguard-test-token"

static struct fixture api;

static void api_start(void)
{
	static const char *const extra[] = {"--pods", "2", NULL};

	ck_assert_msg(fixture_kubeapi_start(&api, "kubeapi.py", extra) == 0,
	              "kubeapi.py did not start");
}

static void api_stop(void)
{
	fixture_kubeapi_stop(&api);
}

/* ---- one test's world: a Git remote, a configuration, a kubeconfig, the metrics ---- */

struct world {
	struct gitrepo git;
	char kubeconfig[300], audit_path[300];
	struct config *cfg;
	struct metrics *m;
	struct registry_client *registry;
	struct audit *audit;
	struct runverify *v;
	/* what on_report saw */
	unsigned reports;
	size_t counts[4];
};

static void on_report(void *arg, const struct config *cfg, const struct verify_report *r)
{
	struct world *w = arg;

	ck_assert_ptr_eq(cfg, w->cfg);
	w->reports++;
	memcpy(w->counts, r->counts, sizeof(w->counts));
}

static void write_kubeconfig(struct world *w, const char *token)
{
	FILE *f = fopen(w->kubeconfig, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f,
	        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n"
	        "  cluster:\n    server: https://%s\n    certificate-authority: %s/ca.crt\n"
	        "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
	        "users:\n- name: u\n  user: {token: %s}\n",
	        api.host, api.dir, token);
	fclose(f);
}

/* The world with Git pinning workload's image at digest; url NULL: the remote's. */
static void world_open(struct world *w, const char *workload, const char *digest, const char *url)
{
	char manifest[1024], yaml[2048];
	const char *seed[] = {"deploy/web.yaml", manifest, NULL};
	struct config_document doc = {"objects.yaml", yaml, 0};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct registry_options ro;
	struct error err = ERROR_INIT;

	memset(w, 0, sizeof(*w));
	snprintf(manifest, sizeof(manifest),
	         "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n"
	         "  namespace: prod\nspec:\n  selector:\n    matchLabels:\n      app: web\n"
	         "  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n"
	         "      containers:\n        - name: web\n"
	         "          image: r/web:v1@%s # {\"$imagepolicy\": \"default:web\"}\n",
	         workload, digest);
	ck_assert_int_eq(gitrepo_init(&w->git, "imageguard-runverify", seed), 0);
	snprintf(yaml, sizeof(yaml),
	         "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n"
	         "metadata: {name: web, namespace: default}\nspec: {image: r/web}\n---\n"
	         "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n"
	         "metadata: {name: web, namespace: default}\n"
	         "spec: {imageRepositoryRef: {name: web}, policy: {semver: {range: '>=1.0.0'}}}\n"
	         "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
	         "metadata: {name: gitops, namespace: default}\n"
	         "spec: {interval: 1m, url: '%s', ref: {branch: main}}\n---\n"
	         "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
	         "metadata: {name: auto, namespace: default}\n"
	         "spec:\n  interval: 1m\n  sourceRef: {kind: GitRepository, name: gitops}\n"
	         "  git:\n    checkout: {ref: {branch: main}}\n"
	         "    commit: {author: {name: a, email: a@example.org}}\n"
	         "    push: {branch: main}\n  update: {path: ./, strategy: Setters}\n",
	         url ? url : w->git.url);
	doc.len = strlen(yaml);
	ck_assert_msg(config_load_documents(&w->cfg, &doc, 1, "test", NULL, &diags, &err) == 0,
	              "%s", err.msg);
	ck_assert_uint_eq(diags.errors, 0);
	config_diags_release(&diags);
	snprintf(w->kubeconfig, sizeof(w->kubeconfig), "%s/kubeconfig", w->git.dir);
	write_kubeconfig(w, TOKEN);
	snprintf(w->audit_path, sizeof(w->audit_path), "%s/audit.jsonl", w->git.dir);
	ck_assert_int_eq(audit_open(&w->audit, w->audit_path, false, &err), 0);
	ck_assert_int_eq(metrics_new(&w->m), 0);
	registry_options_init(&ro);
	ck_assert_int_eq(registry_client_new(&w->registry, &ro, &err), 0);
}

static void world_verifier(struct world *w, struct leader *leader)
{
	struct runverify_options o = {0};
	struct error err = ERROR_INIT;

	o.kubeconfig = w->kubeconfig;
	o.state_dir = w->git.state;
	o.metrics = w->m;
	o.registry = w->registry;
	o.audit = w->audit;
	o.on_report = on_report;
	o.on_report_arg = w;
	o.leader = leader;
	ck_assert_msg(runverify_new(&w->v, &o, &err) == 0, "%s", err.msg);
}

static void world_close(struct world *w)
{
	runverify_free(w->v);
	registry_client_free(w->registry);
	audit_close(w->audit);
	metrics_free(w->m);
	config_free(w->cfg);
	gitrepo_done(&w->git);
}

static char *render(struct metrics *m)
{
	struct buf out = BUF_INIT;

	ck_assert_int_eq(metrics_render(&out, m), 0);
	return buf_detach(&out);
}

/* The audit log's lines as JSON objects (a new array). */
static json_t *audit_lines(const struct world *w)
{
	struct buf b = BUF_INIT;
	json_t *all = json_array();
	const char *p;

	if (buf_read_file(&b, w->audit_path) == 0 && b.data)
		for (p = b.data; *p;) {
			size_t n = strcspn(p, "\n");
			json_t *j = json_loadb(p, n, 0, NULL);

			ck_assert_msg(j != NULL, "not JSON: %.*s", (int)n, p);
			json_array_append_new(all, j);
			p += n + (p[n] == '\n');
		}
	buf_release(&b);
	return all;
}

static const char *field(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "(null)";
}

/* ---- one verification, by what Git pins ---- */

static const struct {
	const char *workload, *digest;
	size_t ok, drift, not_running;
	const char *gauge;      /* imageguard_running_drift's series after it */
	const char *drift_pods; /* the pods of the audit records, in order, ',' after each */
} verify_cases[] = {
    {"web", D0, 1, 1, 0, "{policy=\"default/web\",workload=\"prod/Deployment/web\"} 1\n", "web-1,"},
    {"web", D7, 0, 2, 0, "{policy=\"default/web\",workload=\"prod/Deployment/web\"} 1\n",
     "web-0,web-1,"},
    /* a workload the cluster does not have: not running, no drift */
    {"api", D0, 0, 0, 1, "{policy=\"default/web\",workload=\"prod/Deployment/api\"} 0\n", ""},
};

START_TEST(verification)
{
	struct world w;
	time_t before = time(NULL);
	json_t *lines, *rec;
	char *text, series[256];
	const char *pods = verify_cases[_i].drift_pods;
	double last;
	size_t i, n = 0;

	world_open(&w, verify_cases[_i].workload, verify_cases[_i].digest, NULL);
	world_verifier(&w, NULL);
	/* declared at the start, the error counter at 0 so that rate() sees its first step */
	text = render(w.m);
	ck_assert_ptr_nonnull(strstr(text, "\nimageguard_verify_errors_total 0\n"));
	ck_assert_ptr_null(strstr(text, "\nimageguard_running_drift{"));
	free(text);

	ck_assert_int_eq(runverify_once(w.v, w.cfg), 0);
	ck_assert_uint_eq(w.reports, 1);
	ck_assert_uint_eq(w.counts[VERIFY_OK], verify_cases[_i].ok);
	ck_assert_uint_eq(w.counts[VERIFY_DRIFT], verify_cases[_i].drift);
	ck_assert_uint_eq(w.counts[VERIFY_NOT_RUNNING], verify_cases[_i].not_running);
	ck_assert_uint_eq(w.counts[VERIFY_UNKNOWN], 0);
	text = render(w.m);
	snprintf(series, sizeof(series), "\nimageguard_running_drift%s", verify_cases[_i].gauge);
	ck_assert_msg(strstr(text, series) != NULL, "no %s in\n%s", series + 1, text);
	ck_assert_ptr_nonnull(strstr(text, "\nimageguard_verify_errors_total 0\n"));
	free(text);
	last = metrics_get(w.m, RUNVERIFY_METRIC_LAST_SUCCESS, NULL);
	ck_assert_msg(last >= (double)before && last <= (double)time(NULL), "%f", last);

	/* one drift record per drifting container, and nothing else */
	lines = audit_lines(&w);
	json_array_foreach(lines, i, rec)
	{
		char pod[32];
		size_t k = strcspn(pods, ",");

		ck_assert_msg(k > 0, "an extra record: %s", field(rec, "pod"));
		snprintf(pod, sizeof(pod), "%.*s", (int)k, pods);
		pods += k + 1;
		ck_assert_str_eq(field(rec, "event"), "drift");
		ck_assert_str_eq(field(rec, "status"), "drift");
		ck_assert_str_eq(field(rec, "pod"), pod);
		ck_assert_str_eq(field(rec, "policy"), "default/web");
		ck_assert_str_eq(field(rec, "workload"), "prod/Deployment/web");
		ck_assert_str_eq(field(rec, "container"), "web");
		ck_assert_str_eq(field(rec, "file"), "deploy/web.yaml");
		ck_assert_str_eq(field(rec, "expected_digest"), verify_cases[_i].digest);
		ck_assert_str_eq(field(rec, "running_digest"), strcmp(pod, "web-0") ? D1 : D0);
		ck_assert_ptr_null(json_object_get(rec, "decision"));
		n++;
	}
	ck_assert_uint_eq(n, verify_cases[_i].drift);
	ck_assert_str_eq(pods, "");
	json_decref(lines);
	world_close(&w);
}
END_TEST

/* ---- failures: logged and counted, never returned to stop the loop ---- */

enum breakage { WRONG_TOKEN, KUBECONFIG_GONE, GIT_GONE };

static const struct {
	enum breakage how;
	unsigned reports; /* handed over all the same when the verification ran */
} failure_cases[] = {
    {WRONG_TOKEN, 1},
    {KUBECONFIG_GONE, 0}, /* not run: nothing to hand over */
    {GIT_GONE, 1},
};

START_TEST(failures_are_counted)
{
	struct world w;
	char *text;

	world_open(&w, "web", D0,
	           failure_cases[_i].how == GIT_GONE ? "file:///nonexistent/remote.git" : NULL);
	world_verifier(&w, NULL);
	if (failure_cases[_i].how == WRONG_TOKEN)
		write_kubeconfig(&w, "not-the-token"); /* read again at each verification */
	if (failure_cases[_i].how == KUBECONFIG_GONE)
		ck_assert_int_eq(unlink(w.kubeconfig), 0);

	ck_assert_int_eq(runverify_once(w.v, w.cfg), 1);
	ck_assert_int_eq(runverify_once(w.v, w.cfg), 1);
	ck_assert_uint_eq(w.reports, 2 * failure_cases[_i].reports);
	text = render(w.m);
	ck_assert_msg(strstr(text, "\nimageguard_verify_errors_total 2\n") != NULL, "%s", text);
	/* nothing could be checked: no drift series, no last success */
	ck_assert_ptr_null(strstr(text, "\nimageguard_running_drift{"));
	ck_assert_ptr_null(strstr(text, "\n" RUNVERIFY_METRIC_LAST_SUCCESS " "));
	free(text);
	{
		json_t *lines = audit_lines(&w);

		ck_assert_uint_eq(json_array_size(lines), 0);
		json_decref(lines);
	}

	/* repaired: the next verification runs and succeeds; the count stays */
	if (failure_cases[_i].how != GIT_GONE) {
		write_kubeconfig(&w, TOKEN);
		ck_assert_int_eq(runverify_once(w.v, w.cfg), 0);
		ck_assert(metrics_get(w.m, RUNVERIFY_METRIC_ERRORS, NULL) == 2);
		ck_assert(metrics_get(w.m, RUNVERIFY_METRIC_LAST_SUCCESS, NULL) > 0);
	}
	world_close(&w);
}
END_TEST

/* ---- only the leader verifies ---- */

START_TEST(standby_verifies_nothing)
{
	struct leader_options lo = {0};
	struct leader *leader = NULL;
	struct error err = ERROR_INIT;
	struct world w;
	char *text;

	world_open(&w, "web", D0, NULL);
	/* kubeapi.py serves no Lease: this candidate never leads */
	lo.kubeconfig = w.kubeconfig;
	lo.timing = (struct lease_timing){2000, 1500, 250};
	ck_assert_msg(leader_start(&leader, &lo, &err) == 0, "%s", err.msg);
	world_verifier(&w, leader);
	ck_assert(!leader_is_leading(leader));
	ck_assert_int_eq(runverify_once(w.v, w.cfg), 0);
	ck_assert_uint_eq(w.reports, 0);
	text = render(w.m);
	ck_assert_ptr_null(strstr(text, "\nimageguard_running_drift{"));
	ck_assert_ptr_null(strstr(text, "\n" RUNVERIFY_METRIC_LAST_SUCCESS " "));
	ck_assert_ptr_nonnull(strstr(text, "\nimageguard_verify_errors_total 0\n"));
	free(text);
	{
		json_t *lines = audit_lines(&w);

		ck_assert_uint_eq(json_array_size(lines), 0);
		json_decref(lines);
	}
	/* without the leader, the same world drifts: the skip was the lease's */
	runverify_free(w.v);
	metrics_free(w.m);
	ck_assert_int_eq(metrics_new(&w.m), 0);
	world_verifier(&w, NULL);
	ck_assert_int_eq(runverify_once(w.v, w.cfg), 0);
	ck_assert_uint_eq(w.reports, 1);
	ck_assert_uint_eq(w.counts[VERIFY_DRIFT], 1);
	leader_stop(leader);
	world_close(&w);
}
END_TEST

/* ---- a startup error: the kubeconfig is read once at the start ---- */

START_TEST(new_needs_a_kubeconfig)
{
	struct runverify_options o = {0};
	struct runverify *v = NULL;
	struct metrics *m = NULL;
	struct error err = ERROR_INIT;
	char *text;

	ck_assert_int_eq(metrics_new(&m), 0);
	o.kubeconfig = "/nonexistent/kubeconfig";
	o.metrics = m;
	ck_assert_int_lt(runverify_new(&v, &o, &err), 0);
	ck_assert_ptr_null(v);
	ck_assert_str_eq(err.msg, "kubeconfig '/nonexistent/kubeconfig': no such file");
	text = render(m);
	ck_assert_ptr_nonnull(strstr(text, "# TYPE imageguard_running_drift gauge\n"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE imageguard_verify_errors_total counter\n"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE " RUNVERIFY_METRIC_LAST_SUCCESS " gauge\n"));
	free(text);
	/* the families are declared once */
	ck_assert_int_eq(runverify_new(&v, &o, &err), IG_EFAIL);
	ck_assert_str_eq(err.msg, "verify metrics: cannot declare them");
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runverify");
	TCase *tc = tcase_create("core"), *kube = tcase_create("api");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, new_needs_a_kubeconfig);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(kube, api_start, api_stop);
	tcase_add_loop_test(kube, verification, 0, sizeof(verify_cases) / sizeof(verify_cases[0]));
	tcase_add_loop_test(kube, failures_are_counted, 0,
	                    sizeof(failure_cases) / sizeof(failure_cases[0]));
	tcase_add_test(kube, standby_verifies_nothing);
	tcase_set_timeout(kube, 120);
	suite_add_tcase(s, kube);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
