/* POLICY FLAGS parsing shared by `eval` and `tags`: one place decides what a policy flag looks
 * like on the command line, so both commands accept and reject exactly the same input. */
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/policy/policyflags.h"

enum flag_id { F_PATTERN, F_EXTRACT, F_EXCLUDE, F_SEMVER, F_NUMERICAL, F_ALPHABETICAL };

static const struct {
	const char *name;
	enum flag_id id;
} flags[] = {
    {"--pattern", F_PATTERN}, {"--extract", F_EXTRACT},     {"--exclude", F_EXCLUDE},
    {"--semver", F_SEMVER},   {"--numerical", F_NUMERICAL}, {"--alphabetical", F_ALPHABETICAL},
};

static bool has_order(const struct policyflags *pf)
{
	return pf->spec.kind != POLICY_SEMVER || pf->spec.range != NULL;
}

/* Finds the flag argv[*i] names; *value is the part after '=' or NULL. */
static int flag_lookup(const char *arg, const char **value)
{
	for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
		size_t n = strlen(flags[k].name);

		if (strncmp(arg, flags[k].name, n) != 0)
			continue;
		if (arg[n] == '\0') {
			*value = NULL;
			return (int)k;
		}
		if (arg[n] == '=') {
			*value = arg + n + 1;
			return (int)k;
		}
	}
	return -1;
}

static int parse_direction(bool *ascending, const char *flag, const char *value, struct error *err)
{
	if (strcmp(value, "asc") == 0)
		*ascending = true;
	else if (strcmp(value, "desc") == 0)
		*ascending = false;
	else
		return error_set(err, IG_EUSAGE, "option '%s': expected asc or desc, got '%s'",
		                 flag, value);
	return 0;
}

static int apply(struct policyflags *pf, enum flag_id id, const char *flag, const char *value,
                 struct error *err)
{
	if (id >= F_SEMVER && has_order(pf))
		return error_set(err, IG_EUSAGE,
		                 "option '%s': only one of --semver, --numerical, "
		                 "--alphabetical may be given",
		                 flag);
	switch (id) {
	case F_PATTERN:
		pf->spec.pattern = value;
		return 0;
	case F_EXTRACT:
		pf->spec.extract = value;
		return 0;
	case F_EXCLUDE:
		if (strvec_push(&pf->excludes, value) < 0)
			return error_set(err, IG_EFAIL, "option '%s': out of memory", flag);
		return 0;
	case F_SEMVER:
		if (value[0] == '\0')
			return error_set(err, IG_EUSAGE, "option '%s': empty range", flag);
		pf->spec.kind = POLICY_SEMVER;
		pf->spec.range = value;
		return 0;
	case F_NUMERICAL:
		pf->spec.kind = POLICY_NUMERICAL;
		return parse_direction(&pf->spec.ascending, flag, value, err);
	case F_ALPHABETICAL:
		pf->spec.kind = POLICY_ALPHABETICAL;
		return parse_direction(&pf->spec.ascending, flag, value, err);
	}
	return error_set(err, IG_EUSAGE, "option '%s': unknown", flag);
}

int policyflags_take(struct policyflags *pf, int argc, char **argv, int *i, struct error *err)
{
	const char *value = NULL;
	int k = flag_lookup(argv[*i], &value);
	int rc;

	if (k < 0)
		return 0;
	if (!value) {
		if (*i + 1 >= argc)
			return error_set(err, IG_EUSAGE, "option '%s': missing value",
			                 flags[k].name);
		value = argv[*i + 1];
		*i += 1;
	}
	*i += 1;
	pf->set = true;
	if ((rc = apply(pf, flags[k].id, flags[k].name, value, err)) < 0)
		return rc;
	return 1;
}

int policyflags_finish(struct policyflags *pf, struct error *err)
{
	if (!pf->set)
		return 0;
	if (!has_order(pf))
		return error_set(err, IG_EUSAGE,
		                 "policy flags: one of --semver, --numerical, --alphabetical "
		                 "is required");
	if (pf->excludes.len > 0) {
		pf->spec.exclude = (const char *const *)pf->excludes.items;
		pf->spec.exclude_len = pf->excludes.len;
	}
	return 0;
}

void policyflags_release(struct policyflags *pf)
{
	strvec_release(&pf->excludes);
	pf->spec.exclude = NULL;
	pf->spec.exclude_len = 0;
}
