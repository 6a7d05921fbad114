/* The decision table of CONTRACT §6, one marker at a time, as a pure function: no I/O, no
 * clock, no globals. The caller (reconcile) lists tags, reads markers, asks guard_decide, does
 * the manifest HEAD the decision asks for, and hands the answer to guard_confirm. Only a
 * decision that is still update/rollback after guard_confirm may be written. */
#ifndef IMAGEGUARD_GUARD_H
#define IMAGEGUARD_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct error;
struct policy;

enum guard_decision_kind { GUARD_UPDATE, GUARD_NONE, GUARD_HOLD, GUARD_ROLLBACK, GUARD_ERROR };

enum guard_reason {
	GUARD_FORWARD,           /* update: candidate strictly ahead (or, same tag, new digest) */
	GUARD_ADOPT,             /* update: current outside the order, or its digest missing */
	GUARD_UP_TO_DATE,        /* none */
	GUARD_DOWNGRADE_BLOCKED, /* hold: candidate behind current */
	GUARD_CANDIDATE_MISSING, /* hold: HEAD of the tag to write was 404 / rollback-to unlisted */
	GUARD_NO_CANDIDATES,     /* hold: empty listing, or nothing passes the filter */
	GUARD_SUSPENDED,         /* hold: policy, repository or automation suspended */
	GUARD_OVERRIDE,          /* hold (already there) or rollback (writes rollback-to) */
	GUARD_REGISTRY,          /* error: listing or HEAD failed */
	GUARD_GIT,               /* error: set by the caller (guard_fail) */
	GUARD_CONFIG,            /* error: no compiled policy, or set by the caller */
	GUARD_NO_MARKERS,        /* none: a policy without marker (set by the caller) */
	GUARD_SETTLING,          /* hold: the candidate has not been listed for the settle window */
	GUARD_UNVERIFIED /* hold: the signature gate (CONTRACT §12) refused the digest to write */
};

/* Warnings are bits; several may be set. */
enum guard_warning {
	/* the committed tag is absent from a successful listing: stale or truncated data */
	GUARD_WARN_CURRENT_MISSING = 1u << 0,
	/* a rollback-to annotation is present but its rollback-until has passed: ignored */
	GUARD_WARN_OVERRIDE_LAPSED = 1u << 1,
	/* a whole-image marker named another repository than the policy's image: the value
	 * written names the policy's (guard_input.name_changed) */
	GUARD_WARN_NAME_CHANGED = 1u << 2,
	/* a re-pointed tag's builds could not be ordered by `created` (equal, missing, the
	 * epoch, or the committed image gone) and the new digest was never held at the marker:
	 * it moved forward on the marker's Git history alone */
	GUARD_WARN_CREATED_UNKNOWN = 1u << 3,
	/* the same, but the new digest was held at the marker before and a later commit replaced
	 * it: a re-point to an old build, held (downgrade-blocked) */
	GUARD_WARN_DIGEST_REPLACED = 1u << 4,
	/* why the signature gate refused (hold/unverified), one bit per status of CONTRACT §12 */
	GUARD_WARN_UNSIGNED = 1u << 5,
	GUARD_WARN_BAD_SIGNATURE = 1u << 6,
	GUARD_WARN_DIGEST_MISMATCH = 1u << 7,
	GUARD_WARN_UNTRUSTED_SIGNER = 1u << 8,
	GUARD_WARN_IDENTITY_MISMATCH = 1u << 9,
	GUARD_WARN_NO_TRANSPARENCY_PROOF = 1u << 10,
};
#define GUARD_WARN_LAST GUARD_WARN_NO_TRANSPARENCY_PROOF

/* How the marker carries a digest, from the policy's digestReflectionPolicy and the marker's
 * part (the caller maps them: a `:tag` or `:name` marker is NONE; a whole-image marker under
 * Never is NONE, under IfNotPresent IF_MISSING, under Always ALWAYS; a `:digest` marker
 * follows the policy, Never counting as ALWAYS since the marker exists only to hold it).
 *  - NONE: the digest is never written; HEAD only confirms existence.
 *  - IF_MISSING: a digest is written with every tag change, and when the tag is unchanged
 *    only if the marker holds none (update/adopt).
 *  - ALWAYS: as IF_MISSING, and also when the tag is unchanged but the registry's digest
 *    differs from the one committed (update/forward: the tag was pushed again). */
enum guard_digest_mode { GUARD_DIGEST_NONE, GUARD_DIGEST_IF_MISSING, GUARD_DIGEST_ALWAYS };

/* Everything one marker's decision depends on. Borrowed pointers. */
struct guard_input {
	const struct policy *policy; /* compiled; NULL gives error/config */
	bool policy_suspended, repository_suspended, automation_suspended;

	bool listing_ok;           /* false: the listing failed (error/registry) */
	const char *listing_error; /* one line, with !listing_ok (NULL: a generic message) */
	const char *const *tags;   /* the listing, with listing_ok */
	size_t tags_len;
	/* NULL, or the listing's identity across passes: the policy's pick is then remembered
	 * (policy_select_keyed) */
	const unsigned char *listing_key;

	const char *rollback_to;     /* NULL: no override annotation */
	const char *rollback_reason; /* with rollback_to (config guarantees it) */
	bool has_until;              /* rollback-until given */
	time_t until;
	time_t now; /* the pass's clock, passed in to keep this pure */

	/* The tag committed at the marker. NULL when the marker holds no tag and the caller
	 * knows none (a `:digest` marker alone): every candidate is then "adopt", and only the
	 * confirmed digest equal to current_digest makes it up-to-date. Pass the tag of a sibling
	 * `:tag` marker when there is one so that forward-only holds for digests too. */
	const char *current_tag;
	const char *current_digest; /* the digest committed at the marker, NULL when none */
	enum guard_digest_mode digest_mode;

	/* Digest-tracked policy (policy.digest.tag): the one tag it follows, else NULL. Then
	 *  - a marker without tag (a lone `:digest`) counts as holding this tag;
	 *  - (as for every policy) a digest changed under ALWAYS is a move only towards a newer
	 *    image: guard_confirm leaves it pending (needs_created) until guard_confirm_created
	 *    compares the config `created` of current_digest and of the new digest;
	 *  - rollback_to is a digest (config guarantees it): held when current_digest equals it,
	 *    else rolled back to after a HEAD of that digest (guard_confirm_ref). */
	const char *tracked_tag;

	/* A `:name` marker: the repository it holds, and the policy's image. Such a marker only
	 * ever holds the repository: it follows the registry's health (a failed or suspended
	 * policy holds it too) but not the tag's movement, so a decision that would update, roll
	 * back or stay becomes none/up-to-date when current_name equals image, else update/adopt.
	 * NULL for the other parts. */
	const char *current_name;
	const char *image;

	/* A whole-image marker whose committed repository is not the policy's image (a mirror
	 * move, or a value someone edited): the tag is still compared under the policy's order,
	 * the decision carries warning name-changed, and an up-to-date tag becomes update/adopt
	 * (confirmed by a HEAD of the policy's image), so the written reference is always the
	 * policy's image and a tag the registry confirmed for it. */
	bool name_changed;

	/* imageguard.io/settle (CONTRACT §11), in seconds; 0: none. A forward or adopting move is
	 * written only once its candidate, with the digest HEAD confirmed, has been listed for
	 * this long (guard_confirm_settle). Never delays a rollback override. */
	long settle_s;
};

#define GUARD_INPUT_INIT                                                                           \
	{                                                                                          \
		NULL, false, false, false, false, NULL, NULL, 0, NULL, NULL, NULL, false, 0, 0,    \
		    NULL, NULL, GUARD_DIGEST_NONE, NULL, NULL, NULL, false, 0                      \
	}

#define GUARD_TAG_MAX 128    /* the OCI tag grammar's limit */
#define GUARD_DIGEST_MAX 160 /* "sha512:" + 128 hex, with room */
#define GUARD_MESSAGE_MAX 512

/* A decision owns no heap memory: it can be copied, and nothing needs releasing. */
struct guard_decision {
	enum guard_decision_kind decision;
	enum guard_reason reason;
	char candidate[GUARD_TAG_MAX + 1]; /* the tag chosen (or rollback-to); "" when none */
	/* the digest HEAD returned (after confirm); "" if none */
	char digest[GUARD_DIGEST_MAX + 1];
	char message[GUARD_MESSAGE_MAX]; /* one line: the error, or the override's reason; "" */
	unsigned warnings;               /* enum guard_warning bits */
	/* Set by guard_decide when the caller must HEAD `candidate` in this pass and call
	 * guard_confirm before acting: every update and rollback, and an up-to-date decision
	 * whose digest may need writing. Cleared by guard_confirm. */
	bool needs_confirmation;
	/* After guard_confirm: write `digest` along with the tag (digest_mode allows it and the
	 * tag changed, the marker has none, or it changed under ALWAYS). */
	bool write_digest;
	/* Set by guard_confirm when the digest of an unchanged tag moved under ALWAYS (a re-pointed
	 * tag: policy.digest.tag, or Flux's one-tag filter with Always): the caller must
	 * read the `created` of in->current_digest and of d->digest and call
	 * guard_confirm_created before acting. */
	bool needs_created;
	/* Set by guard_confirm_created when `created` cannot order the two builds: the caller
	 * must find whether d->digest was held at this marker before and replaced by a later
	 * commit (the marker's Git history) and call guard_confirm_history before acting. */
	bool needs_history;
	/* Set by guard_confirm when settle_s is set and the decision is update: the caller must
	 * find since when this candidate (with d->digest) has been listed and call
	 * guard_confirm_settle before acting. */
	bool needs_settle;
};

/* Decides one marker from the input, in this order: suspended; failed listing (error/
 * registry); empty listing (hold/no-candidates); override in force (rollback/override, or
 * hold/override when current equals it, or hold/candidate-missing when rollback-to is not
 * listed — never forward); nothing passing the filter (hold/no-candidates); then
 * policy_compare(current, best): FORWARD update/forward, INCOMPARABLE (or no current tag)
 * update/adopt, SAME none/up-to-date (policy_verdict, the one eval uses), BACKWARD
 * hold/downgrade-blocked. A lapsed override is ignored (warning override-lapsed).
 * current-missing is raised whenever the listing succeeded and does not hold current_tag.
 * Returns 0 (out filled) or IG_EFAIL when out of memory. */
int guard_decide(struct guard_decision *out, const struct guard_input *in, struct error *err);

enum guard_head {
	GUARD_HEAD_OK,        /* 200: the manifest exists; digest is its Docker-Content-Digest */
	GUARD_HEAD_NOT_FOUND, /* 404 */
	GUARD_HEAD_FAILED     /* anything else (transport error, 5xx, auth, ...) */
};

/* Applies the manifest HEAD of d->candidate (done in this pass) to a decision that needs
 * confirmation; does nothing otherwise. NOT_FOUND turns it into hold/candidate-missing,
 * FAILED into error/registry with head_error (NULL: a generic message). OK records digest
 * (may be NULL when the registry sent none: fine under NONE, error/registry otherwise), sets
 * write_digest, and settles an up-to-date decision under a digest mode: a missing digest gives
 * update/adopt, a changed one under ALWAYS update/forward, else it stays none/up-to-date. For
 * a marker without current tag, a confirmed digest equal to current_digest gives
 * none/up-to-date. in must be the input given to guard_decide. */
void guard_confirm(struct guard_decision *d, const struct guard_input *in, enum guard_head head,
                   const char *digest, const char *head_error);

/* What the caller must HEAD to confirm d: the rollback digest for a digest-tracked policy's
 * rollback, else d->candidate. Borrowed from d or in. */
const char *guard_confirm_ref(const struct guard_decision *d, const struct guard_input *in);

/* What the caller learnt of one image's config `created` (registry_image_created). */
enum guard_created_state {
	GUARD_CREATED_KNOWN,     /* time is the config's `created` */
	GUARD_CREATED_MISSING,   /* no usable `created` (absent, placeholder, platform absent) */
	GUARD_CREATED_NOT_FOUND, /* the manifest or config blob is 404 */
	GUARD_CREATED_FAILED     /* anything else: transport, auth, a body that does not parse */
};

struct guard_created {
	enum guard_created_state state;
	struct timespec time; /* with KNOWN */
	const char *detail;   /* borrowed, one line or NULL: why it is missing, or the error */
};

/* Settles a decision that needs_created (does nothing otherwise), forward only by build time:
 * candidate newer than current stays update/forward; older is hold/downgrade-blocked; FAILED
 * on either side is error/registry; the new image NOT_FOUND hold/candidate-missing. When the
 * builds cannot be ordered (equal times, MISSING on either side, the committed image
 * NOT_FOUND) it sets needs_history and notes why in the message. Every hold and error carries
 * a message naming both digests and times. in must be the input given to guard_decide. */
void guard_confirm_created(struct guard_decision *d, const struct guard_input *in,
                           const struct guard_created *current,
                           const struct guard_created *candidate);

/* Settles a decision that needs_history (does nothing otherwise) with what the marker's Git
 * history says: replaced (d->digest was held there before and a later commit replaced it) is
 * hold/downgrade-blocked with warning digest-replaced; otherwise it stays update/forward with
 * warning created-unknown. */
void guard_confirm_history(struct guard_decision *d, bool replaced);

/* Settles a decision that needs_settle (does nothing otherwise): the candidate has been
 * listed, with the same digest, since `since`; before since + settle_s it is hold/settling
 * with the time left in the message. in must be the input given to guard_decide. */
void guard_confirm_settle(struct guard_decision *d, const struct guard_input *in, time_t since);

/* Settles a writing decision with the signature gate's answer for d->digest: status is "ok"
 * (nothing changes) or the failure's name ("unsigned", "bad-signature", "digest-mismatch",
 * "untrusted-signer", "identity-mismatch", "no-transparency-proof"; another name counts as
 * bad-signature), which makes it hold/unverified with that warning and detail in the message. */
void guard_confirm_verified(struct guard_decision *d, const char *status, const char *detail);

/* Sets d to decision error with reason (GUARD_GIT, GUARD_CONFIG, GUARD_REGISTRY) and a
 * printf message, keeping candidate and warnings; for the caller's own failures. */
void guard_fail(struct guard_decision *d, enum guard_reason reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* True when d, after every confirmation it asked for, asks for a commit (update or
 * rollback). */
bool guard_writes(const struct guard_decision *d);

/* Stable names: "update", "none", "hold", "rollback", "error"; "forward", "adopt",
 * "up-to-date", "downgrade-blocked", "candidate-missing", "no-candidates", "suspended",
 * "override", "registry", "git", "config", "no-markers", "settling", "unverified";
 * "current-missing",
 * "override-lapsed", "name-changed", "created-unknown", "digest-replaced", and the signature
 * gate's statuses "unsigned" ... "no-transparency-proof" (one warning bit). Static
 * storage; "unknown" for other values. */
const char *guard_decision_name(enum guard_decision_kind d);
const char *guard_reason_name(enum guard_reason r);
const char *guard_warning_name(enum guard_warning w);

#endif
