/* run --kube: the pass's Kubernetes Events (core/v1) on each ImageUpdateAutomation and on the
 * ImagePolicy a marker names, and the drift verify finds, correlated as client-go's recorder
 * does (eventcorr.h: a repeat patches its count and lastTimestamp, the 10th similar message is
 * combined, 25 per object then one every 5 minutes), and, with
 * --events-addr, the same events posted to Flux's notification-controller in the payload of
 * fluxcd/pkg apis/event/v1beta1 (severity error for the anomalies, info otherwise). */
#ifndef IMAGEGUARD_KUBEEVENTS_H
#define IMAGEGUARD_KUBEEVENTS_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct config_automation;
struct error;
struct kubeevents;
struct kubesource;
struct report_item;
struct verify_report;

/* The reason of the Warning Event for a running image that is not what Git pins. */
#define KUBEEVENTS_REASON_DRIFT "DriftDetected"

/* source's client (borrowed, used from the caller's thread only) writes the Events, on objects
 * of the group and version source serves them at, each naming the uid and resourceVersion of
 * its object as source last loaded it (kubesource_identity); events_addr (NULL: none) the
 * notification-controller URL. Returns 0 or IG_EFAIL. */
int kubeevents_new(struct kubeevents **out, struct kubesource *source, const char *events_addr,
                   struct error *err);
void kubeevents_free(struct kubeevents *ev);

/* What one report item is worth an Event for: false for quiet decisions (up-to-date, no
 * candidates, suspended, settling). *warning is the type (Warning, else Normal). */
bool kubeevents_classify(const struct report_item *it, bool *warning, char *reason,
                         size_t reason_n);

/* Records the Events of automation a's items (and its failure message, NULL: none; and a
 * Warning FluxControllerRunning when flux_ready, the ready replicas of Flux's own
 * image-automation-controller, is above 0). Failures to write are logged, never fatal. */
void kubeevents_record(struct kubeevents *ev, const struct config_automation *a,
                       const struct report_item *const *items, size_t n, const char *failure,
                       long flux_ready);

/* A Warning Event with reason (Flux's, config_invalid.reason) on the object kind ("ImagePolicy",
 * "ImageUpdateAutomation") ns/name that was left out of the configuration, message its one-line
 * error (NULL: "invalid"). */
void kubeevents_invalid(struct kubeevents *ev, const char *kind, const char *ns, const char *name,
                        const char *reason, const char *message);

/* A runverify_report_fn (arg: the struct kubeevents): every drifting container of the report
 * becomes a Warning DriftDetected Event (Flux severity error) on the automation whose
 * checkout holds the marker and on its ImagePolicy, posted to --events-addr like the rest. */
void kubeevents_on_verify(void *arg, const struct config *cfg, const struct verify_report *r);

#endif
