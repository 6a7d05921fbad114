/* decide: one marker's decision end to end (current value, guard, HEAD, build times, the value
 * written) over fake registry callbacks. Every marker part, a `:tag` sibling, a registry host
 * with a port, HEAD not found and failed, a failed listing, and digest-tracked build times.
 * Linked without libcurl and libgit2 (see the Makefile): the seam is the only way out. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/guard/decide.h"
#include "imageguard/config/config.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/error.h"

#define IMG "registry.example.com:5000/acme/app"
#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static const char config_yaml[] =
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: ImageRepository\n"
    "metadata: {name: app, namespace: apps}\n"
    "spec: {image: " IMG "}\n"
    "---\n"
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: ImagePolicy\n"
    "metadata: {name: semver, namespace: apps}\n"
    "spec:\n"
    "  imageRepositoryRef: {name: app}\n"
    "  policy: {semver: {range: '>=1.0.0'}}\n"
    "---\n"
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: ImagePolicy\n"
    "metadata: {name: pinned, namespace: apps}\n"
    "spec:\n"
    "  imageRepositoryRef: {name: app}\n"
    "  policy: {semver: {range: '>=1.0.0'}}\n"
    "  digestReflectionPolicy: Always\n"
    "---\n"
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: ImagePolicy\n"
    "metadata: {name: edge, namespace: apps}\n"
    "spec:\n"
    "  imageRepositoryRef: {name: app}\n"
    "  policy: {digest: {tag: edge}}\n"
    "---\n"
    "apiVersion: image.toolkit.fluxcd.io/v1beta2\n"
    "kind: ImagePolicy\n"
    "metadata: {name: latest, namespace: apps}\n"
    "spec:\n"
    "  imageRepositoryRef: {name: app}\n"
    "  filterTags: {pattern: '^latest$'}\n"
    "  policy: {alphabetical: {order: asc}}\n"
    "  digestReflectionPolicy: Always\n"
    "---\n"
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: ImagePolicy\n"
    "metadata:\n"
    "  {name: quick, namespace: apps, annotations: {imageguard.io/settle: 60s}}\n"
    "spec:\n"
    "  imageRepositoryRef: {name: app}\n"
    "  policy: {semver: {range: '>=1.0.0'}}\n"
    "---\n"
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: ImagePolicy\n"
    "metadata:\n"
    "  {name: patient, namespace: apps, annotations: {imageguard.io/settle: 10m}}\n"
    "spec:\n"
    "  imageRepositoryRef: {name: app}\n"
    "  policy: {semver: {range: '>=1.0.0'}}\n"
    "---\n"
    "apiVersion: image.toolkit.fluxcd.io/v1beta2\n"
    "kind: ImagePolicy\n"
    "metadata:\n"
    "  name: signed\n"
    "  namespace: apps\n"
    "  annotations: {imageguard.io/verify-provider: cosign, imageguard.io/verify-secret: keys}\n"
    "spec:\n"
    "  imageRepositoryRef: {name: app}\n"
    "  policy: {semver: {range: '>=1.0.0'}}\n"
    "  digestReflectionPolicy: Always\n"
    "---\n"
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: ImagePolicy\n"
    "metadata:\n"
    "  name: signed-rollback\n"
    "  namespace: apps\n"
    "  annotations: {imageguard.io/rollback-to: 1.1.0, imageguard.io/rollback-reason: bad}\n"
    "spec:\n"
    "  imageRepositoryRef: {name: app}\n"
    "  policy: {semver: {range: '>=1.0.0'}}\n"
    "  verify: {provider: cosign, secretRef: {name: keys}}\n"
    "---\n"
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: GitRepository\n"
    "metadata: {name: fleet, namespace: apps}\n"
    "spec: {url: 'file:///nonexistent'}\n"
    "---\n"
    "apiVersion: imageguard.io/v1alpha1\n"
    "kind: ImageUpdateAutomation\n"
    "metadata: {name: fleet, namespace: apps}\n"
    "spec:\n"
    "  sourceRef: {kind: GitRepository, name: fleet}\n";

static const char *const listing[] = {"0.9.0", "1.0.0", "1.1.0", "1.2.0", "edge", "latest"};

/* HEAD_SAME: found, at D1 (the new tag is the committed image under another name) */
enum fake_head { HEAD_OK, HEAD_MISSING, HEAD_FAILS, HEAD_SAME };
enum fake_created { CREATED_NEWER, CREATED_OLDER, CREATED_SAME, CREATED_EPOCH };
/* The repository's listing in this pass: done and ok, done and failed, never finished (the
 * pass ended before its listing did: an error, never an empty listing). */
enum listing_state { LISTED, LISTING_FAILS, NOT_LISTED };
/* The marker's Git history: false, true (held the new digest, then replaced), or unreadable. */
enum fake_history { NOT_REPLACED, REPLACED, HISTORY_FAILS };

/* The fake registry: what it answers, and what it was asked. */
struct fake {
	enum fake_head head;
	enum fake_created created;
	int replaced; /* enum fake_history: the marker's history held the new digest before */
	size_t history_asked;
	size_t settle_asked;
	char asked[8][80]; /* every ref HEADed, in order */
	size_t asked_len;
	size_t asked_repo;
	struct guard_created times[2];
};

static int fake_head(void *ctx, size_t repo, const char *ref, enum guard_head *result,
                     const char **digest, const char **error)
{
	struct fake *f = ctx;

	ck_assert_uint_lt(f->asked_len, 8);
	snprintf(f->asked[f->asked_len++], sizeof(f->asked[0]), "%s", ref);
	f->asked_repo = repo;
	*digest = *error = NULL;
	*result = f->head == HEAD_OK || f->head == HEAD_SAME ? GUARD_HEAD_OK
	          : f->head == HEAD_MISSING                  ? GUARD_HEAD_NOT_FOUND
	                                                     : GUARD_HEAD_FAILED;
	if (f->head == HEAD_OK)
		*digest = D2; /* every tag now points at D2 */
	else if (f->head == HEAD_SAME)
		*digest = D1;
	else if (f->head == HEAD_FAILS)
		*error = "503 service unavailable";
	return 0;
}

/* D1 was built on 2025-01-01, D2 on 2025-02-01 (NEWER), 2024-12-01 (OLDER), the same instant
 * (SAME), or by a reproducible builder that writes no usable time (EPOCH: missing). */
static int fake_created(void *ctx, size_t repo, const char *digest, const char *platform,
                        const struct guard_created **out)
{
	struct fake *f = ctx;
	int i = strcmp(digest, D1) == 0 ? 0 : 1;

	(void)repo;
	(void)platform;
	f->times[i].state =
	    i == 1 && f->created == CREATED_EPOCH ? GUARD_CREATED_MISSING : GUARD_CREATED_KNOWN;
	f->times[i].time.tv_sec = i == 0 || f->created == CREATED_SAME ? 1735689600
	                          : f->created == CREATED_NEWER        ? 1738368000
	                                                               : 1733011200;
	*out = &f->times[i];
	return 0;
}

static int fake_replaced(void *ctx, const struct config_automation *a, const struct marker *m,
                         const char *digest, bool *out, struct error *err)
{
	struct fake *f = ctx;

	(void)a;
	ck_assert_str_eq(m->file, "apps/web.yaml");
	ck_assert_str_eq(digest, D2);
	f->history_asked++;
	if (f->replaced == HISTORY_FAILS)
		return error_set(err, IG_EFAIL, "object not found");
	*out = f->replaced == REPLACED;
	return 0;
}

/* The settle memory: every candidate was first listed 100 s before the pass. */
static int fake_listed_since(void *ctx, size_t policy, const char *candidate, const char *digest,
                             time_t *out)
{
	struct fake *f = ctx;

	(void)policy;
	(void)candidate;
	(void)digest;
	f->settle_asked++;
	*out = 1767225600 - 100;
	return 0;
}

static const struct {
	const char *name;
	const char *policy; /* the marker's "ns/name" */
	enum marker_part part;
	const char *value;
	const char *sibling_tag; /* a `:tag` marker of the same policy two lines up, or NULL */
	int listing;             /* enum listing_state: false LISTED, true LISTING_FAILS */
	enum fake_head head;
	enum fake_created created;
	int replaced; /* enum fake_history */
	const char *decision, *reason;
	const char *written; /* NULL: nothing */
	const char *headed;  /* the one ref HEADed, NULL: none */
	unsigned warnings;
} cases[] = {
    {"image forward, host with port", "apps/semver", MARKER_IMAGE, IMG ":1.0.0", NULL, false,
     HEAD_OK, 0, false, "update", "forward", IMG ":1.2.0", "1.2.0", 0},
    {"image up to date", "apps/semver", MARKER_IMAGE, IMG ":1.2.0", NULL, false, HEAD_OK, 0, false,
     "none", "up-to-date", NULL, NULL, 0},
    {"image ahead of the listing", "apps/semver", MARKER_IMAGE, IMG ":1.3.0", NULL, false, HEAD_OK,
     0, false, "hold", "downgrade-blocked", NULL, NULL, GUARD_WARN_CURRENT_MISSING},
    {"image of another repository", "apps/semver", MARKER_IMAGE,
     "registry.example.com/old/app:1.0.0", NULL, false, HEAD_OK, 0, false, "update", "forward",
     IMG ":1.2.0", "1.2.0", GUARD_WARN_NAME_CHANGED},
    {"another repository, same tag", "apps/semver", MARKER_IMAGE, "mirror.example.com/app:1.2.0",
     NULL, false, HEAD_OK, 0, false, "update", "adopt", IMG ":1.2.0", "1.2.0",
     GUARD_WARN_NAME_CHANGED},
    {"another repository ahead", "apps/semver", MARKER_IMAGE, "old/app:1.3.0", NULL, false, HEAD_OK,
     0, false, "hold", "downgrade-blocked", NULL, NULL,
     GUARD_WARN_CURRENT_MISSING | GUARD_WARN_NAME_CHANGED},
    {"another repository's pin", "apps/pinned", MARKER_IMAGE, "old/app:1.2.0@" D1, NULL, false,
     HEAD_OK, 0, false, "update", "adopt", IMG ":1.2.0@" D2, "1.2.0", GUARD_WARN_NAME_CHANGED},
    {"another repository, HEAD not found", "apps/semver", MARKER_IMAGE, "old/app:1.2.0", NULL,
     false, HEAD_MISSING, 0, false, "hold", "candidate-missing", NULL, "1.2.0",
     GUARD_WARN_NAME_CHANGED},
    {"image HEAD not found", "apps/semver", MARKER_IMAGE, IMG ":1.0.0", NULL, false, HEAD_MISSING,
     0, false, "hold", "candidate-missing", NULL, "1.2.0", 0},
    {"image HEAD fails", "apps/semver", MARKER_IMAGE, IMG ":1.0.0", NULL, false, HEAD_FAILS, 0,
     false, "error", "registry", NULL, "1.2.0", 0},
    {"listing failed", "apps/semver", MARKER_IMAGE, IMG ":1.0.0", NULL, true, HEAD_OK, 0, false,
     "error", "registry", NULL, NULL, 0},
    {"tag forward", "apps/semver", MARKER_TAG, "1.1.0", NULL, false, HEAD_OK, 0, false, "update",
     "forward", "1.2.0", "1.2.0", 0},
    {"tag behind is held", "apps/semver", MARKER_TAG, "2.0.0", NULL, false, HEAD_OK, 0, false,
     "hold", "downgrade-blocked", NULL, NULL, GUARD_WARN_CURRENT_MISSING},
    {"name of another repository", "apps/semver", MARKER_NAME, "registry.example.com/old/app",
     "1.2.0", false, HEAD_OK, 0, false, "update", "adopt", IMG, NULL, 0},
    {"name already the image", "apps/semver", MARKER_NAME, IMG, "1.0.0", false, HEAD_OK, 0, false,
     "none", "up-to-date", NULL, "1.2.0", 0},
    {"repository not listed in this pass", "apps/semver", MARKER_IMAGE, IMG ":1.0.0", NULL,
     NOT_LISTED, HEAD_OK, 0, false, "error", "registry", NULL, NULL, 0},
    {"name follows a failed listing", "apps/semver", MARKER_NAME, "x/old", "1.0.0", true, HEAD_OK,
     0, false, "error", "registry", NULL, NULL, 0},
    {"digest follows its sibling tag", "apps/pinned", MARKER_DIGEST, D1, "1.1.0", false, HEAD_OK, 0,
     false, "update", "forward", D2, "1.2.0", 0},
    /* the sibling tag moves to a tag of the same image: the digest marker already holds it */
    {"digest already the new tag's", "apps/pinned", MARKER_DIGEST, D1, "1.1.0", false, HEAD_SAME, 0,
     false, "update", "forward", NULL, "1.2.0", 0},
    {"digest sibling ahead is held", "apps/pinned", MARKER_DIGEST, D1, "1.5.0", false, HEAD_OK, 0,
     false, "hold", "downgrade-blocked", NULL, NULL, GUARD_WARN_CURRENT_MISSING},
    {"digest without a sibling adopts", "apps/pinned", MARKER_DIGEST, D1, NULL, false, HEAD_OK, 0,
     false, "update", "adopt", D2, "1.2.0", 0},
    {"image re-pushed under Always", "apps/pinned", MARKER_IMAGE, IMG ":1.2.0@" D1, NULL, false,
     HEAD_OK, 0, false, "update", "forward", IMG ":1.2.0@" D2, "1.2.0", 0},
    {"image gains its digest", "apps/pinned", MARKER_IMAGE, IMG ":1.1.0", NULL, false, HEAD_OK, 0,
     false, "update", "forward", IMG ":1.2.0@" D2, "1.2.0", 0},
    {"tracked tag to a newer build", "apps/edge", MARKER_IMAGE, IMG ":edge@" D1, NULL, false,
     HEAD_OK, CREATED_NEWER, false, "update", "forward", IMG ":edge@" D2, "edge", 0},
    {"tracked tag to an older build", "apps/edge", MARKER_IMAGE, IMG ":edge@" D1, NULL, false,
     HEAD_OK, CREATED_OLDER, false, "hold", "downgrade-blocked", NULL, "edge", 0},
    /* imageguard.io/settle: 60 s passed, listed for 100 s: moves; 600 s: waits */
    {"settled for long enough", "apps/quick", MARKER_TAG, "1.0.0", NULL, false, HEAD_OK, 0, false,
     "update", "forward", "1.2.0", "1.2.0", 0},
    {"still settling", "apps/patient", MARKER_TAG, "1.0.0", NULL, false, HEAD_OK, 0, false, "hold",
     "settling", NULL, "1.2.0", 0},
    /* Flux's own digest pattern: a filter admitting one tag, digestReflectionPolicy Always */
    {"flux latest to a newer build", "apps/latest", MARKER_IMAGE, IMG ":latest@" D1, NULL, false,
     HEAD_OK, CREATED_NEWER, false, "update", "forward", IMG ":latest@" D2, "latest", 0},
    {"flux latest to an older build", "apps/latest", MARKER_IMAGE, IMG ":latest@" D1, NULL, false,
     HEAD_OK, CREATED_OLDER, false, "hold", "downgrade-blocked", NULL, "latest", 0},
    /* build times cannot order them: the marker's Git history decides */
    {"same created, never held here", "apps/latest", MARKER_IMAGE, IMG ":latest@" D1, NULL, false,
     HEAD_OK, CREATED_SAME, false, "update", "forward", IMG ":latest@" D2, "latest",
     GUARD_WARN_CREATED_UNKNOWN},
    {"same created, held and replaced", "apps/latest", MARKER_IMAGE, IMG ":latest@" D1, NULL, false,
     HEAD_OK, CREATED_SAME, true, "hold", "downgrade-blocked", NULL, "latest",
     GUARD_WARN_DIGEST_REPLACED},
    {"same created, history unreadable", "apps/latest", MARKER_IMAGE, IMG ":latest@" D1, NULL,
     false, HEAD_OK, CREATED_SAME, HISTORY_FAILS, "error", "git", NULL, "latest", 0},
    {"epoch build, never held here", "apps/edge", MARKER_IMAGE, IMG ":edge@" D1, NULL, false,
     HEAD_OK, CREATED_EPOCH, false, "update", "forward", IMG ":edge@" D2, "edge",
     GUARD_WARN_CREATED_UNKNOWN},
    {"epoch build, held and replaced", "apps/edge", MARKER_DIGEST, D1, NULL, false, HEAD_OK,
     CREATED_EPOCH, true, "hold", "downgrade-blocked", NULL, "edge", GUARD_WARN_DIGEST_REPLACED},
};

static struct config *cfg;
static char dir[64];

static void setup(void)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct error err = ERROR_INIT;
	char path[96];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/imageguard-test-decide.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	ck_assert_int_eq(fputs(config_yaml, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(config_load(&cfg, path, &diags, &err) == 0, "%s", err.msg);
	config_diags_release(&diags);
	unlink(path);
	rmdir(dir);
}

static void teardown(void)
{
	config_free(cfg);
	cfg = NULL;
}

START_TEST(decide_table)
{
	struct fake fake = {
	    .head = cases[_i].head, .created = cases[_i].created, .replaced = cases[_i].replaced};
	struct decide_io io = {fake_head,         fake_created, fake_replaced,
	                       fake_listed_since, NULL,         &fake};
	struct decide_listing l = {cases[_i].listing != NOT_LISTED,
	                           cases[_i].listing == LISTED,
	                           "listing: 500",
	                           listing,
	                           6,
	                           NULL};
	struct decide_env env = {cfg, 1767225600, &l, &io};
	struct marker items[2] = {
	    {(char *)"apps/web.yaml", 1, (char *)cases[_i].policy, MARKER_TAG, MARKER_PLAIN, 0, 0,
	     (char *)cases[_i].sibling_tag, NULL, NULL, NULL, NULL, NULL, false},
	    {(char *)"apps/web.yaml", 3, (char *)cases[_i].policy, cases[_i].part, MARKER_PLAIN, 0,
	     0, (char *)cases[_i].value, NULL, NULL, NULL, NULL, NULL, false},
	};
	struct marker_set set = MARKER_SET_INIT;
	const struct config_policy *pol = config_find_policy_id(cfg, cases[_i].policy);
	struct decide_item it;

	ck_assert_uint_eq(cfg->repositories_len, 1);
	ck_assert_ptr_nonnull(pol);
	set.items = cases[_i].sibling_tag ? items : items + 1;
	set.len = cases[_i].sibling_tag ? 2 : 1;
	ck_assert_int_eq(decide_marker(&it, &env, &cfg->automations[0], &set, set.len - 1,
	                               (size_t)(pol - cfg->policies)),
	                 0);
	ck_assert_msg(!strcmp(guard_decision_name(it.d.decision), cases[_i].decision) &&
	                  !strcmp(guard_reason_name(it.d.reason), cases[_i].reason),
	              "%s: got %s/%s (%s), want %s/%s", cases[_i].name,
	              guard_decision_name(it.d.decision), guard_reason_name(it.d.reason),
	              it.d.message, cases[_i].decision, cases[_i].reason);
	ck_assert_pstr_eq(it.new_value, cases[_i].written);
	if (cases[_i].replaced == HISTORY_FAILS) /* the history's error, named by file:line */
		ck_assert_msg(strstr(it.d.message, "apps/web.yaml:3: history: object not found"),
		              "%s", it.d.message);
	if (cases[_i].listing != LISTED) /* the listing's own error, or why there is none */
		ck_assert_msg(strstr(it.d.message, cases[_i].listing == NOT_LISTED
		                                       ? "repository not listed in this pass"
		                                       : "listing: 500"),
		              "%s: %s", cases[_i].name, it.d.message);
	ck_assert_uint_eq(it.d.warnings, cases[_i].warnings);
	ck_assert_uint_eq(fake.asked_len, cases[_i].headed ? 1 : 0);
	if (cases[_i].headed) {
		ck_assert_str_eq(fake.asked[0], cases[_i].headed);
		ck_assert_uint_eq(fake.asked_repo, 0);
	}
	ck_assert_uint_eq(fake.history_asked, cases[_i].created >= CREATED_SAME ? 1 : 0);
	ck_assert_uint_eq(fake.settle_asked, strstr(cases[_i].name, "settl") ? 1 : 0);
	ck_assert(it.marker == set.len - 1 && it.policy == (size_t)(pol - cfg->policies));
	decide_item_release(&it);
}
END_TEST

/* ---- the signature gate (CONTRACT §12) over a fake verifier ---- */

/* What the fake verifier answers: a status, a registry failure, or a trust root that fails. */
enum fake_verify {
	V_OK,
	V_UNSIGNED,
	V_BAD,
	V_MISMATCH,
	V_UNTRUSTED,
	V_IDENTITY,
	V_NOLOG,
	V_FAILS,
	V_INVALID
};

struct fake_verifier {
	enum fake_verify answer;
	size_t asked;
	char digest[80];
	size_t policy, repo;
};

static int fake_verify(void *ctx, size_t policy, size_t repo, const char *digest,
                       struct decide_verified *out, struct error *err)
{
	static const char *const names[] = {"ok",
	                                    "unsigned",
	                                    "bad-signature",
	                                    "digest-mismatch",
	                                    "untrusted-signer",
	                                    "identity-mismatch",
	                                    "no-transparency-proof"};
	struct fake_verifier *v = ctx;

	v->asked++;
	v->policy = policy;
	v->repo = repo;
	snprintf(v->digest, sizeof(v->digest), "%s", digest);
	if (v->answer == V_FAILS)
		return error_set(err, IG_EFAIL, "GET sha256-2222.sig: 503");
	if (v->answer == V_INVALID)
		return error_set(err, IG_EINVALID, "secret 'keys' key 'cosign.pub': not a key");
	out->status = names[v->answer];
	out->signer = v->answer == V_OK ? "key cosign.pub (sha256:0123456789ab)" : NULL;
	out->detail = v->answer == V_OK ? "" : "what was found";
	return 0;
}

/* The other callbacks, answering through the same fake: HEAD finds every tag at D2. */
struct gate {
	struct fake f;
	struct fake_verifier v;
};

static int gate_head(void *ctx, size_t repo, const char *ref, enum guard_head *result,
                     const char **digest, const char **error)
{
	return fake_head(&((struct gate *)ctx)->f, repo, ref, result, digest, error);
}

static int gate_verify(void *ctx, size_t policy, size_t repo, const char *digest,
                       struct decide_verified *out, struct error *err)
{
	return fake_verify(&((struct gate *)ctx)->v, policy, repo, digest, out, err);
}

static const struct {
	const char *name, *policy, *value;
	enum fake_verify answer;
	bool no_gate; /* decide_io.verify NULL */
	const char *decision, *reason, *written, *signer;
	unsigned warnings;
	bool asked;
} gates[] = {
    {"signed candidate", "apps/signed", IMG ":1.0.0@" D1, V_OK, false, "update", "forward",
     IMG ":1.2.0@" D2, "key cosign.pub (sha256:0123456789ab)", 0, true},
    {"unsigned", "apps/signed", IMG ":1.0.0@" D1, V_UNSIGNED, false, "hold", "unverified", NULL,
     NULL, GUARD_WARN_UNSIGNED, true},
    {"another key", "apps/signed", IMG ":1.0.0@" D1, V_BAD, false, "hold", "unverified", NULL, NULL,
     GUARD_WARN_BAD_SIGNATURE, true},
    {"replayed signature", "apps/signed", IMG ":1.0.0@" D1, V_MISMATCH, false, "hold", "unverified",
     NULL, NULL, GUARD_WARN_DIGEST_MISMATCH, true},
    {"untrusted certificate", "apps/signed", IMG ":1.0.0@" D1, V_UNTRUSTED, false, "hold",
     "unverified", NULL, NULL, GUARD_WARN_UNTRUSTED_SIGNER, true},
    {"wrong identity", "apps/signed", IMG ":1.0.0@" D1, V_IDENTITY, false, "hold", "unverified",
     NULL, NULL, GUARD_WARN_IDENTITY_MISMATCH, true},
    {"no log proof", "apps/signed", IMG ":1.0.0@" D1, V_NOLOG, false, "hold", "unverified", NULL,
     NULL, GUARD_WARN_NO_TRANSPARENCY_PROOF, true},
    {"registry fails while verifying", "apps/signed", IMG ":1.0.0@" D1, V_FAILS, false, "error",
     "registry", NULL, NULL, 0, true},
    {"trust root unusable", "apps/signed", IMG ":1.0.0@" D1, V_INVALID, false, "error", "config",
     NULL, NULL, 0, true},
    {"no gate in this pass", "apps/signed", IMG ":1.0.0@" D1, V_OK, true, "hold", "unverified",
     NULL, NULL, GUARD_WARN_UNSIGNED, false},
    {"up to date asks nothing", "apps/signed", IMG ":1.2.0@" D2, V_UNSIGNED, false, "none",
     "up-to-date", NULL, NULL, 0, false},
    {"held back asks nothing", "apps/signed", IMG ":1.3.0@" D1, V_UNSIGNED, false, "hold",
     "downgrade-blocked", NULL, NULL, GUARD_WARN_CURRENT_MISSING, false},
    {"without verification nothing asked", "apps/semver", IMG ":1.0.0", V_UNSIGNED, false, "update",
     "forward", IMG ":1.2.0", NULL, 0, false},
    {"signed rollback target", "apps/signed-rollback", IMG ":1.2.0", V_OK, false, "rollback",
     "override", IMG ":1.1.0", "key cosign.pub (sha256:0123456789ab)", 0, true},
    {"unsigned rollback target", "apps/signed-rollback", IMG ":1.2.0", V_UNSIGNED, false, "hold",
     "unverified", NULL, NULL, GUARD_WARN_UNSIGNED, true},
};

START_TEST(verify_table)
{
	struct gate g = {.f = {.head = HEAD_OK}, .v = {.answer = gates[_i].answer}};
	struct decide_io io = {gate_head,         fake_created, fake_replaced,
	                       fake_listed_since, gate_verify,  &g};
	struct decide_listing l = {true, true, NULL, listing, 6, NULL};
	struct decide_env env = {cfg, 1767225600, &l, &io};
	struct marker m = {(char *)"apps/web.yaml",
	                   3,
	                   (char *)gates[_i].policy,
	                   MARKER_IMAGE,
	                   MARKER_PLAIN,
	                   0,
	                   0,
	                   (char *)gates[_i].value,
	                   NULL,
	                   NULL,
	                   NULL,
	                   NULL,
	                   NULL,
	                   false};
	struct marker_set set = MARKER_SET_INIT;
	const struct config_policy *pol = config_find_policy_id(cfg, gates[_i].policy);
	struct decide_item it;

	if (gates[_i].no_gate)
		io.verify = NULL;
	ck_assert_ptr_nonnull(pol);
	set.items = &m;
	set.len = 1;
	ck_assert_int_eq(
	    decide_marker(&it, &env, &cfg->automations[0], &set, 0, (size_t)(pol - cfg->policies)),
	    0);
	ck_assert_msg(!strcmp(guard_decision_name(it.d.decision), gates[_i].decision) &&
	                  !strcmp(guard_reason_name(it.d.reason), gates[_i].reason),
	              "%s: got %s/%s (%s), want %s/%s", gates[_i].name,
	              guard_decision_name(it.d.decision), guard_reason_name(it.d.reason),
	              it.d.message, gates[_i].decision, gates[_i].reason);
	ck_assert_pstr_eq(it.new_value, gates[_i].written);
	ck_assert_pstr_eq(it.verified_by, gates[_i].signer);
	ck_assert_uint_eq(it.d.warnings, gates[_i].warnings);
	ck_assert_uint_eq(g.v.asked, gates[_i].asked ? 1 : 0);
	if (gates[_i].asked) { /* the digest HEAD found, which is the digest written */
		ck_assert_str_eq(g.v.digest, D2);
		ck_assert_uint_eq(g.v.policy, (size_t)(pol - cfg->policies));
		ck_assert_uint_eq(g.v.repo, 0);
	}
	if (it.d.reason == GUARD_UNVERIFIED) /* the warning names why, the message the tag */
		ck_assert_msg(strstr(it.d.message, "not verified: ") &&
		                  strstr(it.d.message, guard_warning_name(gates[_i].warnings)) &&
		                  strstr(it.d.message, D2),
		              "%s", it.d.message);
	if (it.d.decision == GUARD_ERROR)
		ck_assert_msg(
		    strstr(it.d.message, "verifying '") &&
		        strstr(it.d.message, gates[_i].answer == V_FAILS ? "503" : "cosign.pub"),
		    "%s", it.d.message);
	decide_item_release(&it);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("decide");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, decide_table, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_loop_test(tc, verify_table, 0, sizeof(gates) / sizeof(gates[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
