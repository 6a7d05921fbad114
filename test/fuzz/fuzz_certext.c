/* Certificates as signatures carry them (DER in bundles, PEM in cosign's annotations) and the
 * Fulcio identity read from their extensions: issuer and SANs are plain one-line text. */
#include "fuzz.h"

#include "imageguard/sigstore/fulcio.h"
#include "imageguard/util/error.h"

static void check_text(const char *s)
{
	FUZZ_CHECK(strlen(s) < FULCIO_MAX_NAME);
	for (; *s; s++)
		FUZZ_CHECK((unsigned char)*s >= 0x20 && *s != 0x7f);
}

static void identity(X509 *cert)
{
	struct fulcio_identity id;
	struct error err = ERROR_INIT;

	if (fulcio_identity(&id, cert, &err) < 0)
		return;
	check_text(id.issuer);
	FUZZ_CHECK(id.n_sans <= FULCIO_MAX_SANS);
	for (size_t i = 0; i < id.n_sans; i++) {
		FUZZ_CHECK(id.sans[i][0]);
		check_text(id.sans[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	STACK_OF(X509) *chain = NULL;
	struct error err = ERROR_INIT;
	X509 *cert = NULL;

	fuzz_quiet();
	if (fulcio_parse_der(&cert, data, size, &err) == 0) {
		identity(cert);
		X509_free(cert);
	}
	if (fulcio_parse_pem(&chain, (const char *)data, size, FULCIO_MAX_CHAIN, &err) == 0) {
		FUZZ_CHECK(sk_X509_num(chain) >= 1 && sk_X509_num(chain) <= FULCIO_MAX_CHAIN);
		identity(sk_X509_value(chain, 0));
		sk_X509_pop_free(chain, X509_free);
	}
	return 0;
}
