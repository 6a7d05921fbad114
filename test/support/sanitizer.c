/* Sanitizer defaults for every test binary (inert without -fsanitize=address): full stack
 * unwinding, and LeakSanitizer suppressions for third-party libraries only (as valgrind.supp). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <git2.h>
#include <git2/sys/alloc.h>

const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);

/* Defined (as 1) only by a suite that connects over ssh with libgit2 (test_gitstore). */
extern const int sanitizer_slow_unwind __attribute__((weak));

/* Debian's libgit2 has no frame pointers: the fast unwinder stops inside it, so suppressions
 * could not see the exported frame they name. Only the suite that needs it pays: unwinding
 * every malloc slowly makes the others about five times slower under ASan (test_markers'
 * mutation test then ran into its timeout on a loaded machine). */
const char *__asan_default_options(void)
{
	return &sanitizer_slow_unwind ? "fast_unwind_on_malloc=0" : "";
}

/* libgit2 1.5's ssh transport leaks while connecting: load_known_hosts() releases its paths
 * with git_str_clear instead of git_str_dispose and never frees the libssh2 known-hosts
 * handle, and a refused key leaks libssh2's auth list (fixed upstream in libgit2 1.6).
 *
 * LeakSanitizer matches a suppression against any frame of the stack, and Debian strips the
 * names of libgit2's static functions, so "leak:git_remote_connect_ext" would also cover
 * whatever our own credential and certificate callbacks allocate (they run under it). The
 * suppressions are narrower: libssh2's two exported functions that leak (imageguard never
 * calls libssh2 itself), and libgit2_connect_alloc below, through which libgit2's own
 * allocator hands out what libgit2 allocates while git_remote_connect_ext is on the stack.
 * Our callbacks allocate with malloc, never through libgit2's allocator: a leak of theirs is
 * reported. And git_remote_fetch copies the custom headers (our bearer header) with
 * git_strarray_copy into its connect options and does not free the copy when the connection
 * fails (a refused redirect): imageguard never calls git_strarray_copy, and no callback of
 * ours runs under it. */
const char *__lsan_default_suppressions(void)
{
	return "leak:libssh2_knownhost_init\n"
	       "leak:libssh2_userauth_list\n"
	       "leak:libgit2_connect_alloc\n"
	       "leak:git_strarray_copy\n";
}

#if defined(__SANITIZE_ADDRESS__)
static uintptr_t connect_lo, connect_hi; /* git_remote_connect_ext's code */

/* Whether git_remote_connect_ext is among the callers (backtrace unwinds by .eh_frame). */
static int under_connect(void)
{
	void *pcs[64];
	int n = backtrace(pcs, 64);

	for (int i = 0; i < n; i++)
		if ((uintptr_t)pcs[i] > connect_lo && (uintptr_t)pcs[i] < connect_hi)
			return 1;
	return 0;
}

/* The one frame the suppression names: not inlined, and p is used after the call so that it
 * cannot become a tail call and vanish from the stack. */
__attribute__((noinline)) static void *libgit2_connect_alloc(void *old, size_t n)
{
	void *p = realloc(old, n ? n : 1);

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void *lg_realloc(void *old, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return under_connect() ? libgit2_connect_alloc(old, n) : realloc(old, n ? n : 1);
}

static void *lg_malloc(size_t n, const char *file, int line)
{
	return lg_realloc(NULL, n, file, line);
}

static void *lg_calloc(size_t nelem, size_t elsize, const char *file, int line)
{
	void *p;

	if (elsize && nelem > SIZE_MAX / elsize)
		return NULL;
	if ((p = lg_realloc(NULL, nelem * elsize, file, line)))
		memset(p, 0, nelem * elsize);
	return p;
}

static char *lg_substrdup(const char *s, size_t n, const char *file, int line)
{
	char *p = n < SIZE_MAX ? lg_realloc(NULL, n + 1, file, line) : NULL;

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static char *lg_strdup(const char *s, const char *file, int line)
{
	return lg_substrdup(s, strlen(s), file, line);
}

static char *lg_strndup(const char *s, size_t n, const char *file, int line)
{
	return lg_substrdup(s, strnlen(s, n), file, line);
}

static void *lg_reallocarray(void *old, size_t nelem, size_t elsize, const char *file, int line)
{
	if (elsize && nelem > SIZE_MAX / elsize)
		return NULL;
	return lg_realloc(old, nelem * elsize, file, line);
}

static void *lg_mallocarray(size_t nelem, size_t elsize, const char *file, int line)
{
	return lg_reallocarray(NULL, nelem, elsize, file, line);
}

static void lg_free(void *p)
{
	free(p);
}

/* Only in the ssh suite, before anything initialises libgit2 (which keeps an allocator set
 * before git_libgit2_init). */
__attribute__((constructor)) static void sanitizer_libgit2_allocator(void)
{
	static git_allocator a = {lg_malloc,       lg_calloc,      lg_strdup,
	                          lg_strndup,      lg_substrdup,   lg_realloc,
	                          lg_reallocarray, lg_mallocarray, lg_free};
	void *sym = NULL, *set = NULL;
	const ElfW(Sym) *ent = NULL;
	Dl_info info;
	int (*opts)(int, ...);

	/* Looked up, not linked: some suites (test_decide) link without libgit2. */
	if (!&sanitizer_slow_unwind || !(set = dlsym(RTLD_DEFAULT, "git_libgit2_opts")))
		return;
	if (!(sym = dlsym(RTLD_DEFAULT, "git_remote_connect_ext")) ||
	    !dladdr1(sym, &info, (void **)&ent, RTLD_DL_SYMENT) || !ent || !ent->st_size)
		return; /* nothing suppressed: the leaks are reported */
	connect_lo = (uintptr_t)sym;
	connect_hi = connect_lo + ent->st_size;
	memcpy(&opts, &set, sizeof(opts));
	opts(GIT_OPT_SET_ALLOCATOR, &a);
}
#endif
