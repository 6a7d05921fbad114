/* The decision table of CONTRACT §6 as a pure function of its inputs: the invariants of §1
 * (forward only, confirmed tags, no commit from a failed or empty listing) are decided here
 * and nowhere else, so they can be tested exhaustively without a registry or Git. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "imageguard/util/error.h"
#include "imageguard/guard/guard.h"
#include "imageguard/registry/imageconfig.h"
#include "imageguard/policy/policy.h"

static void set(struct guard_decision *d, enum guard_decision_kind kind, enum guard_reason reason)
{
	d->decision = kind;
	d->reason = reason;
}

/* Copies a tag into the fixed candidate field; false when it does not fit (a tag longer than
 * the OCI grammar allows cannot be written anyway). */
static bool set_candidate(struct guard_decision *d, const char *tag)
{
	size_t n = strlen(tag);

	if (n > GUARD_TAG_MAX)
		return false;
	memcpy(d->candidate, tag, n + 1);
	return true;
}

/* The decision's message, cut to its buffer: a registry's detail may be long (and
 * vsnprintf keeps -Wformat-truncation quiet at -O0, where snprintf does not). */
static void sayf(struct guard_decision *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->message, sizeof(d->message), fmt, ap);
	va_end(ap);
}

void guard_fail(struct guard_decision *d, enum guard_reason reason, const char *fmt, ...)
{
	va_list ap;

	set(d, GUARD_ERROR, reason);
	d->needs_confirmation = d->needs_created = d->needs_history = d->needs_settle = false;
	d->write_digest = false;
	va_start(ap, fmt);
	vsnprintf(d->message, sizeof(d->message), fmt, ap);
	va_end(ap);
}

/* The tag the marker holds; a digest-tracked policy's lone `:digest` marker holds its tag. */
static const char *current_tag(const struct guard_input *in)
{
	return in->current_tag ? in->current_tag : in->tracked_tag;
}

static bool listed(const struct guard_input *in, const char *tag)
{
	for (size_t i = 0; i < in->tags_len; i++)
		if (!strcmp(in->tags[i], tag))
			return true;
	return false;
}

/* A digest-tracked policy's override names a digest: the tag stays, the digest goes back. */
static void decide_override_digest(struct guard_decision *d, const struct guard_input *in)
{
	if (!set_candidate(d, in->tracked_tag)) {
		guard_fail(d, GUARD_CONFIG, "tracked tag is longer than a tag may be");
		return;
	}
	/* A marker that holds no digest (`:tag`) has nothing to roll back but its tag. */
	if (in->digest_mode == GUARD_DIGEST_NONE
	        ? !strcmp(current_tag(in), in->tracked_tag)
	        : in->current_digest && !strcmp(in->current_digest, in->rollback_to)) {
		set(d, GUARD_HOLD, GUARD_OVERRIDE);
	} else {
		set(d, GUARD_ROLLBACK, GUARD_OVERRIDE);
		d->needs_confirmation = true;
	}
}

/* An override in force pins the marker to rollback-to and forbids every other move. */
static void decide_override(struct guard_decision *d, const struct guard_input *in)
{
	snprintf(d->message, sizeof(d->message), "%s",
	         in->rollback_reason ? in->rollback_reason : "");
	if (in->tracked_tag) {
		decide_override_digest(d, in);
		return;
	}
	if (!set_candidate(d, in->rollback_to)) {
		guard_fail(d, GUARD_CONFIG, "rollback-to '%s' is longer than a tag may be",
		           in->rollback_to);
		return;
	}
	if (current_tag(in) && !strcmp(current_tag(in), in->rollback_to)) {
		set(d, GUARD_HOLD, GUARD_OVERRIDE);
	} else if (!listed(in, in->rollback_to)) {
		set(d, GUARD_HOLD, GUARD_CANDIDATE_MISSING);
	} else {
		set(d, GUARD_ROLLBACK, GUARD_OVERRIDE);
		d->needs_confirmation = true;
	}
}

/* The same version spelled two ways (`1.3.0` committed, `v1.3.0` picked): the committed
 * spelling stays when the registry lists it, so only a digest or the name can change. */
static void keep_spelling(struct guard_decision *d, const struct guard_input *in)
{
	const char *cur = current_tag(in);

	if (cur && strcmp(cur, d->candidate) != 0 && listed(in, cur))
		set_candidate(d, cur);
}

/* Best candidate against the committed tag under the policy's own order. */
static int decide_order(struct guard_decision *d, const struct guard_input *in, struct error *err)
{
	struct policy_result best = POLICY_RESULT_INIT;
	enum policy_verdict v;
	int rc;

	rc = policy_select_keyed(&best, in->policy, in->tags, in->tags_len, in->listing_key, err);
	if (rc == IG_ETOOBIG) { /* a tenant's pattern over its match limits: this policy only */
		guard_fail(d, GUARD_CONFIG, "%s", err->msg);
		return 0;
	}
	if (rc < 0)
		return rc;
	if (best.unordered) { /* Flux fails such a policy too: nothing is picked */
		guard_fail(d, GUARD_CONFIG, "numerical policy: tag '%.100s' is not a number",
		           best.unordered);
		goto done;
	}
	if (!best.latest) {
		set(d, GUARD_HOLD, GUARD_NO_CANDIDATES);
		goto done;
	}
	if (!set_candidate(d, best.latest)) {
		guard_fail(d, GUARD_REGISTRY, "tag '%.40s...' is longer than %d bytes", best.latest,
		           GUARD_TAG_MAX);
		goto done;
	}
	/* The one verdict `eval --current` gives too: a narrowed range and a looser spelling of a
	 * version ahead of the pick both hold. */
	v = policy_verdict(in->policy, current_tag(in), best.latest);
	if (v == POLICY_FORWARD) {
		set(d, GUARD_UPDATE, GUARD_FORWARD);
	} else if (v == POLICY_INCOMPARABLE) {
		set(d, GUARD_UPDATE, GUARD_ADOPT);
	} else if (v == POLICY_SAME) {
		keep_spelling(d, in);
		if (!in->name_changed) {
			set(d, GUARD_NONE, GUARD_UP_TO_DATE);
			/* The tag stays; a digest may still need writing, which only HEAD can tell.
			 */
			d->needs_confirmation =
			    in->digest_mode == GUARD_DIGEST_ALWAYS ||
			    (in->digest_mode == GUARD_DIGEST_IF_MISSING && !in->current_digest);
			goto done;
		}
		set(d, GUARD_UPDATE,
		    GUARD_ADOPT); /* the tag stays, the name becomes the policy's */
	} else {
		set(d, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED);
		goto done;
	}
	d->needs_confirmation = true;
done:
	policy_result_release(&best);
	return 0;
}

/* The rows of a `:name` marker (guard_input.current_name): it moves with the image's name,
 * never with the tag. */
static void settle_name(struct guard_decision *d, const struct guard_input *in)
{
	if (!in->current_name || d->needs_confirmation ||
	    (d->decision != GUARD_UPDATE && d->decision != GUARD_NONE &&
	     d->decision != GUARD_ROLLBACK))
		return;
	if (in->image && strcmp(in->current_name, in->image) == 0)
		set(d, GUARD_NONE, GUARD_UP_TO_DATE);
	else
		set(d, GUARD_UPDATE, GUARD_ADOPT);
}

static int decide(struct guard_decision *out, const struct guard_input *in, struct error *err)
{
	struct guard_decision *d = out;
	bool lapsed = in->rollback_to && in->has_until && in->now >= in->until;

	*d = (struct guard_decision){0};
	if (lapsed)
		d->warnings |= GUARD_WARN_OVERRIDE_LAPSED;
	if (in->name_changed)
		d->warnings |= GUARD_WARN_NAME_CHANGED;
	if (in->policy_suspended || in->repository_suspended || in->automation_suspended) {
		set(d, GUARD_HOLD, GUARD_SUSPENDED);
		return 0;
	}
	if (!in->listing_ok) {
		guard_fail(d, GUARD_REGISTRY, "%s",
		           in->listing_error ? in->listing_error : "tag listing failed");
		return 0;
	}
	if (current_tag(in) && !listed(in, current_tag(in)))
		d->warnings |= GUARD_WARN_CURRENT_MISSING;
	if (in->tags_len == 0) {
		set(d, GUARD_HOLD, GUARD_NO_CANDIDATES);
		return 0;
	}
	if (in->rollback_to && !lapsed) {
		decide_override(d, in);
		return 0;
	}
	if (!in->policy) {
		guard_fail(d, GUARD_CONFIG, "no compiled policy");
		return 0;
	}
	return decide_order(d, in, err);
}

int guard_decide(struct guard_decision *out, const struct guard_input *in, struct error *err)
{
	int rc = decide(out, in, err);

	if (rc == 0)
		settle_name(out, in);
	return rc;
}

/* Settles an up-to-date decision once the registry's digest is known. */
static void settle_digest(struct guard_decision *d, const struct guard_input *in)
{
	bool changed = in->current_digest && strcmp(in->current_digest, d->digest) != 0;

	if (d->decision == GUARD_NONE) {
		if (!in->current_digest)
			set(d, GUARD_UPDATE, GUARD_ADOPT);
		else if (changed && in->digest_mode == GUARD_DIGEST_ALWAYS)
			set(d, GUARD_UPDATE, GUARD_FORWARD);
		d->write_digest = d->decision == GUARD_UPDATE;
		/* A re-pointed tag's new digest is forward only if the image is newer. */
		d->needs_created = changed && d->decision == GUARD_UPDATE;
		return;
	}
	/* A new tag always brings its own digest. Without a known current tag, the marker is the
	 * digest: equal means there is nothing to write. */
	if (!current_tag(in) && in->current_digest && !changed) {
		if (d->decision == GUARD_ROLLBACK)
			set(d, GUARD_HOLD, GUARD_OVERRIDE);
		else
			set(d, GUARD_NONE, GUARD_UP_TO_DATE);
		return;
	}
	d->write_digest = true;
	/* The same tag under another repository's name (a mirror) re-points it too: the mirror's
	 * digest is forward only if its build is newer. */
	d->needs_created = changed && d->decision == GUARD_UPDATE && in->name_changed &&
	                   current_tag(in) && !strcmp(current_tag(in), d->candidate);
}

static void confirm_head(struct guard_decision *d, const struct guard_input *in,
                         enum guard_head head, const char *digest, const char *head_error)
{
	if (head == GUARD_HEAD_NOT_FOUND) {
		set(d, GUARD_HOLD, GUARD_CANDIDATE_MISSING);
		return;
	}
	if (head != GUARD_HEAD_OK) {
		guard_fail(d, GUARD_REGISTRY, "manifest '%s': %s", d->candidate,
		           head_error ? head_error : "HEAD failed");
		return;
	}
	if (digest && strlen(digest) <= GUARD_DIGEST_MAX)
		memcpy(d->digest, digest, strlen(digest) + 1);
	/* A HEAD by digest answers with that digest, or the registry is not to be trusted. */
	if (d->decision == GUARD_ROLLBACK && in->tracked_tag &&
	    strcmp(d->digest, in->rollback_to)) {
		guard_fail(d, GUARD_REGISTRY, "manifest '%s': the registry answered digest '%s'",
		           in->rollback_to, d->digest);
		return;
	}
	if (in->digest_mode == GUARD_DIGEST_NONE)
		return;
	if (!d->digest[0]) {
		guard_fail(d, GUARD_REGISTRY, "manifest '%s': the registry sent no usable digest",
		           d->candidate);
		return;
	}
	settle_digest(d, in);
}

void guard_confirm(struct guard_decision *d, const struct guard_input *in, enum guard_head head,
                   const char *digest, const char *head_error)
{
	if (!d->needs_confirmation)
		return;
	d->needs_confirmation = false;
	confirm_head(d, in, head, digest, head_error);
	settle_name(d, in);
	d->needs_settle = in->settle_s > 0 && d->decision == GUARD_UPDATE;
}

const char *guard_confirm_ref(const struct guard_decision *d, const struct guard_input *in)
{
	if (d->decision == GUARD_ROLLBACK && in->tracked_tag && in->rollback_to)
		return in->rollback_to;
	return d->candidate;
}

/* Why a side's time cannot order the builds, or an error/hold that ends the decision. Returns
 * true when d is settled (error, candidate-missing), else false with why filled (or "" when
 * the time is known). */
static bool created_side(struct guard_decision *d, const char *side, const char *digest,
                         const struct guard_created *c, char *why, size_t why_size)
{
	const char *detail = c->detail && *c->detail ? c->detail : NULL;

	why[0] = '\0';
	switch (c->state) {
	case GUARD_CREATED_KNOWN:
		return false;
	case GUARD_CREATED_FAILED:
		guard_fail(d, GUARD_REGISTRY, "image config of %s '%s': %s", side, digest,
		           detail ? detail : "could not be read");
		return true;
	case GUARD_CREATED_NOT_FOUND:
		if (!strcmp(side, "new")) {
			set(d, GUARD_HOLD, GUARD_CANDIDATE_MISSING);
			d->write_digest = false;
			snprintf(
			    d->message, sizeof(d->message),
			    "new '%s' is not in the registry: its build time cannot be read%s%s",
			    digest, detail ? ": " : "", detail ? detail : "");
			return true;
		}
		snprintf(why, why_size, "%s '%s' is not in the registry", side, digest);
		return false;
	case GUARD_CREATED_MISSING:
		snprintf(why, why_size, "%s '%s': %s", side, digest,
		         detail ? detail : "its image config has no 'created'");
		return false;
	}
	return false;
}

void guard_confirm_created(struct guard_decision *d, const struct guard_input *in,
                           const struct guard_created *current,
                           const struct guard_created *candidate)
{
	const char *cur = in->current_digest ? in->current_digest : "";
	char tc[48], tn[48], why_cur[GUARD_MESSAGE_MAX / 2] = "",
	                                                 why_new[GUARD_MESSAGE_MAX / 2] = "";
	int cmp;

	if (!d->needs_created)
		return;
	d->needs_created = false;
	/* errors first, then the new image, then the committed one */
	if ((current->state == GUARD_CREATED_FAILED &&
	     created_side(d, "committed", cur, current, why_cur, sizeof(why_cur))) ||
	    created_side(d, "new", d->digest, candidate, why_new, sizeof(why_new)) ||
	    created_side(d, "committed", cur, current, why_cur, sizeof(why_cur)))
		return;
	/* Renamed (a mirror) and the policy's repository lacks the committed digest: its build
	 * time lives in the repository the committed value names, which was not read, so nothing
	 * shows the move is forward. */
	if (in->name_changed && current->state == GUARD_CREATED_NOT_FOUND) {
		set(d, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED);
		d->write_digest = false;
		snprintf(d->message, sizeof(d->message),
		         "committed '%s' is not in the policy's repository: its build time cannot "
		         "order new '%s' (the name moves once the repository holds it, or by hand)",
		         cur, d->digest);
		return;
	}
	if (why_new[0] || why_cur[0]) {
		snprintf(d->message, sizeof(d->message), "build times cannot order the images: %s",
		         why_new[0] ? why_new : why_cur);
		d->needs_history = true;
		return;
	}
	imageconfig_format_time(tc, sizeof(tc), &current->time);
	imageconfig_format_time(tn, sizeof(tn), &candidate->time);
	cmp = imageconfig_time_cmp(&candidate->time, &current->time);
	if (cmp > 0)
		return;
	if (cmp == 0) {
		snprintf(
		    d->message, sizeof(d->message),
		    "build times cannot order the images: new '%s' and committed '%s' were both "
		    "created %s",
		    d->digest, cur, tn);
		d->needs_history = true;
		return;
	}
	set(d, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED);
	d->write_digest = false;
	snprintf(d->message, sizeof(d->message),
	         "new '%s' (created %s) is older than committed '%s' (created %s)", d->digest, tn,
	         cur, tc);
}

void guard_confirm_history(struct guard_decision *d, bool replaced)
{
	char why[GUARD_MESSAGE_MAX];

	if (!d->needs_history)
		return;
	d->needs_history = false;
	if (!replaced) {
		d->warnings |= GUARD_WARN_CREATED_UNKNOWN;
		return;
	}
	snprintf(why, sizeof(why), "%s", d->message);
	set(d, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED);
	d->warnings |= GUARD_WARN_DIGEST_REPLACED;
	d->write_digest = false;
	snprintf(d->message, sizeof(d->message),
	         "new '%s' was held at this marker before and a later commit replaced it (%.280s)",
	         d->digest, why);
}

void guard_confirm_settle(struct guard_decision *d, const struct guard_input *in, time_t since)
{
	time_t ready = since + (time_t)in->settle_s;

	if (!d->needs_settle)
		return;
	d->needs_settle = false;
	if (d->decision != GUARD_UPDATE || in->now >= ready)
		return;
	set(d, GUARD_HOLD, GUARD_SETTLING);
	d->write_digest = false;
	snprintf(d->message, sizeof(d->message),
	         "candidate '%s' listed for %lds of the %lds settle window: %lds left",
	         d->candidate, (long)(in->now - since), in->settle_s, (long)(ready - in->now));
}

static const struct {
	const char *name;
	enum guard_warning bit;
} verify_warnings[] = {
    {"unsigned", GUARD_WARN_UNSIGNED},
    {"bad-signature", GUARD_WARN_BAD_SIGNATURE},
    {"digest-mismatch", GUARD_WARN_DIGEST_MISMATCH},
    {"untrusted-signer", GUARD_WARN_UNTRUSTED_SIGNER},
    {"identity-mismatch", GUARD_WARN_IDENTITY_MISMATCH},
    {"no-transparency-proof", GUARD_WARN_NO_TRANSPARENCY_PROOF},
};

void guard_confirm_verified(struct guard_decision *d, const char *status, const char *detail)
{
	enum guard_warning bit = GUARD_WARN_BAD_SIGNATURE;
	const char *name = "bad-signature";

	if (!guard_writes(d) || (status && !strcmp(status, "ok")))
		return;
	for (size_t i = 0; status && i < sizeof(verify_warnings) / sizeof(verify_warnings[0]); i++)
		if (!strcmp(status, verify_warnings[i].name)) {
			bit = verify_warnings[i].bit;
			name = verify_warnings[i].name;
		}
	set(d, GUARD_HOLD, GUARD_UNVERIFIED);
	d->write_digest = false;
	d->warnings |= bit;
	sayf(d, "candidate '%s' (%s) not verified: %s%s%.300s", d->candidate,
	     *d->digest ? d->digest : "no digest", name, detail && *detail ? ": " : "",
	     detail ? detail : "");
}

bool guard_writes(const struct guard_decision *d)
{
	return !d->needs_confirmation && !d->needs_created && !d->needs_history &&
	       !d->needs_settle && (d->decision == GUARD_UPDATE || d->decision == GUARD_ROLLBACK);
}

const char *guard_decision_name(enum guard_decision_kind d)
{
	static const char *const names[] = {"update", "none", "hold", "rollback", "error"};

	return (unsigned)d < sizeof(names) / sizeof(names[0]) ? names[d] : "unknown";
}

const char *guard_reason_name(enum guard_reason r)
{
	static const char *const names[] = {
	    "forward",       "adopt",      "up-to-date", "downgrade-blocked", "candidate-missing",
	    "no-candidates", "suspended",  "override",   "registry",          "git",
	    "config",        "no-markers", "settling",   "unverified"};

	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

const char *guard_warning_name(enum guard_warning w)
{
	switch (w) {
	case GUARD_WARN_CURRENT_MISSING:
		return "current-missing";
	case GUARD_WARN_OVERRIDE_LAPSED:
		return "override-lapsed";
	case GUARD_WARN_NAME_CHANGED:
		return "name-changed";
	case GUARD_WARN_CREATED_UNKNOWN:
		return "created-unknown";
	case GUARD_WARN_DIGEST_REPLACED:
		return "digest-replaced";
	default:
		break;
	}
	for (size_t i = 0; i < sizeof(verify_warnings) / sizeof(verify_warnings[0]); i++)
		if (w == verify_warnings[i].bit)
			return verify_warnings[i].name;
	return "unknown";
}
