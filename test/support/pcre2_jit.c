/* Unit suites under valgrind run pcre2 without its JIT. The JIT looks for a pattern's first
 * character with aligned 16-byte SIMD loads that may extend past the subject's end (inside the
 * same page, so never a fault); memcheck reports those bytes as uninitialised from frames it
 * cannot name (JIT code has no symbols), which no narrow suppression can match. Without JIT,
 * pcre2 interprets (policy.c treats JIT as an optimisation) and memcheck checks every byte it
 * reads. Outside valgrind (plain and ASan runs) the real pcre2_jit_compile runs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <valgrind/valgrind.h>

int pcre2_jit_compile_8(pcre2_code_8 *code, uint32_t options)
{
	int (*real)(pcre2_code_8 *, uint32_t);

	if (RUNNING_ON_VALGRIND)
		return PCRE2_ERROR_JIT_BADOPTION;
	*(void **)&real = dlsym(RTLD_NEXT, "pcre2_jit_compile_8");
	return real ? real(code, options) : PCRE2_ERROR_JIT_BADOPTION;
}
