/* The body shared by `plan` and `reconcile` (and run's config loading). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/report/audit.h"
#include "imageguard/util/buf.h"
#include "imageguard/cmd/cmdopts.h"
#include "imageguard/cmd/cmdpass.h"
#include "imageguard/config/config.h"
#include "imageguard/config/labelsel.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"
#include "imageguard/pass/reconcile.h"
#include "imageguard/report/report.h"
#include "imageguard/pass/shard.h"

int cmdpass_load_config(struct config **out, const char *path, bool as_log)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct error err = ERROR_INIT;
	int rc = 0;

	*out = NULL;
	if (config_load(out, path, &diags, &err) < 0) {
		rc = err.code == IG_EFAIL ? 1 : 2;
		if (as_log)
			log_error("config.load", "%s", err.msg);
		else
			fprintf(stderr, "imageguard: %s\n", err.msg);
	}
	config_diags_print(&diags, as_log);
	config_diags_release(&diags);
	return rc;
}

int cmdpass_load(struct config **out, const struct cmdopts *o, bool as_log)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config_load_options lo = {.keep_valid = true,
	                                 .check_secrets = true,
	                                 .secrets_dir = o->secrets_dir,
	                                 .shards = o->shard.shards,
	                                 .no_cross_namespace_refs = o->no_cross_namespace_refs};
	struct labelsel *sel = NULL;
	struct error err = ERROR_INIT;
	int rc = 0;

	*out = NULL;
	/* file mode filters by --watch-label-selector here; --kube leaves it to the API server */
	if (o->shard.selector && !o->kube && labelsel_parse(&sel, o->shard.selector, &err) == 0)
		lo.selector = sel;
	if (err.code < 0 || config_load_with(out, o->config, &lo, &diags, &err) < 0) {
		rc = err.code == IG_EFAIL ? 1 : 2;
		if (as_log)
			log_error("config.load", "%s", err.msg);
		else
			fprintf(stderr, "imageguard: %s\n", err.msg);
	}
	config_diags_print(&diags, as_log);
	if (*out && (*out)->invalid_len) {
		if (as_log)
			log_error("config.invalid", "%zu invalid object%s left out; the others run",
			          (*out)->invalid_len, (*out)->invalid_len == 1 ? "" : "s");
		else
			fprintf(stderr,
			        "imageguard: config '%s': %zu invalid object%s left out; the "
			        "others run\n",
			        o->config, (*out)->invalid_len,
			        (*out)->invalid_len == 1 ? "" : "s");
	}
	config_diags_release(&diags);
	labelsel_free(sel);
	return rc;
}

static int print_report(const struct report *r, bool json)
{
	struct buf out = BUF_INIT;
	int error = json ? report_json(&out, r) : report_text(&out, r);

	if (error == 0 && out.len)
		fwrite(out.data, 1, out.len, stdout);
	fflush(stdout);
	buf_release(&out);
	return error;
}

/* plan --shards N: each item of an automation names the shard that owns it. */
static void annotate_shards(struct report *r, const struct config *cfg, unsigned shards)
{
	struct error err = ERROR_INIT;

	r->shards = shards;
	for (size_t i = 0; i < r->len; i++) {
		struct report_item *it = &r->items[i];

		for (size_t k = 0; it->automation && k < cfg->automations_len; k++)
			if (!strcmp(cfg->automations[k].id, it->automation))
				it->has_shard =
				    shard_of(&it->shard, &cfg->automations[k], shards, &err) == 0;
	}
}

int cmdpass_once(const struct cmdopts *o, bool dry_run)
{
	struct reconcile_options ro = {0};
	struct report report = REPORT_INIT;
	struct error err = ERROR_INIT;
	struct config *cfg = NULL;
	struct audit *audit = NULL;
	int rc;

	/* the phases of a one-shot pass at debug level, for bench/git_reconcile.py's breakdown */
	log_debug("pass.start", "%s", dry_run ? "plan" : "reconcile");
	if ((rc = cmdpass_load(&cfg, o, false)) != 0)
		goto done;
	log_debug("config.load", "'%s': %zu policies, %zu automations", o->config,
	          cfg->policies_len, cfg->automations_len);
	if (!dry_run && o->audit_log && audit_open(&audit, o->audit_log, o->audit_tags, &err) < 0) {
		fprintf(stderr, "imageguard: %s\n", err.msg);
		rc = 1;
		goto done;
	}
	ro.config = cfg;
	ro.state_dir = o->state_dir;
	ro.secrets_dir = o->secrets_dir;
	ro.concurrency = o->concurrency;
	ro.dry_run = dry_run;
	ro.audit = audit;
	ro.shard = o->shard_index_set ? &o->shard : NULL; /* plan --shards alone: all */
	if (reconcile_pass(&report, &ro, &err) < 0) {
		fprintf(stderr, "imageguard: %s\n", err.msg);
		rc = 1;
		goto done;
	}
	if (dry_run && o->shard.shards)
		annotate_shards(&report, cfg, o->shard.shards);
	if (print_report(&report, o->json) < 0) {
		fprintf(stderr, "imageguard: report: out of memory\n");
		rc = 1;
		goto done;
	}
	/* an invalid object is an error too, whether or not the pass reported it */
	rc = report.errors || cfg->invalid_len ? 1 : 0;
done:
	report_release(&report);
	audit_close(audit);
	config_free(cfg);
	return rc;
}
