/* Tag policies as Flux's ImagePolicy defines them: exclusion list, pcre2 filter, extract
 * template, then one order (semver range, numerical, alphabetical). Every order is a total
 * order over tags: equal ranks fall back to the byte-wise greater original tag, so the pick and
 * the forward/backward verdict never depend on input order. Picking is one streaming pass with
 * no per-tag allocation; ordering pre-computes a sort key per candidate. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/policy/number.h"
#include "imageguard/policy/policy.h"
#include "imageguard/policy/sigtag.h"
#include "imageguard/policy/semver.h"
#include "imageguard/template/template.h"
#include "imageguard/util/strvec.h"

/* pcre2's JIT code reads words past what memcheck considers initialised (by design); under
 * valgrind the interpreter runs instead, which matches exactly the same way. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#define DEFAULT_EXCLUDE "^.*\\.sig$"
#define VALUE_MAX (64 * 1024) /* an extracted value longer than this is skipped, not ordered */

/* A piece of the extract template: literal text, or a capture group (Go's Expand). */
struct tmpl_part {
	const char *lit; /* NULL for a group */
	size_t len;
	uint32_t group;
};

/* policy_select_keyed's last answer. */
struct policy_memo {
	bool set; /* r is the pick over the listing with key */
	unsigned char key[POLICY_LISTING_KEY_LEN];
	struct policy_result r;
};

struct policy {
	struct policy_memo *memo; /* NULL until a keyed select; a cache, not the policy */
	pcre2_code *pattern;
	char *pattern_src; /* as written, for the error a match can end in */
	pcre2_code **exclude;
	char **exclude_src;
	size_t nexclude;
	char *extract; /* template text, owned; parts point into it */
	struct tmpl_part *parts;
	size_t nparts;
	enum policy_kind kind;
	bool ascending;
	struct semver_range *range;
};

/* One evaluated tag: the original, the value ordered and its pre-computed key. */
struct cand {
	const struct policy *p; /* for qsort, which has no context argument in C11 */
	const char *tag;
	size_t tag_len;
	const char *val;
	size_t val_len;
	union {
		struct semver sv;
		struct number num;
	} key;
};

/* The first match that ended in an error (its limit, or any PCRE2 error but no-match). */
struct rx_failure {
	int rc; /* 0: none; else PCRE2's error code */
	const char *what, *src, *tag;
	size_t tag_len;
};

/* Per-call scratch: match data and the buffer extract expands into. */
struct scratch {
	pcre2_match_data *md;
	char *buf;
	size_t len, cap;
	bool oom; /* an allocation failed: the result cannot be trusted */
	struct rx_failure rx;
};

/* OUT_NOT_NUMBER is a skip that fails a numerical policy, as in Flux; an over-long tag or value
 * is only skipped (it cannot be an OCI tag); OUT_ERROR is a match that failed (sc->rx). */
enum outcome { OUT_FILTERED, OUT_SKIPPED, OUT_NOT_NUMBER, OUT_CANDIDATE, OUT_ERROR };

/* ---- compiling ---- */

static int compile_re(pcre2_code **out, const char *what, const char *re, struct error *err)
{
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE off;
	int code;

	*out = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
	                     PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY, &code,
	                     &off, NULL);
	if (!*out) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		return error_set(err, IG_EINVALID, "%s '%.200s': %s at offset %zu", what, re,
		                 (char *)msg, (size_t)off);
	}
	/* JIT is an optimisation: without it (no JIT support) pcre2_match interprets. */
	if (!RUNNING_ON_VALGRIND)
		(void)pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE);
	return 0;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Resolves a $name/${name} reference to a group number of the pattern. */
static int resolve_group(uint32_t *out, const struct policy *p, const char *name, size_t len,
                         struct error *err)
{
	uint32_t ncap = 0;
	char tmp[256];
	bool digits = true;
	int n;

	for (size_t k = 0; k < len; k++)
		digits = digits && name[k] >= '0' && name[k] <= '9';
	pcre2_pattern_info(p->pattern, PCRE2_INFO_CAPTURECOUNT, &ncap);
	if (digits) {
		uint64_t v = 0;

		for (size_t k = 0; k < len && v <= ncap; k++)
			v = v * 10 + (uint64_t)(name[k] - '0');
		if (v > ncap)
			return error_set(
			    err, IG_EINVALID,
			    "extract '%.200s': group %.*s does not exist in the pattern",
			    p->extract, (int)len, name);
		*out = (uint32_t)v;
		return 0;
	}
	if (len >= sizeof(tmp))
		len = sizeof(tmp) - 1;
	memcpy(tmp, name, len);
	tmp[len] = '\0';
	n = pcre2_substring_number_from_name(p->pattern, (PCRE2_SPTR)tmp);
	if (n < 0)
		return error_set(err, IG_EINVALID,
		                 "extract '%.200s': group '%s' does not exist in the pattern",
		                 p->extract, tmp);
	*out = (uint32_t)n;
	return 0;
}

static int add_part(struct policy *p, const char *lit, size_t len, uint32_t group)
{
	struct tmpl_part *np = realloc(p->parts, (p->nparts + 1) * sizeof(*np));

	if (!np)
		return IG_EFAIL;
	p->parts = np;
	p->parts[p->nparts++] = (struct tmpl_part){lit, len, group};
	return 0;
}

/* Splits the template into literals and group references: `$$` is a literal $, `$name` takes
 * the longest run of [A-Za-z0-9_], `${name}` is braced. Anything else after $ is an error. */
static int compile_template(struct policy *p, struct error *err)
{
	const char *s = p->extract;
	size_t i = 0, lit = 0;

	while (s[i]) {
		size_t start, end, next;
		uint32_t g;
		int rc;

		if (s[i] != '$') {
			i++;
			continue;
		}
		if (i > lit && add_part(p, s + lit, i - lit, 0) < 0)
			return error_oom(err);
		if (s[i + 1] == '$') {
			lit = i + 1;
			i += 2;
			continue;
		}
		if (s[i + 1] == '{') {
			start = i + 2;
			end = start;
			while (is_name_char(s[end]))
				end++;
			if (s[end] != '}' || end == start)
				return error_set(err, IG_EINVALID,
				                 "extract '%.200s': malformed ${...} at offset %zu",
				                 s, i);
			next = end + 1;
		} else {
			start = end = i + 1;
			while (is_name_char(s[end]))
				end++;
			if (end == start)
				return error_set(
				    err, IG_EINVALID,
				    "extract '%.200s': '$' at offset %zu names no group "
				    "(use $$ for a literal $)",
				    s, i);
			next = end;
		}
		if ((rc = resolve_group(&g, p, s + start, end - start, err)) < 0)
			return rc;
		if (add_part(p, NULL, 0, g) < 0)
			return error_oom(err);
		i = lit = next;
	}
	if (i > lit && add_part(p, s + lit, i - lit, 0) < 0)
		return error_oom(err);
	return 0;
}

/* DEFAULT_EXCLUDE, compiled once for every policy whose list has it (Flux's default list, which
 * config gives every repository without one): a compiled and JIT-ed copy per policy cost
 * ~1 KiB each, and matching only reads the code. */
static pcre2_code *shared_default;
static struct error shared_default_err = ERROR_INIT;
static pthread_once_t shared_default_once = PTHREAD_ONCE_INIT;

static void compile_shared_default(void)
{
	(void)compile_re(&shared_default, "exclude", DEFAULT_EXCLUDE, &shared_default_err);
}

/* The shared DEFAULT_EXCLUDE (compiled on first use), or NULL with err set. */
static pcre2_code *default_exclude(struct error *err)
{
	pthread_once(&shared_default_once, compile_shared_default);
	if (!shared_default)
		error_set(err, IG_EFAIL, "%s", shared_default_err.msg);
	return shared_default;
}

static int compile_excludes(struct policy *p, const struct policy_spec *spec, struct error *err)
{
	static const char *const defaults[] = {DEFAULT_EXCLUDE};
	const char *const *list = spec->exclude ? spec->exclude : defaults;
	size_t n = spec->exclude ? spec->exclude_len : 1;
	int rc;

	if (n == 0)
		return 0;
	if (!(p->exclude = calloc(n, sizeof(*p->exclude))) ||
	    !(p->exclude_src = calloc(n + 1, sizeof(*p->exclude_src)))) /* NULL-terminated */
		return error_oom(err);
	for (size_t k = 0; k < n; k++) {
		if (!(p->exclude_src[k] = strdup(list[k])))
			return error_oom(err);
		if (strcmp(list[k], DEFAULT_EXCLUDE) == 0) {
			if (!(p->exclude[k] = default_exclude(err)))
				return IG_EFAIL;
		} else if ((rc = compile_re(&p->exclude[k], "exclude", list[k], err)) < 0) {
			return rc;
		}
		p->nexclude++;
	}
	return 0;
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	pcre2_code_free(p->pattern);
	free(p->pattern_src);
	for (size_t k = 0; k < p->nexclude; k++)
		if (p->exclude[k] != shared_default)
			pcre2_code_free(p->exclude[k]);
	/* NULL-terminated: also a source copied before its compile failed */
	for (size_t k = 0; p->exclude_src && p->exclude_src[k]; k++)
		free(p->exclude_src[k]);
	free(p->exclude_src);
	free(p->exclude);
	free(p->extract);
	free(p->parts);
	semver_range_free(p->range);
	if (p->memo)
		policy_result_release(&p->memo->r);
	free(p->memo);
	free(p);
}

static int compile_extract(struct policy *p, const char *extract, struct error *err)
{
	if (!p->pattern)
		return error_set(err, IG_EINVALID,
		                 "extract '%.200s': needs a pattern to extract from", extract);
	if (!(p->extract = strdup(extract)))
		return error_oom(err);
	return compile_template(p, err);
}

int policy_new(struct policy **out, const struct policy_spec *spec, struct error *err)
{
	struct policy *p = calloc(1, sizeof(*p));
	int rc = 0;

	*out = NULL;
	if (!p)
		return error_oom(err);
	p->kind = spec->kind;
	p->ascending = spec->ascending;
	if (spec->pattern && (rc = compile_re(&p->pattern, "pattern", spec->pattern, err)) < 0)
		goto done;
	if (spec->pattern && !(p->pattern_src = strdup(spec->pattern))) {
		rc = error_oom(err);
		goto done;
	}
	if ((rc = compile_excludes(p, spec, err)) < 0)
		goto done;
	if (spec->extract && spec->extract[0] && (rc = compile_extract(p, spec->extract, err)) < 0)
		goto done;
	if (p->kind == POLICY_SEMVER && !spec->range) {
		rc = error_set(err, IG_EINVALID, "semver policy: a range is required");
		goto done;
	}
	if (p->kind == POLICY_SEMVER && (rc = semver_range_new(&p->range, spec->range, err)) < 0)
		goto done;
	*out = p;
	p = NULL;
done:
	policy_free(p);
	return rc;
}

/* ---- evaluating one tag ---- */

/* Width of the UTF-8 sequence at s (1 for an invalid byte), as Go's DecodeRuneInString. */
static size_t utf8_width(const unsigned char *s, size_t n)
{
	size_t w = s[0] < 0x80                   ? 1
	           : s[0] >= 0xf0 && s[0] < 0xf5 ? 4
	           : s[0] >= 0xe0                ? 3
	           : s[0] >= 0xc2                ? 2
	                                         : 1;

	if (w > n)
		return 1;
	for (size_t k = 1; k < w; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 1;
	return w;
}

/* Tenant patterns backtrack within the template budget's limits (match and depth), and JIT-ed
 * code on PCRE2's own 32 KiB machine-stack area (no larger JIT stack is assigned): a pattern
 * over either limit is an error (sc->rx), never a silent no-match. Read-only once made, so
 * shared by every thread. */
static pcre2_match_context *shared_mctx;
static pthread_once_t shared_mctx_once = PTHREAD_ONCE_INIT;

static void make_shared_mctx(void)
{
	if (!(shared_mctx = pcre2_match_context_create(NULL)))
		return;
	pcre2_set_match_limit(shared_mctx, TEMPLATE_MATCH_LIMIT);
	pcre2_set_depth_limit(shared_mctx, TEMPLATE_MATCH_DEPTH_LIMIT);
	pcre2_jit_stack_assign(shared_mctx, NULL, NULL);
}

/* 1 matched, 0 no match, -1 failed (the first failure is kept in sc->rx). */
static int re_match(const pcre2_code *re, const char *what, const char *src, struct scratch *sc,
                    const char *s, size_t len, uint32_t mopt)
{
	int rc = PCRE2_ERROR_NOMEMORY;

	pthread_once(&shared_mctx_once, make_shared_mctx);
	if (shared_mctx)
		rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, mopt, sc->md, shared_mctx);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (!sc->rx.rc)
		sc->rx = (struct rx_failure){rc, what, src, s, len};
	return -1;
}

/* The one-line error for sc->rx: the pattern, the tag and what PCRE2 said. */
static int rx_error(struct error *err, const struct scratch *sc)
{
	PCRE2_UCHAR msg[160];
	const struct rx_failure *f = &sc->rx;

	pcre2_get_error_message(f->rc, msg, sizeof(msg));
	return error_set(err, IG_ETOOBIG, "%s '%.200s': tag '%.*s%s': %s", f->what, f->src,
	                 (int)(f->tag_len > 60 ? 60 : f->tag_len), f->tag,
	                 f->tag_len > 60 ? "..." : "", (char *)msg);
}

/* True for valid UTF-8: then pcre2 may skip its own O(n) check on every call (PCRE2_NO_UTF_CHECK);
 * invalid tags still match safely, only slower, thanks to PCRE2_MATCH_INVALID_UTF. */
static bool utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t w;

		if (s[i] < 0x80) {
			i++;
			continue;
		}
		w = utf8_width(s + i, len - i);
		if (w == 1)
			return false;
		if ((w == 3 &&
		     ((s[i] == 0xe0 && s[i + 1] < 0xa0) || (s[i] == 0xed && s[i + 1] >= 0xa0))) ||
		    (w == 4 &&
		     ((s[i] == 0xf0 && s[i + 1] < 0x90) || (s[i] == 0xf4 && s[i + 1] >= 0x90))))
			return false; /* overlong, surrogate, past U+10FFFF */
		i += w;
	}
	return true;
}

static bool buf_add(struct scratch *sc, const char *s, size_t n)
{
	if (sc->len + n > VALUE_MAX)
		return false;
	if (sc->len + n + 1 > sc->cap) {
		size_t cap = sc->cap ? sc->cap : 256;
		char *b;

		while (cap < sc->len + n + 1)
			cap *= 2;
		if (!(b = realloc(sc->buf, cap))) {
			sc->oom = true;
			return false;
		}
		sc->buf = b;
		sc->cap = cap;
	}
	memcpy(sc->buf + sc->len, s, n);
	sc->len += n;
	sc->buf[sc->len] = '\0';
	return true;
}

static bool expand(const struct policy *p, struct scratch *sc, const char *s)
{
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(sc->md);
	uint32_t pairs = pcre2_get_ovector_count(sc->md);

	for (size_t k = 0; k < p->nparts; k++) {
		const struct tmpl_part *t = &p->parts[k];

		if (t->lit) {
			if (!buf_add(sc, t->lit, t->len))
				return false;
		} else if (t->group < pairs && ov[2 * t->group] != PCRE2_UNSET) {
			if (!buf_add(sc, s + ov[2 * t->group],
			             ov[2 * t->group + 1] - ov[2 * t->group]))
				return false;
		}
	}
	return true;
}

/* What Flux computes (FindStringSubmatchIndex, then Expand): the template expanded with the
 * groups of the first match, and nothing of the tag outside it. False when the pattern does
 * not match (*matched false) or the value is over the cap. */
static bool extract_value(const struct policy *p, struct scratch *sc, const char *s, size_t len,
                          uint32_t mopt, bool *matched)
{
	sc->len = 0;
	*matched = re_match(p->pattern, "filterTags.pattern", p->pattern_src, sc, s, len, mopt) > 0;
	if (!*matched)
		return false;
	if (!buf_add(sc, "", 0))
		return false; /* an empty value still needs its terminator */
	return expand(p, sc, s);
}

static int sign(int c)
{
	return (c > 0) - (c < 0);
}

static int bytes_compare(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return sign(c);
	return (alen > blen) - (alen < blen);
}

/* Printable ASCII only: no newline, no multi-byte sequence, where DEFAULT_EXCLUDE reads as
 * plain "ends with .sig" (every OCI tag is such a string). */
static bool printable_ascii(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* DEFAULT_EXCLUDE (^.*\.sig$) on a printable ASCII tag, without the regex engine. */
static bool default_excludes(const char *s, size_t len)
{
	return len >= 4 && memcmp(s + len - 4, ".sig", 4) == 0;
}

/* Runs exclusion, filter and extract on one tag. On OUT_CANDIDATE c holds the value (in
 * sc->buf when extracted); OUT_SKIPPED is a tag or value over its cap. */
static enum outcome filter_value(const struct policy *p, struct scratch *sc, struct cand *c,
                                 const char *tag, size_t len)
{
	uint32_t mopt;
	bool matched, ascii;

	c->p = p;
	c->tag = tag;
	c->tag_len = len;
	if (len > POLICY_TAG_MAX) /* bounded work per tag, whatever the input */
		return OUT_SKIPPED;
	if (sigtag_is_signature(tag, len)) /* CONTRACT §12: never a candidate */
		return OUT_FILTERED;
	/* printable ASCII is valid UTF-8: one pass over the tag answers both */
	ascii = printable_ascii(tag, len);
	mopt = ascii || utf8_valid((const unsigned char *)tag, len) ? PCRE2_NO_UTF_CHECK : 0;
	for (size_t k = 0; k < p->nexclude; k++) {
		int m = p->exclude[k] == shared_default && ascii
		            ? default_excludes(tag, len)
		            : re_match(p->exclude[k], "exclusionList", p->exclude_src[k], sc, tag,
		                       len, mopt);

		if (m)
			return m < 0 ? OUT_ERROR : OUT_FILTERED;
	}
	if (p->pattern && p->parts) {
		if (!extract_value(p, sc, tag, len, mopt, &matched))
			return sc->rx.rc ? OUT_ERROR : matched ? OUT_SKIPPED : OUT_FILTERED;
		c->val = sc->buf;
		c->val_len = sc->len;
	} else {
		int m = p->pattern ? re_match(p->pattern, "filterTags.pattern", p->pattern_src, sc,
		                              tag, len, mopt)
		                   : 1;

		if (m <= 0)
			return m < 0 ? OUT_ERROR : OUT_FILTERED;
		c->val = tag;
		c->val_len = len;
	}
	return OUT_CANDIDATE;
}

/* filter_value, then the order's parse (and, when ranged, the semver range). */
static enum outcome evaluate(const struct policy *p, struct scratch *sc, struct cand *c,
                             const char *tag, size_t len, bool ranged)
{
	enum outcome o = filter_value(p, sc, c, tag, len);

	if (o != OUT_CANDIDATE)
		return o;
	switch (p->kind) {
	case POLICY_SEMVER:
		if (semver_parse(&c->key.sv, c->val, c->val_len, NULL) < 0 ||
		    (ranged && !semver_range_matches(p->range, &c->key.sv)))
			return OUT_SKIPPED;
		break;
	case POLICY_NUMERICAL:
		if (number_parse(&c->key.num, c->val, c->val_len) < 0)
			return OUT_NOT_NUMBER;
		break;
	case POLICY_ALPHABETICAL:
		break;
	}
	return OUT_CANDIDATE;
}

/* >0 when a's value ranks ahead of b's under the order, 0 when the order ties them (the same
 * version spelled differently, equal numbers, equal extracted values). */
static int order_rank(const struct policy *p, const struct cand *a, const struct cand *b)
{
	int c = 0;

	switch (p->kind) {
	case POLICY_SEMVER:
		c = semver_compare(&a->key.sv, &b->key.sv);
		break;
	case POLICY_NUMERICAL:
		c = number_compare(&a->key.num, &b->key.num);
		break;
	case POLICY_ALPHABETICAL:
		c = bytes_compare(a->val, a->val_len, b->val, b->val_len);
		break;
	}
	return p->kind != POLICY_SEMVER && !p->ascending ? -c : c;
}

/* >0 when a ranks ahead of b (would be picked over it); never 0 for different tags. */
static int rank(const struct policy *p, const struct cand *a, const struct cand *b)
{
	int c = order_rank(p, a, b);

	return c != 0 ? c : bytes_compare(a->tag, a->tag_len, b->tag, b->tag_len);
}

static int scratch_init(struct scratch *sc, const struct policy *p)
{
	memset(sc, 0, sizeof(*sc));
	sc->md = p->pattern ? pcre2_match_data_create_from_pattern(p->pattern, NULL)
	                    : pcre2_match_data_create(1, NULL);
	return sc->md ? 0 : IG_EFAIL;
}

static void scratch_release(struct scratch *sc)
{
	pcre2_match_data_free(sc->md);
	free(sc->buf);
	memset(sc, 0, sizeof(*sc));
}

/* ---- picking ---- */

int policy_select(struct policy_result *out, const struct policy *p, const char *const *tags,
                  size_t n, struct error *err)
{
	struct scratch sc[2];
	struct cand best, cur;
	int bi = -1, ci = 0, rc = 0;

	memset(out, 0, sizeof(*out));
	memset(sc, 0, sizeof(sc));
	if (scratch_init(&sc[0], p) < 0 || scratch_init(&sc[1], p) < 0) {
		rc = error_oom(err);
		goto done;
	}
	for (size_t k = 0; k < n; k++) {
		switch (evaluate(p, &sc[ci], &cur, tags[k], strlen(tags[k]), true)) {
		case OUT_ERROR:
			rc = rx_error(err, &sc[ci]);
			goto done;
		case OUT_FILTERED:
			continue;
		case OUT_NOT_NUMBER:
			if (!out->unordered && !(out->unordered = strdup(tags[k])))
				sc[0].oom = true;
			/* fall through */
		case OUT_SKIPPED:
			out->skipped++;
			continue;
		case OUT_CANDIDATE:
			break;
		}
		out->candidates++;
		if (bi < 0 || rank(p, &cur, &best) > 0) {
			/* the value may live in sc[ci]: keep that buffer, scribble on the other */
			best = cur;
			bi = ci;
			ci = 1 - ci;
		}
	}
	/* Flux fails a numerical policy over a non-number: nothing is picked then. */
	if (sc[0].oom || sc[1].oom ||
	    (bi >= 0 && !out->unordered && !(out->latest = strdup(best.tag))))
		rc = error_oom(err);
done:
	if (rc < 0)
		policy_result_release(out);
	scratch_release(&sc[0]);
	scratch_release(&sc[1]);
	return rc;
}

void policy_result_release(struct policy_result *r)
{
	free(r->latest);
	free(r->unordered);
	r->latest = r->unordered = NULL;
	r->candidates = r->skipped = 0;
}

static int result_copy(struct policy_result *out, const struct policy_result *r)
{
	*out = *r;
	out->latest = r->latest ? strdup(r->latest) : NULL;
	out->unordered = r->unordered ? strdup(r->unordered) : NULL;
	if ((r->latest && !out->latest) || (r->unordered && !out->unordered)) {
		policy_result_release(out);
		return IG_EFAIL;
	}
	return 0;
}

int policy_select_keyed(struct policy_result *out, const struct policy *p, const char *const *tags,
                        size_t n, const unsigned char *key, struct error *err)
{
	struct policy_memo *m = p->memo;
	int rc;

	if (!key)
		return policy_select(out, p, tags, n, err);
	if (m && m->set && memcmp(m->key, key, POLICY_LISTING_KEY_LEN) == 0)
		return result_copy(out, &m->r) < 0 ? error_oom(err) : 0;
	if ((rc = policy_select(out, p, tags, n, err)) < 0)
		return rc;
	if (!m && !(m = calloc(1, sizeof(*m))))
		return 0;
	policy_result_release(&m->r);
	/* the policy is the caller's const, its memo is not: a cache beside the compiled policy */
	((struct policy *)p)->memo = m;
	if ((m->set = result_copy(&m->r, out) == 0)) /* out of memory: forgotten */
		memcpy(m->key, key, POLICY_LISTING_KEY_LEN);
	return 0;
}

/* Extracted values for policy_order live in fixed blocks so keys never move. */
struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	char data[];
};

static const char *arena_copy(struct arena_block **head, const char *s, size_t n)
{
	struct arena_block *b = *head;

	if (!b || b->cap - b->used < n + 1) {
		size_t cap = n + 1 > 65536 ? n + 1 : 65536;

		if (!(b = malloc(sizeof(*b) + cap)))
			return NULL;
		b->next = *head;
		b->used = 0;
		b->cap = cap;
		*head = b;
	}
	memcpy(b->data + b->used, s, n);
	b->data[b->used + n] = '\0';
	b->used += n + 1;
	return b->data + b->used - n - 1;
}

/* Re-points a key computed on `from` to the same bytes at `to`. */
static void rebase(struct cand *c, const struct policy *p, const char *from, const char *to)
{
#define MOVE(ptr)                                                                                  \
	do {                                                                                       \
		if ((ptr) && (ptr) >= from && (ptr) <= from + c->val_len)                          \
			(ptr) = to + ((ptr)-from);                                                 \
	} while (0)
	c->val = to;
	if (p->kind == POLICY_SEMVER) {
		MOVE(c->key.sv.major.p);
		MOVE(c->key.sv.minor.p);
		MOVE(c->key.sv.patch.p);
		MOVE(c->key.sv.pre);
		MOVE(c->key.sv.build);
	} else if (p->kind == POLICY_NUMERICAL) {
		MOVE(c->key.num.d1);
		MOVE(c->key.num.d2);
	}
#undef MOVE
}

static int order_cmp(const void *a, const void *b)
{
	return -rank(((const struct cand *)a)->p, a, b); /* best first */
}

int policy_order(struct strvec *out, const struct policy *p, const char *const *tags, size_t n,
                 struct error *err)
{
	struct arena_block *arena = NULL;
	struct scratch sc;
	struct cand *cands = NULL;
	size_t nc = 0;
	int rc = IG_EFAIL;

	if (scratch_init(&sc, p) < 0 || (n && !(cands = malloc(n * sizeof(*cands)))))
		goto oom;
	for (size_t k = 0; k < n; k++) {
		struct cand c;
		const char *copy;

		enum outcome o = evaluate(p, &sc, &c, tags[k], strlen(tags[k]), true);

		if (o == OUT_ERROR) {
			rc = rx_error(err, &sc);
			goto done;
		}
		if (o != OUT_CANDIDATE)
			continue;
		if (c.val == sc.buf) {
			if (!(copy = arena_copy(&arena, sc.buf, sc.len)))
				goto oom;
			rebase(&c, p, sc.buf, copy);
		}
		cands[nc++] = c;
	}
	if (sc.oom)
		goto oom;
	if (nc > 1) /* cands is NULL when there are no tags: qsort wants an array */
		qsort(cands, nc, sizeof(*cands), order_cmp);
	for (size_t k = 0; k < nc; k++)
		if (strvec_push(out, cands[k].tag) < 0)
			goto oom;
	rc = 0;
	goto done;
oom:
	rc = error_oom(err);
done:
	while (arena) {
		struct arena_block *next = arena->next;

		free(arena);
		arena = next;
	}
	free(cands);
	scratch_release(&sc);
	return rc;
}

/* ---- comparing ---- */

static enum policy_verdict verdict_of(int c)
{
	return c > 0 ? POLICY_FORWARD : c < 0 ? POLICY_BACKWARD : POLICY_SAME;
}

/* Evaluates current (ranged or not) and candidate (always ranged) into cur and cand. */
static bool evaluate_pair(const struct policy *p, struct scratch sc[2], struct cand *cur,
                          struct cand *cand, const char *current, const char *candidate,
                          bool ranged)
{
	return evaluate(p, &sc[0], cur, current, strlen(current), ranged) == OUT_CANDIDATE &&
	       evaluate(p, &sc[1], cand, candidate, strlen(candidate), true) == OUT_CANDIDATE &&
	       !sc[0].oom && !sc[1].oom;
}

enum policy_verdict policy_compare(const struct policy *p, const char *current,
                                   const char *candidate)
{
	struct scratch sc[2];
	struct cand cur, cand;
	enum policy_verdict v = POLICY_INCOMPARABLE;

	if (!current || !candidate)
		return POLICY_INCOMPARABLE;
	memset(sc, 0, sizeof(sc));
	if (scratch_init(&sc[0], p) == 0 && scratch_init(&sc[1], p) == 0 &&
	    evaluate_pair(p, sc, &cur, &cand, current, candidate, true))
		v = verdict_of(order_rank(p, &cand, &cur));
	scratch_release(&sc[0]);
	scratch_release(&sc[1]);
	return v;
}

/* The committed value as a person reads a version: the extracted value when the pattern
 * matches it, else the whole tag. True when it reads as one ahead of the candidate's version
 * (or equal to it with a further non-zero part, as 1.2.3.4 against 1.2.3). */
static bool loosely_ahead(const struct policy *p, struct scratch *sc, const char *current,
                          const struct semver *candidate)
{
	size_t len = strlen(current);
	const char *val = current;
	struct semver sv;
	bool longer, matched;
	int c;

	if (len > POLICY_TAG_MAX)
		return false;
	if (p->pattern && p->parts && extract_value(p, sc, current, len, 0, &matched)) {
		val = sc->buf;
		len = sc->len;
	}
	if (sc->oom || semver_parse_loose(&sv, &longer, val, len) < 0)
		return false;
	c = semver_compare(candidate, &sv);
	return c < 0 || (c == 0 && longer);
}

enum policy_verdict policy_verdict(const struct policy *p, const char *current,
                                   const char *candidate)
{
	struct scratch sc[2];
	struct cand cur, cand;
	enum policy_verdict v = POLICY_INCOMPARABLE;

	if (!current || !candidate)
		return POLICY_INCOMPARABLE;
	memset(sc, 0, sizeof(sc));
	if (scratch_init(&sc[0], p) < 0 || scratch_init(&sc[1], p) < 0)
		goto done;
	if (evaluate_pair(p, sc, &cur, &cand, current, candidate, false)) {
		v = verdict_of(order_rank(p, &cand, &cur));
		goto done;
	}
	/* The candidate must be one the policy picks; only then is current read loosely. */
	if (p->kind == POLICY_SEMVER &&
	    evaluate(p, &sc[1], &cand, candidate, strlen(candidate), true) == OUT_CANDIDATE &&
	    !sc[1].oom && loosely_ahead(p, &sc[0], current, &cand.key.sv))
		v = POLICY_BACKWARD;
done:
	scratch_release(&sc[0]);
	scratch_release(&sc[1]);
	return v;
}

int policy_value(struct buf *out, const struct policy *p, const char *tag)
{
	struct scratch sc;
	struct cand c;
	size_t len = strlen(tag);
	int rc = IG_ENOTFOUND;

	if (scratch_init(&sc, p) < 0)
		return IG_EFAIL;
	switch (filter_value(p, &sc, &c, tag, len)) {
	case OUT_FILTERED:
		break;
	case OUT_ERROR:
		rc = IG_ETOOBIG;
		break;
	case OUT_SKIPPED:
		rc = sc.oom ? IG_EFAIL : IG_ETOOBIG;
		break;
	default:
		rc = buf_append(out, c.val, c.val_len) < 0 ? IG_EFAIL : 0;
		break;
	}
	scratch_release(&sc);
	return rc;
}

bool policy_accepts(const struct policy *p, const char *tag)
{
	struct scratch sc;
	struct cand c;
	bool ok = false;

	if (tag && scratch_init(&sc, p) == 0)
		ok = evaluate(p, &sc, &c, tag, strlen(tag), true) == OUT_CANDIDATE;
	if (tag)
		scratch_release(&sc);
	return ok;
}

const char *policy_verdict_name(enum policy_verdict v)
{
	switch (v) {
	case POLICY_FORWARD:
		return "forward";
	case POLICY_SAME:
		return "same";
	case POLICY_BACKWARD:
		return "backward";
	case POLICY_INCOMPARABLE:
		return "incomparable";
	}
	return "incomparable";
}
