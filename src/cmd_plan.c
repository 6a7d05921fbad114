/* `imageguard plan`: every decision of a pass, nothing written (CONTRACT §3). */
#include <stdio.h>

#include "imageguard/cmdopts.h"
#include "imageguard/cmdpass.h"
#include "imageguard/commands.h"
#include "imageguard/error.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: imageguard plan --config PATH [--state-dir DIR] [--secrets-dir DIR]\n"
	        "                       [--log-format json|text] [--log-level LEVEL]\n"
	        "                       [--concurrency N (8)] [-o text|json]\n\n"
	        "Computes the decision for every marker and writes nothing: no commit, no push,\n"
	        "no audit record (the Git clone cache in the state dir may be refreshed).\n"
	        "Text: one line per marker `policy file:line current -> candidate decision/reason\n"
	        "[warnings]`. Exit 0, 1 when a policy ended in error, 2 for invalid input.\n");
}

int cmd_plan(int argc, char **argv)
{
	struct cmdopts o;
	struct error err = ERROR_INIT;
	int rc;

	if (cmdopts_parse(&o, argc, argv, CMDOPTS_OUTPUT, &err) < 0) {
		fprintf(stderr, "imageguard: plan: %s\n", err.msg);
		usage(stderr);
		cmdopts_release(&o);
		return 2;
	}
	if (o.help) {
		usage(stdout);
		cmdopts_release(&o);
		return 0;
	}
	rc = cmdpass_once(&o, true);
	cmdopts_release(&o);
	return rc;
}
