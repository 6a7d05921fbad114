/* Flux's own policy test vectors (test/data/flux/policy.txt, transcribed from the repositories
 * and commits it names): every version, range and selection case agrees with Flux, or names an
 * exception that docs/policy.md documents, and then agrees with imageguard's stated result. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/policy/policy.h"
#include "imageguard/policy/semver.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"

#define RECS_MAX 256
#define LINE_MAX_ 4096

enum rec_type { REC_VERSION, REC_NEWVERSION, REC_STRICT, REC_RANGE, REC_CASE };

/* One record of the data file; every string is owned. */
struct rec {
	enum rec_type type;
	int line;
	char *source;
	char *subject; /* the version, the range, or the case's name */
	bool valid;    /* version, range */
	char *pattern, *extract, *kind, *arg, *tags;
	char *flux, *values, *sorted; /* expectations, NULL when absent */
	char *exception;
};

/* Filled once by main before the suite forks; read-only afterwards. */
static struct rec recs[RECS_MAX];
static size_t nrecs;
static char *docs; /* docs/policy.md, where every exception must be named */

/* Loading runs before the suite: a malformed data file ends the program, naming the line. */
#define need(cond, ...)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "test/data/flux/policy.txt: " __VA_ARGS__);                \
			fputc('\n', stderr);                                                       \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

static const char *src_dir(void)
{
	const char *src = getenv("IMAGEGUARD_SRC");

	return src ? src : ".";
}

static char *read_all(const char *rel)
{
	struct buf b = BUF_INIT;
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", src_dir(), rel);
	need(buf_read_file(&b, path) == 0, "cannot read %s", path);
	return buf_detach(&b);
}

static char *dup(const char *s)
{
	char *d = strdup(s);

	need(d != NULL, "out of memory");
	return d;
}

/* Replaces *slot with a copy of s (the `ours` line overrides what it names). */
static void set(char **slot, const char *s)
{
	free(*slot);
	*slot = dup(s);
}

/* Splits "version V valid" / "range R invalid": the last word is the verdict. */
static void take_verdict(struct rec *r, const char *rest)
{
	const char *sp = strrchr(rest, ' ');
	char *subject;

	need(sp, "line %d: no valid/invalid", r->line);
	need(!strcmp(sp + 1, "valid") || !strcmp(sp + 1, "invalid"), "line %d: valid or invalid",
	     r->line);
	subject = strndup(rest, (size_t)(sp - rest));
	need(subject != NULL, "out of memory");
	free(r->subject);
	r->subject = subject;
	r->valid = !strcmp(sp + 1, "valid");
}

static bool starts(const char *line, const char *word, const char **rest)
{
	size_t n = strlen(word);

	if (strncmp(line, word, n) != 0 || (line[n] != ' ' && line[n] != '\0'))
		return false;
	*rest = line[n] ? line + n + 1 : line + n;
	return true;
}

static struct rec *new_rec(enum rec_type type, int line, const char *source)
{
	struct rec *r;

	need(nrecs < RECS_MAX, "more than %d records", RECS_MAX);
	r = &recs[nrecs++];
	memset(r, 0, sizeof(*r));
	r->type = type;
	r->line = line;
	r->source = dup(source);
	return r;
}

/* A case field, or the expectation an `ours` line replaces. */
static bool case_field(struct rec *r, const char *line)
{
	const char *rest;

	if (starts(line, "pattern", &rest))
		set(&r->pattern, rest);
	else if (starts(line, "extract", &rest))
		set(&r->extract, rest);
	else if (starts(line, "tags", &rest))
		set(&r->tags, rest);
	else if (starts(line, "flux", &rest))
		set(&r->flux, rest);
	else if (starts(line, "values", &rest))
		set(&r->values, rest);
	else if (starts(line, "sorted", &rest))
		set(&r->sorted, rest);
	else if (starts(line, "policy", &rest)) {
		const char *sp = strchr(rest, ' ');

		need(sp, "policy needs a kind and an argument");
		free(r->kind);
		r->kind = strndup(rest, (size_t)(sp - rest));
		set(&r->arg, sp + 1);
	} else
		return false;
	return true;
}

static void parse_line(struct rec **cur, char **source, const char *line, int no)
{
	const char *rest;

	if (starts(line, "source", &rest)) {
		set(source, rest);
		*cur = NULL;
	} else if (starts(line, "version", &rest) || starts(line, "range", &rest)) {
		*cur = new_rec(line[0] == 'v' ? REC_VERSION : REC_RANGE, no, *source);
		take_verdict(*cur, rest);
	} else if (starts(line, "newversion", &rest)) {
		*cur = new_rec(REC_NEWVERSION, no, *source);
		take_verdict(*cur, rest);
	} else if (starts(line, "strictversion", &rest)) {
		*cur = new_rec(REC_STRICT, no, *source);
		take_verdict(*cur, rest);
	} else if (starts(line, "case", &rest)) {
		*cur = new_rec(REC_CASE, no, *source);
		(*cur)->subject = dup(rest);
	} else if (starts(line, "exception", &rest)) {
		need(*cur, "line %d: exception without a record", no);
		set(&(*cur)->exception, rest);
	} else if (starts(line, "ours", &rest)) {
		need(*cur && (*cur)->exception, "line %d: ours without exception", no);
		if (starts(rest, "version", &line) || starts(rest, "newversion", &line) ||
		    starts(rest, "strictversion", &line) || starts(rest, "range", &line))
			take_verdict(*cur, line);
		else
			need(case_field(*cur, rest), "line %d: ours what?", no);
	} else {
		need(*cur && (*cur)->type == REC_CASE && case_field(*cur, line),
		     "line %d: '%s' not understood", no, line);
	}
}

static void load(void)
{
	char *text = read_all("test/data/flux/policy.txt"), *line = text, *source = dup("?");
	struct rec *cur = NULL;
	int no = 0;

	while (line && *line) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		no++;
		if (line[0] && line[0] != '#')
			parse_line(&cur, &source, line, no);
		line = nl ? nl + 1 : NULL;
	}
	free(source);
	free(text);
	docs = read_all("docs/policy.md");
}

/* `\n` in a version stands for a newline. */
static size_t unescape(char *out, size_t cap, const char *s)
{
	size_t n = 0;

	for (size_t i = 0; s[i] && n + 1 < cap; i++) {
		if (s[i] == '\\' && s[i + 1] == 'n') {
			out[n++] = '\n';
			i++;
		} else
			out[n++] = s[i];
	}
	out[n] = '\0';
	return n;
}

/* Splits space-separated words into v (borrowing a copy in *copy). */
static size_t words(char ***v, char **copy, const char *s)
{
	size_t n = 0, cap = strlen(s) / 2 + 2;
	char *p;

	*copy = dup(s ? s : "");
	*v = calloc(cap, sizeof(**v));
	ck_assert_ptr_nonnull(*v);
	for (p = *copy; *p;) {
		while (*p == ' ')
			*p++ = '\0';
		if (!*p)
			break;
		(*v)[n++] = p;
		while (*p && *p != ' ')
			p++;
	}
	return n;
}

static int make_policy(struct policy **out, const struct rec *r, const char *range)
{
	struct policy_spec spec;
	struct error err = ERROR_INIT;

	memset(&spec, 0, sizeof(spec));
	spec.pattern = r->pattern;
	spec.extract = r->extract;
	if (!r->kind || !strcmp(r->kind, "semver")) {
		spec.kind = POLICY_SEMVER;
		spec.range = range;
	} else {
		spec.kind = strcmp(r->kind, "numerical") ? POLICY_ALPHABETICAL : POLICY_NUMERICAL;
		spec.ascending = !strcmp(r->arg, "asc");
	}
	return policy_new(out, &spec, &err);
}

/* Deterministic permutation number `seed` of v (seed 0: as listed). */
static void shuffle(char **v, size_t n, unsigned seed)
{
	unsigned long long s = seed * 2654435761ULL + 7;

	for (size_t k = n; seed && k > 1; k--) {
		size_t j;
		char *t;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		j = (size_t)((s >> 33) % k);
		t = v[k - 1];
		v[k - 1] = v[j];
		v[j] = t;
	}
}

static void check_pick(const struct rec *r, const struct policy *p, char **tags, size_t n)
{
	for (unsigned seed = 0; seed < 16; seed++) {
		struct policy_result res = POLICY_RESULT_INIT;

		shuffle(tags, n, seed);
		ck_assert_int_eq(policy_select(&res, p, (const char *const *)tags, n, NULL), 0);
		if (!strcmp(r->flux, "error"))
			ck_assert_msg(!res.latest, "%s: picked %s, Flux picks nothing", r->subject,
			              res.latest);
		else
			ck_assert_msg(res.latest && !strcmp(res.latest, r->flux),
			              "%s: picked %s, want %s", r->subject,
			              res.latest ? res.latest : "nothing", r->flux);
		policy_result_release(&res);
	}
}

static void check_words(const char *what, const char *subject, const struct strvec *got,
                        const char *want)
{
	char **v, *copy;
	size_t n = words(&v, &copy, want);

	ck_assert_msg(got->len == n, "%s: %s: %zu items, want %zu", subject, what, got->len, n);
	for (size_t k = 0; k < n; k++)
		ck_assert_msg(!strcmp(got->items[k], v[k]), "%s: %s[%zu] is %s, want %s", subject,
		              what, k, got->items[k], v[k]);
	free(v);
	free(copy);
}

/* RegexFilter.Items: the values of the tags that pass, in listing order. */
static void check_values(const struct rec *r, const struct policy *p, char **tags, size_t n)
{
	struct strvec got = STRVEC_INIT;

	for (size_t k = 0; k < n; k++) {
		struct buf b = BUF_INIT;
		int rc = policy_value(&b, p, tags[k]);

		ck_assert(rc == 0 || rc == IG_ENOTFOUND);
		if (rc == 0)
			ck_assert_int_eq(strvec_push(&got, b.data ? b.data : ""), 0);
		buf_release(&b);
	}
	check_words("values", r->subject, &got, r->values);
	strvec_release(&got);
}

static void check_case(const struct rec *r)
{
	struct policy *p = NULL;
	char **tags, *copy;
	size_t n = words(&tags, &copy, r->tags ? r->tags : "");
	int rc = make_policy(&p, r, r->arg);

	if (r->flux && !strcmp(r->flux, "invalid")) {
		ck_assert_msg(rc < 0, "%s: the policy compiles, Flux refuses it", r->subject);
		goto done;
	}
	ck_assert_msg(rc == 0, "%s: the policy does not compile", r->subject);
	if (r->flux)
		check_pick(r, p, tags, n);
	if (r->values)
		check_values(r, p, tags, n);
	if (r->sorted) {
		struct strvec got = STRVEC_INIT;

		ck_assert_int_eq(policy_order(&got, p, (const char *const *)tags, n, NULL), 0);
		check_words("sorted", r->subject, &got, r->sorted);
		strvec_release(&got);
	}
done:
	policy_free(p);
	free(tags);
	free(copy);
}

/* A Masterminds NewVersion verdict (the coercing reading, which fluxcd/pkg's ParseVersion
 * uses since v0.10.0): what it refuses, or what ParseVersion's three-part cut refuses (fewer
 * than two '.'), is no candidate either, since candidates are read strictly (CONTRACT §6); what
 * it reads, a committed value spelled so is read loosely (semver_parse_loose), to be protected
 * from a backward move. */
static void check_newversion(const struct rec *r)
{
	char v[256];
	struct semver sv;
	size_t len = unescape(v, sizeof(v), r->subject), dots = 0;
	bool longer;

	for (size_t i = 0; i < len; i++)
		dots += v[i] == '.';
	if (!r->valid || dots < 2)
		ck_assert_msg(semver_parse(&sv, v, len, NULL) != 0,
		              "line %d: '%s' (NewVersion %s, %zu dots) should be no candidate",
		              r->line, r->subject, r->valid ? "valid" : "invalid", dots);
	if (r->valid)
		ck_assert_msg(semver_parse_loose(&sv, &longer, v, len) == 0,
		              "line %d: '%s' (NewVersion valid) should read loosely", r->line,
		              r->subject);
}

/* A Masterminds StrictNewVersion verdict: fluxcd/pkg ParseVersion (as CONTRACT §6 pins it)
 * strips one v and reads the rest so, so "v" + V parses exactly when V does; V itself too when
 * it has no v of its own. */
static void check_strict(const struct rec *r)
{
	char v[257];
	struct semver sv;
	size_t len = unescape(v + 1, sizeof(v) - 1, r->subject);

	v[0] = 'v';
	ck_assert_msg((semver_parse(&sv, v, len + 1, NULL) == 0) == r->valid,
	              "line %d: 'v%s' should be %s", r->line, r->subject,
	              r->valid ? "a version" : "no version");
	if (len > 0 && v[1] != 'v')
		ck_assert_msg((semver_parse(&sv, v + 1, len, NULL) == 0) == r->valid,
		              "line %d: '%s' should be %s", r->line, r->subject,
		              r->valid ? "a version" : "no version");
}

START_TEST(flux_case)
{
	const struct rec *r = &recs[_i];
	char named[256];

	if (r->exception) {
		snprintf(named, sizeof(named), "`%s`", r->exception);
		ck_assert_msg(strstr(docs, named), "line %d: exception %s is not in docs/policy.md",
		              r->line, named);
	}
	if (r->type == REC_VERSION) {
		char v[256];
		struct semver sv;
		size_t len = unescape(v, sizeof(v), r->subject);

		ck_assert_msg((semver_parse(&sv, v, len, NULL) == 0) == r->valid,
		              "line %d: version '%s' should be %s", r->line, r->subject,
		              r->valid ? "valid" : "invalid");
	} else if (r->type == REC_NEWVERSION) {
		check_newversion(r);
	} else if (r->type == REC_STRICT) {
		check_strict(r);
	} else if (r->type == REC_RANGE) {
		struct rec tmp = *r;
		struct policy *p = NULL;

		tmp.kind = NULL;
		ck_assert_msg((make_policy(&p, &tmp, r->subject) == 0) == r->valid,
		              "line %d: range '%s' should be %s", r->line, r->subject,
		              r->valid ? "valid" : "invalid");
		policy_free(p);
	} else {
		check_case(r);
	}
}
END_TEST

static void unload(void)
{
	for (size_t k = 0; k < nrecs; k++) {
		struct rec *r = &recs[k];
		char *owned[] = {r->source, r->subject, r->pattern, r->extract, r->kind,     r->arg,
		                 r->tags,   r->flux,    r->values,  r->sorted,  r->exception};

		for (size_t j = 0; j < sizeof(owned) / sizeof(owned[0]); j++)
			free(owned[j]);
	}
	free(docs);
}

static void summary(void)
{
	size_t exceptions = 0;

	for (size_t k = 0; k < nrecs; k++)
		exceptions += recs[k].exception != NULL;
	printf("flux vectors: %zu records, %zu agree with Flux, %zu documented exceptions\n", nrecs,
	       nrecs - exceptions, exceptions);
}

int main(void)
{
	Suite *s = suite_create("flux_policy");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	load();
	summary();
	tcase_add_loop_test(tc, flux_case, 0, (int)nrecs);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	unload();
	return failed ? 1 : 0;
}
