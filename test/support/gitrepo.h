/* A bare Git remote for the Git suites (test_gitstore, test_gitmarkers): a temp dir holding
 * remote.git with one commit on main of the files given, made by test/fixtures/gitpeers.sh
 * (found through $IMAGEGUARD_SRC, "." when unset). */
#ifndef IMAGEGUARD_TEST_GITREPO_H
#define IMAGEGUARD_TEST_GITREPO_H

struct gitrepo {
	char dir[128];    /* the temp dir: removed by gitrepo_done, or at exit (a failed Check
	                   * assertion ends the forked test before gitrepo_done) */
	char remote[192]; /* dir/remote.git */
	char url[512];    /* file://remote */
	char state[192];  /* dir/state, for a store's caches (not created) */
};

/* Makes /tmp/<prefix>.XXXXXX and remote.git seeded with seed: a NULL-terminated list of
 * (path, content) pairs, paths relative to the seed work tree, parents created. Returns 0 or
 * -1 (nothing left behind but the temp dir, removed at exit). */
int gitrepo_init(struct gitrepo *r, const char *prefix, const char *const seed[]);

/* Removes the temp dir. */
void gitrepo_done(struct gitrepo *r);

/* system() of the printf-formatted command: its wait status. */
int gitrepo_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* $IMAGEGUARD_SRC, or "." when unset. */
const char *gitrepo_src_dir(void);

#endif
