/* The POLICY FLAGS of CONTRACT §3 (`--pattern`, `--extract`, `--exclude`, `--semver`,
 * `--numerical`, `--alphabetical`), parsed the same way by every command that takes them. */
#ifndef IMAGEGUARD_POLICYFLAGS_H
#define IMAGEGUARD_POLICYFLAGS_H

#include <stdbool.h>

#include "imageguard/policy/policy.h"
#include "imageguard/util/strvec.h"

struct error;

/* No ordering flag yet is spec.kind == POLICY_SEMVER with spec.range == NULL. */
struct policyflags {
	struct policy_spec spec; /* string fields borrow argv; exclude borrows excludes.items */
	struct strvec excludes;  /* owned copies of every --exclude, in order */
	bool set;                /* any policy flag seen */
};

#define POLICYFLAGS_INIT                                                                           \
	{                                                                                          \
		{NULL, NULL, NULL, 0, POLICY_SEMVER, NULL, false}, STRVEC_INIT, false              \
	}

/* If argv[*i] is a policy flag (`--flag VALUE` or `--flag=VALUE`), consumes it and its value,
 * advances *i past them and returns 1; returns 0 (and leaves *i) when it is not a policy flag.
 * Returns IG_EUSAGE with a one-line message for a missing or bad value or a second ordering
 * flag. argv must outlive pf: the spec's strings point into it. */
int policyflags_take(struct policyflags *pf, int argc, char **argv, int *i, struct error *err);

/* Completes the spec once every argument is taken: when any policy flag was seen exactly one
 * ordering flag is required (IG_EUSAGE otherwise), and --exclude replaces the default
 * exclusion list. Returns 0 or IG_EUSAGE. With no policy flag at all it returns 0 and leaves
 * pf->set false: the caller decides whether a policy is required. */
int policyflags_finish(struct policyflags *pf, struct error *err);

/* Frees the exclusion copies; pf may be reused after POLICYFLAGS_INIT. */
void policyflags_release(struct policyflags *pf);

#endif
