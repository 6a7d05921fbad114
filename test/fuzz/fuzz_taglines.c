/* Tag lines, read whole (taglines_parse, duplicates folded) and streamed (taglines_stream_fd,
 * in blocks of 1-64 bytes chosen by the input's first byte, so every cut falls somewhere): both
 * must agree on the tags once folded, and on the unreadable lines. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

#include "imageguard/util/error.h"
#include "imageguard/policy/taglines.h"

struct walk {
	const struct taglines *whole;
	size_t next; /* the next tag of whole not yet seen in the stream */
};

/* Each streamed tag is either the next new one of the folded list or one seen before. */
static int check_batch(void *ctx, const char *const *tags, size_t n, struct error *err)
{
	struct walk *w = ctx;

	(void)err;
	for (size_t k = 0; k < n; k++) {
		bool seen = false;

		FUZZ_CHECK(tags[k][0] != '\0');
		for (size_t j = 0; j < w->next && !seen; j++)
			seen = strcmp(w->whole->tags[j], tags[k]) == 0;
		if (!seen) {
			FUZZ_CHECK(w->next < w->whole->n);
			FUZZ_CHECK(strcmp(w->whole->tags[w->next], tags[k]) == 0);
			w->next++;
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct taglines whole = TAGLINES_INIT;
	struct taglines_stats st;
	struct walk w = {&whole, 0};
	size_t block;
	char *copy;
	int fd;

	if (size < 1 || size > 65536)
		return 0;
	block = 1 + data[0] % 64;
	data++, size--;
	copy = malloc(size + 1);
	FUZZ_CHECK(copy != NULL);
	memcpy(copy, data, size);
	FUZZ_CHECK(taglines_parse(&whole, copy, size, NULL) == 0);
	fd = memfd_create("taglines", 0);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, data, size) == (ssize_t)size);
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	FUZZ_CHECK(taglines_stream_fd(&st, fd, TAGLINES_INPUT_MAX, block, check_batch, &w, NULL) ==
	           0);
	FUZZ_CHECK(w.next == whole.n);
	FUZZ_CHECK(st.unreadable == whole.unreadable);
	FUZZ_CHECK(st.first_bad == whole.first_bad);
	close(fd);
	taglines_release(&whole);
	return 0;
}
