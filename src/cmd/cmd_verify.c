/* `imageguard verify --config PATH [--kubeconfig F] [--repo-dir D] ...`: running images
 * against what Git pins; exit 1 when any container drifts or a check failed, 2 for bad input. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/cmd/cmdopts.h"
#include "imageguard/cmd/cmdpass.h"
#include "imageguard/cmd/commands.h"
#include "imageguard/config/config.h"
#include "imageguard/util/error.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/registry/registry.h"
#include "imageguard/inspect/verify.h"
#include "imageguard/report/audit.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: imageguard verify --config PATH [--kubeconfig FILE] [--repo-dir DIR]\n"
	    "                         [--state-dir DIR] [--secrets-dir DIR] [-o text|json]\n"
	    "                         [--log-format json|text] [--log-level LEVEL]\n\n"
	    "Compares the image digest each running container reports (pod status imageID)\n"
	    "with the digest Git pins at every marked container image, or the digest the\n"
	    "committed tag resolves to in the registry.\n\n"
	    "  --kubeconfig FILE  the API server and credentials (current-context); without\n"
	    "                     it: in-cluster service account when KUBERNETES_SERVICE_HOST\n"
	    "                     is set, else $KUBECONFIG, else ~/.kube/config\n"
	    "  --repo-dir DIR     a local checkout to read instead of each automation's Git\n"
	    "                     source (update.path still applies)\n"
	    "  -o json            one JSON line per container: policy, workload, container,\n"
	    "                     pod, file, line, image, tag, digest, running_image,\n"
	    "                     running_digest, status (ok|drift|not-running|unknown), reason\n\n"
	    "Exit status: 0 every checked container runs what Git pins (or is not running),\n"
	    "1 drift or a failed check, 2 invalid command line or configuration.\n");
}

struct verify_args {
	const char *kubeconfig;
	const char *repo_dir;
	char **rest; /* argv for cmdopts_parse (pointers borrowed) */
	int rest_len;
};

/* Takes --kubeconfig and --repo-dir out of argv; refuses the COMMON FLAGS verify has no use
 * for (they would be silently ignored otherwise). */
static int split_args(struct verify_args *a, int argc, char **argv, struct error *err)
{
	static const char *const refused[] = {"--audit-log", "--audit-tags", "--concurrency"};

	if (!(a->rest = calloc((size_t)argc + 1, sizeof(char *))))
		return error_oom(err);
	a->rest[a->rest_len++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char **dst = NULL;
		const char *arg = argv[i], *eq = strchr(arg, '=');
		size_t n = eq ? (size_t)(eq - arg) : strlen(arg);

		if (n == 12 && strncmp(arg, "--kubeconfig", n) == 0)
			dst = &a->kubeconfig;
		else if (n == 10 && strncmp(arg, "--repo-dir", n) == 0)
			dst = &a->repo_dir;
		for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++)
			if (strlen(refused[k]) == n && strncmp(arg, refused[k], n) == 0)
				return error_set(err, IG_EUSAGE, "option '%s': not used by verify",
				                 refused[k]);
		if (!dst) {
			a->rest[a->rest_len++] = argv[i];
			continue;
		}
		if (!eq && i + 1 >= argc)
			return error_set(err, IG_EUSAGE, "option '%.*s': missing value", (int)n,
			                 arg);
		*dst = eq ? eq + 1 : argv[++i];
		if (!**dst)
			return error_set(err, IG_EUSAGE, "option '%.*s': empty value", (int)n, arg);
	}
	return 0;
}

/* --kubeconfig, else in-cluster, else $KUBECONFIG (its first path), else ~/.kube/config. */
static int load_kubeconfig(struct kubeconfig *out, const char *path, struct error *err)
{
	const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
	struct buf b = BUF_INIT;
	int error;

	if (path)
		return kubeconfig_load(out, path, err);
	if (getenv("KUBERNETES_SERVICE_HOST"))
		return kubeconfig_in_cluster(out, NULL, err);
	if (env && *env)
		error = buf_append(&b, env, strcspn(env, ":"));
	else if (home && *home)
		error = buf_printf(&b, "%s/.kube/config", home);
	else
		return error_set(err, IG_ENOTFOUND,
		                 "no Kubernetes configuration: use --kubeconfig "
		                 "or run in a pod");
	if (error < 0)
		return error_oom(err);
	error = kubeconfig_load(out, b.data, err);
	if (error == IG_ENOTFOUND)
		error_set(err, error,
		          "no Kubernetes configuration ('%s' does not exist): use "
		          "--kubeconfig or run in a pod",
		          b.data);
	buf_release(&b);
	return error;
}

static int print_json(const struct verify_report *r)
{
	for (size_t i = 0; i < r->len; i++) {
		struct verify_record rec;
		json_t *o;
		char *line;

		verify_result_record(&rec, &r->items[i]);
		if (!(o = audit_verify_json(&rec, NULL)))
			return -1;
		line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(o);
		if (!line)
			return -1;
		printf("%s\n", line);
		free(line);
	}
	return 0;
}

static void print_text(const struct verify_report *r)
{
	for (size_t i = 0; i < r->len; i++) {
		const struct verify_result *x = &r->items[i];

		printf("%-11s %s", verify_status_name(x->status), x->workload ? x->workload : "-");
		if (x->container)
			printf(" container %s", x->container);
		if (x->pod)
			printf(" pod %s", x->pod);
		printf(": %s", x->reason);
		if (x->file)
			printf(" (%s:%zu %s)", x->file, x->line, x->policy ? x->policy : "");
		printf("\n");
	}
	printf("%zu ok, %zu drift, %zu not running, %zu unknown\n", r->counts[VERIFY_OK],
	       r->counts[VERIFY_DRIFT], r->counts[VERIFY_NOT_RUNNING], r->counts[VERIFY_UNKNOWN]);
}

static int run(const struct cmdopts *co, const struct verify_args *va)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct kube_client *kube = NULL;
	struct registry_client *reg = NULL;
	struct registry_options ro;
	struct config *cfg = NULL;
	struct verify_report report = VERIFY_REPORT_INIT;
	struct verify_options vo;
	struct error err = ERROR_INIT;
	int rc, error;

	if ((rc = cmdpass_load_config(&cfg, co->config, false)) != 0)
		goto done;
	rc = 2;
	if ((error = load_kubeconfig(&kc, va->kubeconfig, &err)) < 0) {
		rc = error == IG_EFAIL ? 1 : 2;
		goto fail;
	}
	rc = 1;
	registry_options_init(&ro);
	if (kube_client_new(&kube, &kc, NULL, &err) < 0 || registry_client_new(&reg, &ro, &err) < 0)
		goto fail;
	vo = (struct verify_options){cfg, co->state_dir, co->secrets_dir, va->repo_dir, kube,
	                             reg, NULL};
	if (verify_pass(&report, &vo, &err) < 0)
		goto fail;
	if (co->json) {
		if (print_json(&report) < 0) {
			error_oom(&err);
			goto fail;
		}
	} else {
		print_text(&report);
	}
	fflush(stdout);
	rc = report.counts[VERIFY_DRIFT] || report.failures ? 1 : 0;
	goto done;
fail:
	fprintf(stderr, "imageguard: verify: %s\n", err.msg);
done:
	verify_report_release(&report);
	registry_client_free(reg);
	kube_client_free(kube);
	kubeconfig_release(&kc);
	config_free(cfg);
	return rc;
}

int cmd_verify(int argc, char **argv)
{
	struct verify_args va = {NULL, NULL, NULL, 0};
	struct cmdopts co;
	struct error err = ERROR_INIT;
	int rc = 2;

	memset(&co, 0, sizeof(co));
	if (split_args(&va, argc, argv, &err) < 0 ||
	    cmdopts_parse(&co, va.rest_len, va.rest, CMDOPTS_OUTPUT, &err) < 0) {
		rc = err.code == IG_EFAIL ? 1 : 2;
		fprintf(stderr, "imageguard: verify: %s\n", err.msg);
		goto done;
	}
	if (co.help) {
		usage(stdout);
		rc = 0;
		goto done;
	}
	rc = run(&co, &va);
done:
	cmdopts_release(&co);
	free(va.rest);
	return rc;
}
