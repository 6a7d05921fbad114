/* `imageguard run`: its options, then the run loop (controller/loop.c). */
#include <stdio.h>

#include "imageguard/cmd/cmdopts.h"
#include "imageguard/cmd/cmdpass.h"
#include "imageguard/cmd/commands.h"
#include "imageguard/controller/loop.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: imageguard run --config PATH | --kube [--kubeconfig FILE]\n"
	    "                      [--watch-namespace NS] [--watch-label-selector SEL]\n"
	    "                      [--kube-sync-timeout DURATION (30s)]\n"
	    "                      [--events-addr URL] [--listen ADDR:PORT] [--state-dir DIR]\n"
	    "                      [--secrets-dir DIR] [--audit-log FILE|-] [--audit-tags]\n"
	    "                      [--log-format json|text] [--log-level LEVEL] [--concurrency "
	    "N (8)]\n"
	    "                      [--verify-interval DURATION [--kubeconfig FILE]]\n"
	    "                      [--pass-timeout DURATION (10m)] [--memory-budget SIZE "
	    "(96Mi)]\n"
	    "                      [--webhook-listen ADDR:PORT --webhook-token-file FILE]\n"
	    "                      [--shards N --shard-index I|auto] [--no-cross-namespace-refs]\n"
	    "                      [--enable-leader-election [--leader-election-lease-duration "
	    "D (35s)]\n"
	    "                       [--leader-election-renew-deadline D (30s)]\n"
	    "                       [--leader-election-retry-period D (5s)]\n"
	    "                       [--leader-election-release-on-cancel[=false]]]\n\n"
	    "Reconciles on the shortest configured interval (ImageRepository and\n"
	    "ImageUpdateAutomation spec.interval, +-10%% jitter) until SIGTERM or SIGINT\n"
	    "(pushes in flight are finished; exit 0). SIGHUP, or a change to a configuration\n"
	    "file, reloads the configuration; a broken one is reported and the old one kept.\n"
	    "--listen serves /healthz, /readyz (200 after the first complete pass) and\n"
	    "/metrics (Prometheus text format). SIGTERM also ends registry and Kubernetes API\n"
	    "requests in flight (within about a second).\n\n");
	fprintf(
	    out,
	    "  --pass-timeout DURATION  every tag listing of one pass ends by this deadline\n"
	    "                     (Go syntax, 1s to 24h; default 10m); a listing that misses it\n"
	    "                     is an error for its policies, the others go on. Each listing\n"
	    "                     also has its own deadline: its ImageRepository spec.timeout,\n"
	    "                     or 5m, for all of its pages.\n"
	    "  --memory-budget SIZE  memory for the tag listing being read (bytes, or Ki, Mi, Gi;\n"
	    "                     default 96Mi, for the shipped 128Mi limit): a listing larger\n"
	    "                     than half of it is an error (a listing costs about 1.3x\n"
	    "                     its JSON size in memory, 1.7x when it comes unsorted).\n"
	    "  --verify-interval DURATION  also verify what runs (as `imageguard verify`) every\n"
	    "                     DURATION (Go syntax: 5m, 1h; +-10%% jitter; 0 or absent:\n"
	    "                     off), between passes on the same thread, first right after\n"
	    "                     the first pass. Publishes imageguard_running_drift{policy,\n"
	    "                     workload} (1 drift, 0 none), logs verify.drift, writes one\n"
	    "                     audit record per drifting container; a failure (API down)\n"
	    "                     is logged and counted (imageguard_verify_errors_total) and\n"
	    "                     changes neither the loop nor /healthz or /readyz. With\n"
	    "                     --shards only this shard's automations are verified, with\n"
	    "                     leader election only by the leader.\n"
	    "  --kube             take ImageRepository, ImagePolicy, ImageUpdateAutomation and\n"
	    "                     GitRepository from the API server (list, then watch; each\n"
	    "                     kind once at its preferred version) instead of --config;\n"
	    "                     Secrets from each object's namespace; status and Events on\n"
	    "                     the automations (docs/operations.md, Running in the cluster)\n"
	    "  --watch-namespace NS  only objects in NS (default: every namespace)\n"
	    "  --watch-label-selector SEL  only objects whose labels match SEL (Kubernetes\n"
	    "                     selector syntax; with --config, their metadata.labels)\n"
	    "  --kube-sync-timeout DURATION  how long --kube waits at start for the first\n"
	    "                     list of every kind (Go syntax, 1s to 24h; default 30s); when\n"
	    "                     one is missing by then, run exits 1 naming the kind;\n"
	    "                     with --shards, also how long a reload waits for the\n"
	    "                     lists a newly owned namespace brings\n"
	    "  --shards N --shard-index I|auto  only the automations shard I of N owns, by\n"
	    "                     FNV-1a 64 + fmix64 of the normalised (Git URL, push branch)\n"
	    "                     mod N\n"
	    "                     (auto: the hostname's -N suffix, a StatefulSet ordinal);\n"
	    "                     with --kube, a shard other than 0 keeps of a namespace it\n"
	    "                     shares with other shards only the policies its markers name\n"
	    "  --events-addr URL  also post the Events to Flux's notification-controller\n"
	    "  --no-cross-namespace-refs  Flux's multi-tenancy lockdown: an ImagePolicy may use\n"
	    "                     only an ImageRepository, an ImageUpdateAutomation only a\n"
	    "                     GitRepository (and so its Secret), of its own namespace;\n"
	    "                     the others are error/config, Ready=False AccessDenied and a\n"
	    "                     Warning Event. Without it, an ImageRepository of another\n"
	    "                     namespace is used only when its spec.accessFrom admits the\n"
	    "                     policy's namespace (Flux's ACL)\n");
	fprintf(
	    out,
	    "  --kubeconfig FILE  the API server and credentials for --kube and "
	    "--verify-interval;\n"
	    "                     without it the in-cluster service account (its token is\n"
	    "                     re-read for every verification).\n"
	    "  --webhook-listen ADDR:PORT  serve POST /hooks/registry on its own listener:\n"
	    "                     registry notifications (Docker distribution envelopes) or\n"
	    "                     {\"image\": \"host/repo\"}; a push for a configured repository\n"
	    "                     runs a pass at once (debounced: 0.5s quiet, at most 3s) instead\n"
	    "                     of waiting for the interval. Pulls, deletes and unknown\n"
	    "                     repositories are ignored (202); "
	    "imageguard_webhook_requests_total\n"
	    "                     {result} counts them, imageguard_push_to_commit_seconds times\n"
	    "                     notification to commit.\n"
	    "  --webhook-token-file FILE  the token requests present as `Authorization: Bearer\n"
	    "                     TOKEN` (compared in constant time; missing or wrong: 401; a\n"
	    "                     body over 1 MiB or not valid: 400). Read once at start.\n");
	fprintf(
	    out,
	    "  --enable-leader-election  run as one of several replicas: only the holder of\n"
	    "                     the coordination.k8s.io Lease 'imageguard-leader-election'\n"
	    "                     (with a shard's selector or --shards: '-' and its hash) in\n"
	    "                     the pod's namespace ($POD_NAMESPACE, else the kubeconfig's)\n"
	    "                     runs passes; standbys serve /healthz and /readyz (ready) with\n"
	    "                     imageguard_leader 0 and write nothing (they keep their own\n"
	    "                     Git clone cache warm for a takeover). Needs --kube or\n"
	    "                     --kubeconfig. A leader pushes only while its last renewal\n"
	    "                     + the renew deadline - the push timeout is ahead; every\n"
	    "                     commit carries `Imageguard-Lease: NAME/TRANSITIONS`, and a\n"
	    "                     head written under a higher generation of the same lease is\n"
	    "                     not pushed on. A leader that loses the lease finishes its\n"
	    "                     pass read-only and exits 1.\n"
	    "  --leader-election-lease-duration D  how long standbys wait before taking over\n"
	    "                     a lease that is not renewed (default 35s)\n"
	    "  --leader-election-renew-deadline D  how long the leader retries renewing before\n"
	    "                     it steps down (default 30s; < the lease duration)\n"
	    "  --leader-election-retry-period D  between tries (default 5s; renew deadline >\n"
	    "                     1.2 x it)\n"
	    "  --leader-election-release-on-cancel[=false]  on SIGTERM, after the last pass,\n"
	    "                     hand the lease over at once (default true)\n");
}

int cmd_run(int argc, char **argv)
{
	struct cmdopts o;
	int rc = cmdopts_start(&o, argc, argv,
	                       CMDOPTS_LISTEN | CMDOPTS_VERIFY | CMDOPTS_RUN | CMDOPTS_KUBE |
	                           CMDOPTS_SHARD | CMDOPTS_TENANCY,
	                       usage);

	if (rc < 0)
		rc = loop_run(&o, cmdpass_load);
	cmdopts_release(&o);
	return rc;
}
