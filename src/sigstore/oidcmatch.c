/* matchOIDCIdentity rules compiled with PCRE2: unanchored, as Go's regexp.MatchString. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/sigstore/fulcio.h"
#include "imageguard/sigstore/oidcmatch.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

/* A hostile SAN must not make one match run long: backtracking is bounded. */
#define MATCH_LIMIT 100000
#define DEPTH_LIMIT 1000

struct compiled {
	pcre2_code *issuer, *subject; /* NULL: any */
};

struct oidcmatch {
	struct compiled rules[OIDCMATCH_MAX_RULES];
	size_t n;
	pcre2_match_context *mctx;
	char *text;
};

void oidcmatch_free(struct oidcmatch *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		pcre2_code_free(m->rules[i].issuer);
		pcre2_code_free(m->rules[i].subject);
	}
	pcre2_match_context_free(m->mctx);
	free(m->text);
	free(m);
}

static int compile(pcre2_code **out, const char *what, const char *re, struct error *err)
{
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE off;
	int code;

	*out = NULL;
	if (!re || !*re)
		return 0;
	if (strlen(re) > OIDCMATCH_MAX_PATTERN)
		return error_set(err, IG_ETOOBIG, "%s regex longer than %d bytes", what,
		                 OIDCMATCH_MAX_PATTERN);
	*out = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
	                     PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY, &code,
	                     &off, NULL);
	if (!*out) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		return error_set(err, IG_EINVALID, "%s regex '%.200s': %s at offset %zu", what, re,
		                 (char *)msg, (size_t)off);
	}
	(void)pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE); /* an optimisation only */
	return 0;
}

static int describe(struct oidcmatch *m, const struct oidcmatch_rule *rules, size_t n)
{
	struct buf t = BUF_INIT;

	for (size_t i = 0; i < n; i++)
		if (buf_printf(&t, "%sissuer=%s subject=%s", i ? "; " : "",
		               rules[i].issuer ? rules[i].issuer : "",
		               rules[i].subject ? rules[i].subject : "") < 0) {
			buf_release(&t);
			return IG_EFAIL;
		}
	m->text = buf_detach(&t);
	return m->text ? 0 : IG_EFAIL;
}

int oidcmatch_new(struct oidcmatch **out, const struct oidcmatch_rule *rules, size_t n,
                  struct error *err)
{
	struct oidcmatch *m = NULL;
	int error = 0;

	*out = NULL;
	if (n == 0 || n > OIDCMATCH_MAX_RULES)
		return error_set(err, n ? IG_ETOOBIG : IG_EINVALID,
		                 "matchOIDCIdentity: between 1 and %d rules", OIDCMATCH_MAX_RULES);
	if (!(m = calloc(1, sizeof(*m))) || !(m->mctx = pcre2_match_context_create(NULL)) ||
	    describe(m, rules, n) < 0) {
		error = error_set(err, IG_EFAIL, "matchOIDCIdentity: out of memory");
		goto done;
	}
	pcre2_set_match_limit(m->mctx, MATCH_LIMIT);
	pcre2_set_depth_limit(m->mctx, DEPTH_LIMIT);
	for (; m->n < n; m->n++)
		if ((error = compile(&m->rules[m->n].issuer, "issuer", rules[m->n].issuer, err)) <
		        0 ||
		    (error = compile(&m->rules[m->n].subject, "subject", rules[m->n].subject,
		                     err)) < 0) {
			m->n++; /* free what this rule compiled */
			goto done;
		}
	*out = m;
	m = NULL;
done:
	oidcmatch_free(m);
	return error;
}

static bool matches(const struct oidcmatch *m, const pcre2_code *re, const char *s,
                    pcre2_match_data *md)
{
	return !re || pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, m->mctx) >= 0;
}

bool oidcmatch_test(const struct oidcmatch *m, const struct fulcio_identity *id)
{
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	bool ok = false;

	for (size_t i = 0; md && i < m->n && !ok; i++) {
		const struct compiled *r = &m->rules[i];

		if (!matches(m, r->issuer, id->issuer, md))
			continue;
		for (size_t k = 0; k < id->n_sans && !ok; k++)
			ok = matches(m, r->subject, id->sans[k], md);
		/* no subject rule and no SAN: cosign accepts; a Fulcio leaf always has one */
		if (!r->subject && id->n_sans == 0)
			ok = true;
	}
	pcre2_match_data_free(md);
	return ok;
}

const char *oidcmatch_text(const struct oidcmatch *m)
{
	return m->text;
}
