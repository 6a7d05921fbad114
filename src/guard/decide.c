/* One marker's decision from its inputs: the guard's table, then the HEAD and build times it
 * asks for through the io callbacks, then the value to write. No registry or Git here. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/guard/decide.h"
#include "imageguard/guard/guard.h"
#include "imageguard/config/config.h"
#include "imageguard/markers/markers.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static enum guard_digest_mode digest_mode(const struct marker *m, enum config_reflect r)
{
	switch (m->part) {
	case MARKER_IMAGE:
		return r == CONFIG_REFLECT_ALWAYS           ? GUARD_DIGEST_ALWAYS
		       : r == CONFIG_REFLECT_IF_NOT_PRESENT ? GUARD_DIGEST_IF_MISSING
		                                            : GUARD_DIGEST_NONE;
	case MARKER_DIGEST:
		return r == CONFIG_REFLECT_IF_NOT_PRESENT ? GUARD_DIGEST_IF_MISSING
		                                          : GUARD_DIGEST_ALWAYS;
	default:
		return GUARD_DIGEST_NONE;
	}
}

static size_t repository_of(const struct config *cfg, const struct config_policy *pol)
{
	return (size_t)(pol->repository - cfg->repositories);
}

/* Whether a whole-image value names another repository than image. The same repository
 * spelled another way (`nginx` for `docker.io/library/nginx`) is not another one. */
static bool image_name_changed(const char *value, const char *image)
{
	struct imageref a = IMAGEREF_INIT, b = IMAGEREF_INIT;
	struct imageref_parts p;
	struct error err = ERROR_INIT;
	bool changed = true;
	char *name;

	imageref_split(&p, value, strlen(value));
	if (p.name_len == strlen(image) && memcmp(value, image, p.name_len) == 0)
		return false;
	if (!(name = strndup(value, p.name_len)))
		return true;
	if (imageref_parse(&a, name, 0, &err) == 0 && imageref_parse(&b, image, 0, &err) == 0)
		changed = strcmp(a.registry, b.registry) || strcmp(a.repository, b.repository);
	imageref_release(&a);
	imageref_release(&b);
	free(name);
	return changed;
}

static void fill_input(struct decide_item *it, const struct decide_env *env,
                       const struct config_automation *a, const struct marker *m)
{
	const struct config_policy *pol = &env->cfg->policies[it->policy];
	const struct decide_listing *l = &env->listings[repository_of(env->cfg, pol)];
	struct guard_input *in = &it->in;

	*in = (struct guard_input)GUARD_INPUT_INIT;
	in->policy = pol->policy;
	in->policy_suspended = pol->suspend;
	in->repository_suspended = pol->repository->suspend;
	in->automation_suspended = a->suspend;
	in->listing_ok = l->done && l->ok;
	in->listing_error =
	    l->done ? (l->ok ? NULL : l->error) : "repository not listed in this pass";
	if (in->listing_ok) {
		in->tags = l->tags;
		in->tags_len = l->tags_len;
		in->listing_key = l->key;
	}
	in->rollback_to = pol->override.tag;
	in->rollback_reason = pol->override.reason;
	in->has_until = pol->override.has_until;
	in->until = pol->override.until;
	in->now = env->now;
	in->current_tag = it->current_tag;
	in->current_digest = it->current_digest;
	in->digest_mode = digest_mode(m, pol->reflect);
	in->tracked_tag = pol->kind == CONFIG_POLICY_DIGEST ? pol->digest_tag : NULL;
	in->settle_s = pol->settle_s;
	if (m->part == MARKER_NAME) {
		in->current_name = m->value;
		in->image = pol->repository->image;
	}
	in->name_changed =
	    m->part == MARKER_IMAGE && image_name_changed(m->value, pol->repository->image);
}

/* `repo:tag[@digest]`, `tag`, `digest` or `repo`: the value a writing decision puts at m. */
static int new_value(char **out, const struct decide_item *it, const struct marker *m,
                     const struct config_policy *pol)
{
	const struct guard_decision *d = &it->d;
	struct error err = ERROR_INIT;
	struct buf b = BUF_INIT;
	const char *digest = NULL;
	char *value = NULL;
	int error = 0;

	*out = NULL;
	switch (m->part) {
	case MARKER_IMAGE:
		if (d->write_digest && *d->digest)
			digest = d->digest;
		else if (it->current_digest && it->in.name_changed)
			digest =
			    *d->digest ? d->digest : NULL; /* a pin names the new repository's */
		else if (it->current_tag && it->current_digest &&
		         strcmp(it->current_tag, d->candidate) == 0)
			digest = it->current_digest; /* same tag: its pinned digest stays valid */
		/* the policy's image, as Flux writes it, whatever repository the marker named */
		if ((error = markers_value_for(&value, m, pol->repository->image, d->candidate,
		                               digest, &err)) == 0)
			error = buf_puts(&b, value);
		free(value);
		break;
	case MARKER_TAG:
		error = buf_puts(&b, d->candidate);
		break;
	case MARKER_DIGEST:
		error = buf_puts(&b, d->write_digest && *d->digest ? d->digest : m->value);
		break;
	case MARKER_NAME:
		error = buf_puts(&b, pol->repository->image);
		break;
	}
	if (error < 0) {
		buf_release(&b);
		return error == IG_EINVALID ? IG_EINVALID : IG_EFAIL;
	}
	if (strcmp(b.data, m->value) == 0) {
		buf_release(&b);
		return 0;
	}
	*out = buf_detach(&b);
	return 0;
}

/* A digest-tracked policy's moved digest: the build times of the committed and the new image
 * decide (guard_confirm_created). */
static int confirm_created(struct decide_item *it, const struct decide_env *env)
{
	const struct config_policy *pol = &env->cfg->policies[it->policy];
	size_t repo = repository_of(env->cfg, pol);
	const struct decide_io *io = env->io;

	assert(it->current_digest); /* guard asks only when a committed digest moved */
	if (io->created(io->ctx, repo, it->current_digest, pol->digest_platform, &it->cur_created) <
	        0 ||
	    io->created(io->ctx, repo, it->d.digest, pol->digest_platform, &it->cand_created) < 0)
		return IG_EFAIL;
	guard_confirm_created(&it->d, &it->in, it->cur_created, it->cand_created);
	return 0;
}

static int confirm_head(struct decide_item *it, const struct decide_env *env)
{
	const struct config_policy *pol = &env->cfg->policies[it->policy];
	const char *digest = NULL, *error = NULL;
	enum guard_head result;

	if (env->io->head(env->io->ctx, repository_of(env->cfg, pol),
	                  guard_confirm_ref(&it->d, &it->in), &result, &digest, &error) < 0)
		return IG_EFAIL;
	guard_confirm(&it->d, &it->in, result, digest, error);
	return 0;
}

/* The signature gate (CONTRACT §12) over the digest the decision would write: its HEAD's. */
static int confirm_verified(struct decide_item *it, const struct decide_env *env)
{
	const struct config_policy *pol = &env->cfg->policies[it->policy];
	struct decide_verified v = {"unsigned", NULL, "no verification in this pass"};
	struct error err = ERROR_INIT;
	int rc;

	if (!*it->d.digest) {
		v.detail = "the registry named no digest for the candidate";
	} else if (env->io->verify &&
	           (rc = env->io->verify(env->io->ctx, it->policy, repository_of(env->cfg, pol),
	                                 it->d.digest, &v, &err)) < 0) {
		guard_fail(&it->d, rc == IG_EINVALID ? GUARD_CONFIG : GUARD_REGISTRY,
		           "verifying '%s' (%s): %s", it->d.candidate, it->d.digest, err.msg);
		return 0;
	}
	guard_confirm_verified(&it->d, v.status, v.detail);
	if (guard_writes(&it->d) && v.signer && !(it->verified_by = strdup(v.signer)))
		return IG_EFAIL;
	return 0;
}

int decide_marker_begin(struct decide_item *out, const struct decide_env *env,
                        const struct config_automation *a, const struct marker_set *s,
                        size_t marker, size_t policy)
{
	const struct marker *m = &s->items[marker];
	struct marker_current cur;
	struct error err = ERROR_INIT;

	memset(out, 0, sizeof(*out));
	out->marker = marker;
	out->policy = policy;
	if (markers_current(&cur, s, m) < 0)
		return IG_EFAIL;
	out->current_tag = cur.tag;
	out->current_digest = cur.digest;
	fill_input(out, env, a, m);
	if (guard_decide(&out->d, &out->in, &err) < 0)
		return IG_EFAIL;
	/* the listing is the caller's to reopen: nothing after the guard's table reads it */
	out->in.tags = NULL;
	out->in.tags_len = 0;
	return 0;
}

const char *decide_head_ref(const struct decide_item *it)
{
	return it->d.needs_confirmation ? guard_confirm_ref(&it->d, &it->in) : NULL;
}

int decide_marker_finish(struct decide_item *out, const struct decide_env *env,
                         const struct config_automation *a, const struct marker_set *s)
{
	const struct marker *m = &s->items[out->marker];
	const struct config_policy *pol = &env->cfg->policies[out->policy];
	struct error err = ERROR_INIT;
	int rc;

	if (out->d.needs_confirmation && confirm_head(out, env) < 0)
		return IG_EFAIL;
	if (out->d.needs_created && confirm_created(out, env) < 0)
		return IG_EFAIL;
	if (out->d.needs_history) {
		bool replaced = false;

		if (env->io->replaced(env->io->ctx, a, m, out->d.digest, &replaced, &err) < 0)
			guard_fail(&out->d, GUARD_GIT, "%s:%zu: history: %s", m->file, m->line,
			           err.msg);
		else
			guard_confirm_history(&out->d, replaced);
	}
	if (out->d.needs_settle) {
		time_t since;

		if (env->io->listed_since(env->io->ctx, out->policy, out->d.candidate,
		                          *out->d.digest ? out->d.digest : NULL, &since) < 0)
			return IG_EFAIL;
		guard_confirm_settle(&out->d, &out->in, since);
	}
	if (guard_writes(&out->d) && pol->verify.provider && confirm_verified(out, env) < 0)
		return IG_EFAIL;
	if (guard_writes(&out->d) && (rc = new_value(&out->new_value, out, m, pol)) < 0) {
		if (rc != IG_EINVALID)
			return IG_EFAIL;
		guard_fail(&out->d, GUARD_CONFIG, "%s:%zu: cannot build the new value", m->file,
		           m->line);
	}
	return 0;
}

int decide_marker(struct decide_item *out, const struct decide_env *env,
                  const struct config_automation *a, const struct marker_set *s, size_t marker,
                  size_t policy)
{
	if (decide_marker_begin(out, env, a, s, marker, policy) < 0)
		return IG_EFAIL;
	return decide_marker_finish(out, env, a, s);
}

void decide_item_release(struct decide_item *it)
{
	if (!it)
		return;
	free(it->current_tag);
	free(it->current_digest);
	free(it->new_value);
	free(it->verified_by);
	it->current_tag = it->current_digest = it->new_value = it->verified_by = NULL;
}
