/* `imageguard reconcile`: one pass that writes (commits, audit) (CONTRACT §3). */
#include <stdio.h>

#include "imageguard/cmd/cmdopts.h"
#include "imageguard/cmd/cmdpass.h"
#include "imageguard/cmd/commands.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: imageguard reconcile --config PATH [--state-dir DIR] [--secrets-dir DIR]\n"
	        "                            [--audit-log FILE|-] [--audit-tags]\n"
	        "                            [--log-format json|text] [--log-level LEVEL]\n"
	        "                            [--concurrency N] [-o text|json]\n"
	        "                            [--watch-label-selector SEL]\n"
	        "                            [--shards N --shard-index I|auto]\n"
	        "                            [--no-cross-namespace-refs]\n\n"
	        "One pass: lists the registries, decides every marker and commits the forward\n"
	        "moves (and annotated rollbacks), one commit per ImageUpdateAutomation, pushed\n"
	        "without force.\n\n"
	        "  --config PATH           a YAML file or a directory of them (required)\n"
	        "  --state-dir DIR         Git clone cache (default /var/lib/imageguard as root,\n"
	        "                          else $XDG_STATE_HOME/imageguard or\n"
	        "                          ~/.local/state/imageguard)\n"
	        "  --secrets-dir DIR       one folder per secretRef name, one file per key\n"
	        "  --audit-log FILE|-      append one JSON line per marker decision (-: stdout)\n"
	        "  --audit-tags            put the full tag list into each audit record\n"
	        "  --log-format json|text  log lines on stderr (default text)\n"
	        "  --log-level LEVEL       error|warn|info|debug (default info)\n"
	        "  --concurrency N         registry listings in flight, 1-256 (default 8)\n"
	        "  -o, --output text|json  text (default): one line per marker; json: an array\n"
	        "                          of {policy, image, file, line, current, candidate,\n"
	        "                          decision, reason, warnings, digest?, commit?,\n"
	        "                          message?}\n"
	        "  --watch-label-selector SEL  only objects whose metadata.labels match SEL\n"
	        "                          (Kubernetes selector syntax: k=v, k!=v, k in (a,b),\n"
	        "                          k notin (a), k, !k; ',' is AND)\n"
	        "  --shards N --shard-index I|auto  only the automations shard I of N owns:\n"
	        "                          FNV-1a 64 + fmix64 of the normalised (Git URL, push\n"
	        "                          branch) mod N (auto: the hostname's -N suffix)\n"
	        "  --no-cross-namespace-refs  Flux's lockdown: an ImagePolicy may use only an\n"
	        "                          ImageRepository, an ImageUpdateAutomation only a\n"
	        "                          GitRepository, of its own namespace (the others are\n"
	        "                          error/config, reason AccessDenied)\n\n"
	        "Exit status: 0 (holds are successes), 1 when a policy ended in error (the\n"
	        "others still processed), 2 usage or invalid configuration.\n");
}

int cmd_reconcile(int argc, char **argv)
{
	struct cmdopts o;
	int rc =
	    cmdopts_start(&o, argc, argv, CMDOPTS_OUTPUT | CMDOPTS_SHARD | CMDOPTS_TENANCY, usage);

	if (rc < 0)
		rc = cmdpass_once(&o, false);
	cmdopts_release(&o);
	return rc;
}
