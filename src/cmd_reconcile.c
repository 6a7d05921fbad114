/* `imageguard reconcile`: one pass that writes (commits, audit) (CONTRACT §3). */
#include <stdio.h>

#include "imageguard/cmdopts.h"
#include "imageguard/cmdpass.h"
#include "imageguard/commands.h"
#include "imageguard/error.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: imageguard reconcile --config PATH [--state-dir DIR] [--secrets-dir DIR]\n"
	        "                            [--audit-log FILE|-] [--audit-tags]\n"
	        "                            [--log-format json|text] [--log-level LEVEL]\n"
	        "                            [--concurrency N (8)] [-o text|json]\n\n"
	        "One pass: lists the registries, decides every marker and commits the forward\n"
	        "moves (and annotated rollbacks), one commit per ImageUpdateAutomation.\n"
	        "Exit 0, 1 when a policy ended in error (the others still processed), 2 for\n"
	        "invalid input.\n");
}

int cmd_reconcile(int argc, char **argv)
{
	struct cmdopts o;
	struct error err = ERROR_INIT;
	int rc;

	if (cmdopts_parse(&o, argc, argv, CMDOPTS_OUTPUT, &err) < 0) {
		fprintf(stderr, "imageguard: reconcile: %s\n", err.msg);
		usage(stderr);
		cmdopts_release(&o);
		return 2;
	}
	if (o.help) {
		usage(stdout);
		cmdopts_release(&o);
		return 0;
	}
	rc = cmdpass_once(&o, false);
	cmdopts_release(&o);
	return rc;
}
