/* run --kube: after each pass, the status of every ImageUpdateAutomation through its status
 * subresource, in the shape Flux's image-automation-controller writes (observedGeneration,
 * the Ready condition with imageguard's reason, lastAutomationRunTime, lastPushCommit,
 * lastPushTime, observedPolicies, lastHandledReconcileAt), and the pass's Events. */
#ifndef IMAGEGUARD_KUBESTATUS_H
#define IMAGEGUARD_KUBESTATUS_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct error;
struct kube_client;
struct kubeevents;
struct leader;
struct metrics;
struct kubesource;
struct report;
struct shard_spec;
struct report_item;

/* The Ready condition of one automation from its report items (all of them its own) and its
 * failure message (NULL: none): worst decision first (error, then downgrade-blocked and
 * candidate-missing, then other holds, then successes). reason and message are written into
 * caller buffers; returns true for status "True". */
bool kubestatus_ready(char *reason, size_t reason_n, char *message, size_t message_n,
                      const struct report_item *const *items, size_t n, const char *failure);

/* Writes the status of every automation of cfg that is not suspended and that shard owns
 * (shard_owns; NULL: every one), and records its Events through ev (NULL: none); m (NULL: none)
 * gets the gauge of kubestatus_flux_running. Failures are logged (one line each), never fatal:
 * the next pass writes again. With leader (NULL: no leader election) the loop checks before
 * each automation that this replica still leads: a lease lost mid-way stops it there, with one
 * log line counting the automations left to the new leader. */
void kubestatus_publish(struct kubesource *ks, struct kubeevents *ev, struct metrics *m,
                        const struct config *cfg, const struct report *r,
                        const struct shard_spec *shard, struct leader *leader);

/* The ready replicas of Flux's image-automation-controller (Deployment flux-system/
 * image-automation-controller), 0 when absent or unreadable. Each pass publishes it as the gauge
 * imageguard_flux_image_automation_ready_replicas, a Warning Event FluxControllerRunning on
 * every automation and a sentence in the Ready message. */
long kubestatus_flux_running(struct kube_client *c);

#endif
