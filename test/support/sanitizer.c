/* Sanitizer defaults for every test binary (inert without -fsanitize=address): full stack
 * unwinding, and LeakSanitizer suppressions for third-party libraries only (as valgrind.supp). */

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
 * handle, and a refused key leaks libssh2's auth list (fixed upstream in libgit2 1.6). The
 * frames are static, so the narrowest exported frame is git_remote_connect_ext: only what is
 * allocated while connecting is covered, never what imageguard allocates. */
const char *__lsan_default_suppressions(void)
{
	return "leak:libssh2_knownhost_init\n"
	       "leak:git_remote_connect_ext\n";
}
