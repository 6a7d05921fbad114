/* Versions parsed as Flux's semver policy parses them (fluxcd/pkg version.ParseVersion, strict
 * as CONTRACT §6 pins it), and
 * read loosely for committed values; SemVer precedence as Masterminds computes it; Masterminds
 * v3 ranges. Numbers stay digit strings (compared by length, then bytes). The
 * range rules follow Masterminds v3.4 constraints.go comparator by comparator, including its
 * quirks (`<=1.x`, `!=1.2.x`), so a range means here what it means to Flux. */
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/policy/semver.h"
#include "imageguard/util/vec.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_ident_char(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

/* Reads digits at s[*i] into out, leading zeros stripped (Masterminds coerces them). */
static bool parse_num(struct semver_num *out, const char *s, size_t len, size_t *i)
{
	size_t start = *i;

	while (*i < len && is_digit(s[*i]))
		(*i)++;
	if (*i == start)
		return false;
	while (start < *i && s[start] == '0')
		start++;
	out->p = s + start;
	out->len = *i - start;
	return true;
}

/* Go's strconv.ParseUint(s, 10, 64) succeeds: at most 18446744073709551615. */
static bool fits_u64(struct semver_num n)
{
	return n.len < 20 || (n.len == 20 && memcmp(n.p, "18446744073709551615", 20) <= 0);
}

/* s[from..to) is dot-separated non-empty identifiers of [0-9A-Za-z-]; with no_zero, numeric
 * identifiers have no leading zero (Masterminds' validatePrerelease). */
static bool idents_valid(const char *s, size_t from, size_t to, bool no_zero)
{
	size_t i = from;

	for (;;) {
		size_t start = i;
		bool numeric = true;

		while (i < to && is_ident_char(s[i])) {
			numeric = numeric && is_digit(s[i]);
			i++;
		}
		if (i == start)
			return false;
		if (no_zero && numeric && s[start] == '0' && i - start > 1)
			return false;
		if (i == to)
			return true;
		if (s[i] != '.')
			return false;
		i++;
	}
}

static size_t find_byte(const char *s, size_t from, size_t to, char c)
{
	while (from < to && s[from] != c)
		from++;
	return from;
}

/* Splits s[i..len) into numbers, -prerelease and +build as Masterminds' coercing NewVersion
 * does: build after the first '+', prerelease after the first '-' before it, and what is left
 * one to max_parts numbers. Returns the number of numbers read (0: not that shape); *extra is
 * set when more than three numbers were allowed and one beyond the third is not zero. */
static size_t split_version(struct semver *out, bool *extra, const char *s, size_t i, size_t len,
                            size_t max_parts, bool no_zero)
{
	struct semver_num *nums[] = {&out->major, &out->minor, &out->patch};
	size_t plus = find_byte(s, i, len, '+'), dash = find_byte(s, i, plus, '-'), n = 0;

	*extra = false;
	if (plus < len && !idents_valid(s, plus + 1, len, false))
		return 0;
	if (dash < plus && !idents_valid(s, dash + 1, plus, no_zero))
		return 0;
	for (;;) {
		struct semver_num tmp;

		if (n >= max_parts || !parse_num(n < 3 ? nums[n] : &tmp, s, dash, &i))
			return 0;
		if (n >= 3 && tmp.len > 0)
			*extra = true;
		n++;
		if (i == dash)
			break;
		if (s[i++] != '.')
			return 0;
	}
	if (dash < plus) {
		out->pre = s + dash + 1;
		out->pre_len = plus - dash - 1;
	}
	if (plus < len) {
		out->build = s + plus + 1;
		out->build_len = len - plus - 1;
	}
	return n;
}

/* The usual shape, s[i..len) of digits and dots only, read in one pass: false when s has any
 * other byte (the general parse decides then). Otherwise *ok says whether it is a version: as
 * split_version reads it, exactly three non-empty numbers. */
static bool parse_plain(struct semver *out, bool *ok, const char *s, size_t i, size_t len)
{
	struct semver_num *nums[] = {&out->major, &out->minor, &out->patch};
	size_t n = 0, start = i;
	bool empty = false;

	for (;; i++) {
		if (i < len && is_digit(s[i]))
			continue;
		if (i < len && s[i] != '.')
			return false;
		if (i == start)
			empty = true;
		else if (n < 3) {
			while (start < i && s[start] == '0') /* stripped, as parse_num does */
				start++;
			nums[n]->p = s + start;
			nums[n]->len = i - start;
		}
		n++;
		if (i == len)
			break;
		start = i + 1;
	}
	*ok = n == 3 && !empty;
	return true;
}

/* Masterminds' StrictNewVersion on the numbers: s[i..len) starts with exactly three numbers
 * separated by '.', each 0 or without a leading zero, followed by the end, '-' or '+'. */
static bool strict_core(const char *s, size_t i, size_t len)
{
	for (int n = 0; n < 3; n++) {
		size_t start;

		if (n > 0 && (i >= len || s[i++] != '.'))
			return false;
		start = i;
		while (i < len && is_digit(s[i]))
			i++;
		if (i == start || (s[start] == '0' && i - start > 1))
			return false;
	}
	return i == len || s[i] == '-' || s[i] == '+';
}

int semver_parse(struct semver *out, const char *s, size_t len, struct error *err)
{
	size_t i = len > 0 && s[0] == 'v';
	bool extra, ok;

	memset(out, 0, sizeof(*out));
	/* fluxcd/pkg version.ParseVersion as CONTRACT §6 pins it: StrictNewVersion after a v */
	if (!strict_core(s, i, len))
		ok = false;
	else if (parse_plain(out, &ok, s, i, len))
		ok = ok && fits_u64(out->major) && fits_u64(out->minor) && fits_u64(out->patch);
	else
		ok = split_version(out, &extra, s, i, len, 3, true) == 3 && fits_u64(out->major) &&
		     fits_u64(out->minor) && fits_u64(out->patch);
	if (!ok) {
		memset(out, 0, sizeof(*out));
		if (err)
			error_set(err, IG_EINVALID, "version '%.*s': not a semantic version",
			          (int)(len > 200 ? 200 : len), s);
		return IG_EINVALID;
	}
	return 0;
}

int semver_parse_loose(struct semver *out, bool *longer, const char *s, size_t len)
{
	size_t i = len > 0 && (s[0] == 'v' || s[0] == 'V');

	memset(out, 0, sizeof(*out));
	if (split_version(out, longer, s, i, len, SEMVER_LOOSE_PARTS, false) == 0) {
		memset(out, 0, sizeof(*out));
		*longer = false;
		return IG_EINVALID;
	}
	return 0;
}

int semver_num_compare(struct semver_num a, struct semver_num b)
{
	if (a.len != b.len)
		return a.len < b.len ? -1 : 1;
	/* byte by byte: version numbers are a few digits, shorter than a memcmp call costs */
	for (size_t i = 0; i < a.len; i++)
		if (a.p[i] != b.p[i])
			return (unsigned char)a.p[i] < (unsigned char)b.p[i] ? -1 : 1;
	return 0;
}

/* An identifier is a number when Go's ParseUint reads it (Masterminds' comparePrePart): a
 * digit string past 2^64-1 compares as text. */
static bool ident_is_number(struct semver_num *out, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!is_digit(s[i]))
			return false;
	for (i = 0; i + 1 < len && s[i] == '0'; i++)
		;
	out->p = s + i;
	out->len = len - i;
	if (out->len == 1 && out->p[0] == '0')
		out->len = 0;
	return len > 0 && fits_u64(*out);
}

/* One prerelease identifier against another: numbers < text, numbers by value, text bytewise. */
static int compare_ident(const char *a, size_t alen, const char *b, size_t blen)
{
	struct semver_num x, y;
	bool anum = ident_is_number(&x, a, alen), bnum = ident_is_number(&y, b, blen);
	int c;

	if (anum && bnum)
		return semver_num_compare(x, y);
	if (anum != bnum)
		return anum ? -1 : 1;
	c = memcmp(a, b, alen < blen ? alen : blen);
	if (c != 0)
		return (c > 0) - (c < 0);
	return (alen > blen) - (alen < blen);
}

static int compare_pre(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i = 0, j = 0;

	if (alen == 0 || blen == 0)
		return (alen == 0) - (blen == 0); /* a release ranks above its prereleases */
	for (;;) {
		size_t ie = i, je = j;
		int c;

		while (ie < alen && a[ie] != '.')
			ie++;
		while (je < blen && b[je] != '.')
			je++;
		if ((c = compare_ident(a + i, ie - i, b + j, je - j)) != 0)
			return c;
		i = ie + 1;
		j = je + 1;
		if (i > alen || j > blen) /* one ran out: the longer set ranks higher */
			return (i <= alen) - (j <= blen);
	}
}

int semver_compare(const struct semver *a, const struct semver *b)
{
	int c;

	if ((c = semver_num_compare(a->major, b->major)) != 0)
		return c;
	if ((c = semver_num_compare(a->minor, b->minor)) != 0)
		return c;
	if ((c = semver_num_compare(a->patch, b->patch)) != 0)
		return c;
	return compare_pre(a->pre, a->pre_len, b->pre, b->pre_len);
}

/* ---- ranges ---- */

/* Dot-separated non-empty identifiers; numeric prerelease identifiers without leading zeros. */
static bool parse_idents(const char *s, size_t len, size_t *i, bool prerelease)
{
	for (;;) {
		size_t start = *i;
		bool numeric = true;

		while (*i < len && is_ident_char(s[*i])) {
			if (!is_digit(s[*i]))
				numeric = false;
			(*i)++;
		}
		if (*i == start)
			return false;
		if (prerelease && numeric && s[start] == '0' && *i - start > 1)
			return false;
		if (*i >= len || s[*i] != '.')
			return true;
		(*i)++;
	}
}

/* Parses the optional -prerelease and +build of a range's version at s[*i]. */
static bool parse_suffix(struct semver *v, const char *s, size_t len, size_t *i)
{
	if (*i < len && s[*i] == '-') {
		size_t start = ++(*i);

		if (!parse_idents(s, len, i, true))
			return false;
		v->pre = s + start;
		v->pre_len = *i - start;
	}
	if (*i < len && s[*i] == '+') {
		size_t start = ++(*i);

		if (!parse_idents(s, len, i, false))
			return false;
		v->build = s + start;
		v->build_len = *i - start;
	}
	return true;
}

enum op { OP_EQ, OP_NE, OP_GT, OP_LT, OP_GE, OP_LE, OP_TILDE, OP_CARET };

struct constraint {
	enum op op;
	struct semver con;
	bool dirty, minor_dirty, patch_dirty;
};

struct group {
	size_t first, count;
	bool has_pre; /* a comparator names a prerelease: prereleases may match this group */
};

struct semver_range {
	char *text;
	struct constraint *cons;
	size_t ncons, capcons;
	struct group *groups;
	size_t ngroups, capgroups;
};

static const struct {
	const char *s;
	enum op op;
} ops[] = {
    /* longest first: "~>" before "~", ">=" before ">" */
    {"!=", OP_NE}, {">=", OP_GE}, {"=>", OP_GE}, {"<=", OP_LE},   {"=<", OP_LE},   {"~>", OP_TILDE},
    {">", OP_GT},  {"<", OP_LT},  {"=", OP_EQ},  {"~", OP_TILDE}, {"^", OP_CARET},
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static void skip_space(const char *s, size_t *i)
{
	while (is_space(s[*i]))
		(*i)++;
}

static bool is_xchar(char c)
{
	return is_digit(c) || c == 'x' || c == 'X' || c == '*';
}

static bool is_wild(const char *s, size_t len)
{
	return len == 1 && (s[0] == 'x' || s[0] == 'X' || s[0] == '*');
}

/* One version part of a comparator: `[0-9xX*]+`. *kind is 0 for digits (leading zeros allowed,
 * as Masterminds' NewVersion coerces them), 1 for a single wildcard, 2 for anything else, which
 * Masterminds ignores after a wildcard and rejects before one. */
static bool parse_xpart(struct semver_num *out, int *kind, const char *s, size_t *i)
{
	size_t start = *i;

	while (is_xchar(s[*i]))
		(*i)++;
	if (*i == start)
		return false;
	*kind = is_wild(s + start, *i - start) ? 1 : 0;
	for (size_t k = start; *kind == 0 && k < *i; k++)
		if (!is_digit(s[k]))
			*kind = 2;
	while (start < *i && s[start] == '0')
		start++;
	out->p = s + start;
	out->len = *i - start;
	return true;
}

/* Parses `v?X(.Y(.Z)?)?(-pre)?(+build)?` with wildcards into c (Masterminds parseConstraint):
 * the first wildcard or missing part makes the comparator "dirty" at that level. */
static bool parse_cversion(struct constraint *c, const char *s, size_t *i)
{
	struct semver_num part[3] = {{"", 0}, {"", 0}, {"", 0}};
	int kind[3] = {1, 1, 1}; /* a missing part counts as a wildcard */
	size_t len = strlen(s);
	int dirty_at = 3;

	if (s[*i] == 'v')
		(*i)++;
	for (int k = 0; k < 3; k++) {
		if (k > 0) {
			if (s[*i] != '.' || !is_xchar(s[*i + 1]))
				break;
			(*i)++;
		}
		if (!parse_xpart(&part[k], &kind[k], s, i))
			return false;
	}
	for (int k = 0; k < 3 && dirty_at == 3; k++) {
		if (kind[k] == 2)
			return false;
		if (kind[k] == 1)
			dirty_at = k;
	}
	memset(&c->con, 0, sizeof(c->con));
	c->con.major = c->con.minor = c->con.patch = (struct semver_num){"", 0};
	if (!parse_suffix(&c->con, s, len, i))
		return false;
	c->con.build = NULL;
	c->con.build_len = 0;
	c->dirty = dirty_at < 3;
	c->minor_dirty = dirty_at == 1;
	c->patch_dirty = dirty_at == 2;
	if (dirty_at > 0)
		c->con.major = part[0];
	if (dirty_at > 1)
		c->con.minor = part[1];
	if (dirty_at > 2)
		c->con.patch = part[2];
	return true;
}

static int push_constraint(struct semver_range *r, const struct constraint *c)
{
	struct constraint *p = vec_reserve(r->cons, &r->capcons, r->ncons, sizeof(*p), 1);

	if (!p)
		return IG_EFAIL;
	r->cons = p;
	r->cons[r->ncons++] = *c;
	return 0;
}

static int push_group(struct semver_range *r)
{
	struct group *p = vec_reserve(r->groups, &r->capgroups, r->ngroups, sizeof(*p), 1);

	if (!p)
		return IG_EFAIL;
	r->groups = p;
	r->groups[r->ngroups++] = (struct group){r->ncons, 0, false};
	return 0;
}

/* Parses one comparator `op? ws* version` at s[*i]; a bare version followed by ` - version` is
 * a hyphen range, rewritten to `>= A, <= B` as Masterminds does. */
static int parse_comparator(struct semver_range *r, const char *s, size_t *i, const char **why)
{
	struct constraint c, hi;
	bool has_op = false;
	size_t save;

	memset(&c, 0, sizeof(c));
	memset(&hi, 0, sizeof(hi));
	c.op = OP_EQ;

	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		size_t n = strlen(ops[k].s);

		if (strncmp(s + *i, ops[k].s, n) == 0) {
			c.op = ops[k].op;
			*i += n;
			has_op = true;
			break;
		}
	}
	skip_space(s, i);
	if (!parse_cversion(&c, s, i)) {
		*why = "expected a version";
		return IG_EINVALID;
	}
	save = *i;
	skip_space(s, i);
	if (!has_op && *i > save && s[*i] == '-' && is_space(s[*i + 1])) {
		(*i)++;
		skip_space(s, i);
		if (!parse_cversion(&hi, s, i)) {
			*why = "expected a version after ' - '";
			return IG_EINVALID;
		}
		c.op = OP_GE;
		hi.op = OP_LE;
		if (push_constraint(r, &c) < 0 || push_constraint(r, &hi) < 0)
			return IG_EFAIL;
		return 0;
	}
	*i = save;
	return push_constraint(r, &c);
}

/* Parses the AND group starting at s[*i], up to "||" or the end. */
static int parse_group(struct semver_range *r, const char *s, size_t *i, const char **why)
{
	int rc;

	if ((rc = push_group(r)) < 0)
		return rc;
	skip_space(s, i);
	for (;;) {
		size_t before;
		bool comma = false;

		if ((rc = parse_comparator(r, s, i, why)) < 0)
			return rc;
		before = *i;
		skip_space(s, i);
		if (s[*i] == ',') {
			comma = true;
			(*i)++;
			skip_space(s, i);
		}
		if (s[*i] == '\0' || (s[*i] == '|' && s[*i + 1] == '|')) {
			if (comma) {
				*why = "trailing comma";
				return IG_EINVALID;
			}
			break;
		}
		if (!comma && *i == before) {
			*why = "expected a space or comma between comparators";
			return IG_EINVALID;
		}
	}
	r->groups[r->ngroups - 1].count = r->ncons - r->groups[r->ngroups - 1].first;
	for (size_t k = r->groups[r->ngroups - 1].first; k < r->ncons; k++)
		if (r->cons[k].con.pre_len > 0)
			r->groups[r->ngroups - 1].has_pre = true;
	return 0;
}

void semver_range_free(struct semver_range *r)
{
	if (!r)
		return;
	free(r->text);
	free(r->cons);
	free(r->groups);
	free(r);
}

int semver_range_new(struct semver_range **out, const char *range, struct error *err)
{
	struct semver_range *r = calloc(1, sizeof(*r));
	const char *why = NULL;
	size_t i = 0;
	int rc = IG_EFAIL;

	*out = NULL;
	if (!r || !(r->text = strdup(range)))
		goto oom;
	for (;;) {
		if ((rc = parse_group(r, r->text, &i, &why)) < 0)
			break;
		if (r->text[i] == '\0') {
			*out = r;
			return 0;
		}
		i += 2; /* "||" */
	}
	if (rc == IG_EINVALID) {
		error_set(err, IG_EINVALID, "semver range '%.200s': %s at offset %zu", range, why,
		          i);
		semver_range_free(r);
		return IG_EINVALID;
	}
oom:
	semver_range_free(r);
	return error_oom(err);
}

/* ---- Masterminds v3 comparator semantics ---- */

static int cmp_major(const struct semver *v, const struct constraint *c)
{
	return semver_num_compare(v->major, c->con.major);
}

static int cmp_minor(const struct semver *v, const struct constraint *c)
{
	return semver_num_compare(v->minor, c->con.minor);
}

static bool num_is_zero(struct semver_num n)
{
	return n.len == 0;
}

static bool check_tilde(const struct semver *v, const struct constraint *c)
{
	if (semver_compare(v, &c->con) < 0)
		return false;
	/* ~0.0.0 (and ~*) accept everything at or above 0.0.0 */
	if (num_is_zero(c->con.major) && num_is_zero(c->con.minor) && num_is_zero(c->con.patch) &&
	    !c->minor_dirty && !c->patch_dirty)
		return true;
	if (cmp_major(v, c) != 0)
		return false;
	if (cmp_minor(v, c) != 0 && !c->minor_dirty)
		return false;
	return true;
}

static bool check_caret(const struct semver *v, const struct constraint *c)
{
	if (semver_compare(v, &c->con) < 0)
		return false;
	if (!num_is_zero(c->con.major) || c->minor_dirty)
		return cmp_major(v, c) == 0;
	if (!num_is_zero(v->major))
		return false;
	if (!num_is_zero(c->con.minor) || c->patch_dirty)
		return cmp_minor(v, c) == 0;
	if (!num_is_zero(v->minor))
		return false;
	return semver_num_compare(v->patch, c->con.patch) == 0;
}

static bool check_ne(const struct semver *v, const struct constraint *c)
{
	if (c->dirty) {
		if (cmp_major(v, c) != 0)
			return true;
		if (cmp_minor(v, c) != 0 && !c->minor_dirty)
			return true;
		if (c->minor_dirty)
			return false;
		if (semver_num_compare(v->patch, c->con.patch) != 0 && !c->patch_dirty)
			return true;
		if (c->patch_dirty)
			return compare_pre(v->pre, v->pre_len, c->con.pre, c->con.pre_len) != 0 &&
			       (v->pre_len > 0 || c->con.pre_len > 0);
	}
	return semver_compare(v, &c->con) != 0;
}

static bool check_gt(const struct semver *v, const struct constraint *c)
{
	int m;

	if (!c->dirty)
		return semver_compare(v, &c->con) > 0;
	if ((m = cmp_major(v, c)) != 0)
		return m > 0;
	if (c->minor_dirty)
		return false;
	if (c->patch_dirty)
		return cmp_minor(v, c) > 0;
	return semver_compare(v, &c->con) > 0;
}

static bool check_le(const struct semver *v, const struct constraint *c)
{
	int m;

	if (!c->dirty)
		return semver_compare(v, &c->con) <= 0;
	if ((m = cmp_major(v, c)) > 0)
		return false;
	if (m == 0 && cmp_minor(v, c) > 0 && !c->minor_dirty)
		return false;
	return true;
}

static bool check_one(const struct semver *v, const struct constraint *c, bool include_pre)
{
	if (v->pre_len > 0 && !include_pre)
		return false;
	switch (c->op) {
	case OP_EQ:
		return c->dirty ? check_tilde(v, c) : semver_compare(v, &c->con) == 0;
	case OP_NE:
		return check_ne(v, c);
	case OP_GT:
		return check_gt(v, c);
	case OP_LT:
		return semver_compare(v, &c->con) < 0;
	case OP_GE:
		return semver_compare(v, &c->con) >= 0;
	case OP_LE:
		return check_le(v, c);
	case OP_TILDE:
		return check_tilde(v, c);
	case OP_CARET:
		return check_caret(v, c);
	}
	return false;
}

bool semver_range_matches(const struct semver_range *r, const struct semver *v)
{
	for (size_t g = 0; g < r->ngroups; g++) {
		const struct group *grp = &r->groups[g];
		bool ok = true;

		for (size_t k = grp->first; ok && k < grp->first + grp->count; k++)
			ok = check_one(v, &r->cons[k], grp->has_pre);
		if (ok)
			return true;
	}
	return false;
}
