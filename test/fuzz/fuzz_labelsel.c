/* Label selectors (labelsel_parse): any bytes parse or fail with a one-line message, a parsed
 * selector stays within its caps, parsing is deterministic, the empty selector matches
 * everything, and matching any label set read from the input never crashes. */
#include "fuzz.h"

#include "imageguard/config/labelsel.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"

/* Labels from the text after the first NUL-free half: "k=v" words split on spaces. */
static void labels_from(struct strvec *out, const char *s)
{
	const char *p = s;

	while (*p && out->len < 64) {
		const char *end = strchr(p, ' '), *eq;
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char word[128];

		snprintf(word, sizeof(word), "%.*s", (int)(n < 127 ? n : 127), p);
		if ((eq = strchr(word, '='))) {
			word[eq - word] = '\0';
			FUZZ_CHECK(strvec_push(out, word) == 0 && strvec_push(out, eq + 1) == 0);
		}
		p += n;
		while (*p == ' ')
			p++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size), *nl = strchr(text, '\n');
	struct labelsel *s = NULL, *again = NULL;
	struct strvec labels = STRVEC_INIT;
	struct error err = ERROR_INIT;
	int rc;

	fuzz_quiet();
	/* "selector\nlabels": the first line is the selector when there is a second */
	if (nl && strchr(nl + 1, '='))
		*nl = '\0', labels_from(&labels, nl + 1);
	rc = labelsel_parse(&s, text, &err);
	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID);
	if (rc == 0) {
		FUZZ_CHECK(s && labelsel_len(s) <= LABELSEL_MAX_REQUIREMENTS);
		FUZZ_CHECK(labelsel_parse(&again, text, &err) == 0);
		FUZZ_CHECK(labelsel_len(again) == labelsel_len(s));
		FUZZ_CHECK(labelsel_matches(s, &labels) == labelsel_matches(again, &labels));
		FUZZ_CHECK(labelsel_len(s) > 0 || labelsel_matches(s, &labels));
	} else {
		FUZZ_CHECK(!s && err.msg[0] && !strchr(err.msg, '\n'));
	}
	labelsel_free(s);
	labelsel_free(again);
	strvec_release(&labels);
	free(text);
	return 0;
}
