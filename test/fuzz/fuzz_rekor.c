/* Rekor log entries, cosign's bundle annotation and checkpoints as signatures carry them: read
 * strictly, then every proof checked against a real Rekor key, never crashing, never reading
 * past the input. The input is tried as a bundle tlogEntry, a cosign annotation and a
 * checkpoint note. */
#include <jansson.h>

#include "fuzz.h"

#include "imageguard/sigstore/rekor.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/error.h"

#define REKOR                                                                                      \
	"-----BEGIN PUBLIC KEY-----\n"                                                             \
	"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2G2Y+2tabdTV5BcGiBIx0a9fAFwr\n"                       \
	"kBbmLSGtks4L3qX6yYY0zufBnhC8Ur/iy55GhWP/9A/bY2LhC30M9+RYtw==\n"                           \
	"-----END PUBLIC KEY-----\n"

static struct trustroot *tr;

static void checks(const struct rekor_entry *e)
{
	static const unsigned char digest[32];
	const unsigned char sig[4] = {1, 2, 3, 4};
	struct rekor_claim claim = {sig, sizeof(sig), digest, digest};
	char why[256];

	FUZZ_CHECK(e->n_hashes <= MERKLE_MAX_PROOF && e->body_len <= REKOR_MAX_BODY);
	(void)rekor_verify_set(e, tr);
	if (rekor_verify_proof(e, tr, why, sizeof(why)) < 0)
		FUZZ_CHECK(why[0]);
	if (rekor_check_body(e, &claim, why, sizeof(why)) < 0)
		FUZZ_CHECK(why[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rekor_entry e;
	struct rekor_checkpoint cp;
	struct error err = ERROR_INIT;
	json_t *j;

	fuzz_quiet();
	if (!tr) {
		FUZZ_CHECK(trustroot_new(&tr, "fuzz", &err) == 0);
		FUZZ_CHECK(trustroot_add(tr, "rekor.pub", (const unsigned char *)REKOR,
		                         strlen(REKOR), &err) == 0);
	}
	if ((j = json_loadb((const char *)data, size, 0, NULL))) {
		if (rekor_entry_from_json(&e, j, &err) == 0) {
			checks(&e);
			rekor_entry_release(&e);
		}
		json_decref(j);
	}
	if (rekor_entry_from_cosign(&e, (const char *)data, size, &err) == 0) {
		checks(&e);
		rekor_entry_release(&e);
	}
	if (rekor_checkpoint_parse(&cp, (const char *)data, size, &err) == 0)
		FUZZ_CHECK(cp.note_len < size && data[cp.note_len] == '\n');
	return 0;
}
