/* Helpers shared by the libFuzzer targets in this directory (each fuzz_<target>.c is one
 * target): NUL-terminated copies of the input, line splitting, a scratch file, and a property
 * check that aborts so libFuzzer records the input as a crash. */
#ifndef IMAGEGUARD_FUZZ_H
#define IMAGEGUARD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/util/log.h"

/* A property that must hold: print it and abort (libFuzzer saves the input). */
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__,        \
			        #cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* Library warnings would flood the fuzzer's output and slow it down. */
static inline void fuzz_quiet(void)
{
	log_configure(LOG_ERROR, LOG_TEXT);
}

/* A NUL-terminated copy of n bytes (a C string stops at the first NUL, as callers see it). */
static inline char *fuzz_strndup(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* Cuts the next line off *p (advancing *p, *n past its '\n') into a new string; NULL at the
 * end of input. */
static inline char *fuzz_next_line(const uint8_t **p, size_t *n)
{
	const uint8_t *nl;
	size_t len;
	char *s;

	if (!*n)
		return NULL;
	nl = memchr(*p, '\n', *n);
	len = nl ? (size_t)(nl - *p) : *n;
	s = fuzz_strndup(*p, len);
	*p += nl ? len + 1 : len;
	*n -= nl ? len + 1 : len;
	return s;
}

/* A per-process scratch directory under TMPDIR, removed at exit with what fuzz_write put in. */
static char fuzz_dir_path[256];
static char fuzz_file_path[320];

static inline void fuzz_dir_cleanup(void)
{
	if (fuzz_file_path[0])
		unlink(fuzz_file_path);
	if (fuzz_dir_path[0])
		rmdir(fuzz_dir_path);
}

/* Writes the input to <scratch dir>/name (created on first use, same name every time) and
 * returns its path. */
static inline const char *fuzz_write(const char *name, const uint8_t *data, size_t size)
{
	FILE *f;

	if (!fuzz_dir_path[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/imageguard-fuzz.XXXXXX",
		         tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(fuzz_dir_path))
			abort();
		snprintf(fuzz_file_path, sizeof(fuzz_file_path), "%s/%s", fuzz_dir_path, name);
		atexit(fuzz_dir_cleanup);
	}
	/* A new file each time: truncating one in place makes ext4 flush it on close
	 * (auto_da_alloc), which slows fuzzing down a hundredfold. */
	unlink(fuzz_file_path);
	if (!(f = fopen(fuzz_file_path, "wb")) || (size && fwrite(data, 1, size, f) != size) ||
	    fclose(f) != 0)
		abort();
	return fuzz_file_path;
}

#endif
