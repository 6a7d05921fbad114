/* `imageguard plan`: every decision of a pass, nothing written (CONTRACT §3). */
#include <stdio.h>

#include "imageguard/cmd/cmdopts.h"
#include "imageguard/cmd/cmdpass.h"
#include "imageguard/cmd/commands.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: imageguard plan --config PATH [--state-dir DIR] [--secrets-dir DIR]\n"
	    "                       [--log-format json|text] [--log-level LEVEL]\n"
	    "                       [--concurrency N] [-o text|json]\n"
	    "                       [--watch-label-selector SEL] [--shards N [--shard-index I]]\n"
	    "                       [--no-cross-namespace-refs]\n\n"
	    "Computes the decision for every marker and writes nothing: no commit, no push,\n"
	    "no audit record (the Git clone cache in the state dir may be refreshed).\n\n"
	    "  --config PATH           a YAML file or a directory of them (required)\n"
	    "  --state-dir DIR         Git clone cache (default /var/lib/imageguard as root,\n"
	    "                          else $XDG_STATE_HOME/imageguard or\n"
	    "                          ~/.local/state/imageguard)\n"
	    "  --secrets-dir DIR       one folder per secretRef name, one file per key\n"
	    "  --audit-log FILE|-      accepted for symmetry with reconcile, ignored:\n"
	    "  --audit-tags            plan writes no audit record\n"
	    "  --log-format json|text  log lines on stderr (default text)\n"
	    "  --log-level LEVEL       error|warn|info|debug (default info)\n"
	    "  --concurrency N         registry listings in flight, 1-256 (default 8)\n"
	    "  -o, --output text|json  text (default): one line per marker\n"
	    "                          `policy file:line current -> candidate decision/reason\n"
	    "                          [warnings]`; json: an array of {policy, image,\n"
	    "                          file, line, current, candidate, decision, reason,\n"
	    "                          warnings, digest?, message?}\n"
	    "  --watch-label-selector SEL  only objects whose metadata.labels match SEL\n"
	    "                          (Kubernetes selector syntax: k=v, k!=v, k in (a,b),\n"
	    "                          k notin (a), k, !k; ',' is AND)\n"
	    "  --shards N              sharding by hash of (Git URL, push branch), 1-1024:\n"
	    "                          each automation's line says `shard I/N` (json: shard,\n"
	    "                          shards), every automation is planned\n"
	    "  --shard-index I|auto    with --shards, plan only what shard I owns (auto: the\n"
	    "                          hostname's -N suffix, a StatefulSet ordinal)\n"
	    "  --no-cross-namespace-refs  Flux's lockdown: an ImagePolicy may use only an\n"
	    "                          ImageRepository, an ImageUpdateAutomation only a\n"
	    "                          GitRepository, of its own namespace (the others are\n"
	    "                          error/config, reason AccessDenied)\n\n"
	    "Exit status: 0 (holds are successes), 1 when a policy ended in error (the\n"
	    "others still processed), 2 usage or invalid configuration.\n");
}

int cmd_plan(int argc, char **argv)
{
	struct cmdopts o;
	int rc = cmdopts_start(
	    &o, argc, argv, CMDOPTS_OUTPUT | CMDOPTS_SHARD | CMDOPTS_SHARD_VIEW | CMDOPTS_TENANCY,
	    usage);

	if (rc < 0)
		rc = cmdpass_once(&o, true);
	cmdopts_release(&o);
	return rc;
}
