/* Versions as Flux's semver policy reads them (fluxcd/pkg version.ParseVersion over
 * Masterminds/semver v3) and their precedence, and version ranges with the semantics of
 * Masterminds/semver v3. Numbers are digit strings, compared exactly: nothing
 * overflows, nothing is rounded. */
#ifndef IMAGEGUARD_SEMVER_H
#define IMAGEGUARD_SEMVER_H

#include <stdbool.h>
#include <stddef.h>

struct error;

/* A run of decimal digits without leading zeros (len 0 is the number zero). */
struct semver_num {
	const char *p;
	size_t len;
};

/* A parsed version; every pointer borrows the parsed string, which must outlive it. */
struct semver {
	struct semver_num major, minor, patch;
	const char *pre; /* prerelease without the '-', pre_len 0 when none */
	size_t pre_len;
	const char *build; /* build metadata without the '+' (ignored for precedence) */
	size_t build_len;
};

/* Parses s[0..len) as a candidate, as CONTRACT §6 pins fluxcd/pkg version.ParseVersion: an
 * optional lowercase v, then Masterminds' StrictNewVersion: exactly three numbers without
 * leading zeros (each at most 2^64-1), -prerelease (numeric identifiers without leading zeros)
 * and +build. So `v1.2.3` and `1.2.3-rc.1+b` are versions; `01.4.0`, `2025.07.03`, `1.2`,
 * `v1.2-beta.5`, `V1.2.3` and `1.2.3.4` are not (a committed value spelled so is read by
 * semver_parse_loose). Returns 0 or IG_EINVALID (message names the version when err is
 * non-NULL; pass NULL on hot paths). */
int semver_parse(struct semver *out, const char *s, size_t len, struct error *err);

#define SEMVER_LOOSE_PARTS 8

/* Reads s[0..len) as a person reads a version, for a value already committed: an optional v or
 * V, one to SEMVER_LOOSE_PARTS numbers of any length with any leading zeros (`v2`, `2.1`,
 * `2025.07.03`, `1.2.3.4`), then -prerelease and +build of any identifiers. The first three
 * numbers fill out; *longer is set when a number past the third is not zero (`1.2.3.4` is
 * ahead of 1.2.3). Returns 0 or IG_EINVALID. */
int semver_parse_loose(struct semver *out, bool *longer, const char *s, size_t len);

/* SemVer precedence: <0, 0, >0. Build metadata is ignored. */
int semver_compare(const struct semver *a, const struct semver *b);

/* Compares two digit strings as numbers (leading zeros stripped already). */
int semver_num_compare(struct semver_num a, struct semver_num b);

struct semver_range; /* opaque, immutable after semver_range_new */

/* Compiles a Masterminds v3 range: `= != > < >= <= ~ ~> ^`, wildcards x X *, partial versions,
 * hyphen ranges `1.2 - 1.4.5`, AND by space or comma, OR by `||`. Returns 0 or IG_EINVALID
 * naming the range and the offending part. The range keeps its own copy of the text. */
int semver_range_new(struct semver_range **out, const char *range, struct error *err);
void semver_range_free(struct semver_range *r);

/* True when v satisfies the range. A prerelease satisfies an OR group only when one of that
 * group's comparators names a prerelease (Masterminds v3.4). */
bool semver_range_matches(const struct semver_range *r, const struct semver *v);

#endif
