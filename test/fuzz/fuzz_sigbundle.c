/* Sigstore bundles judged as an image's signature under a real trust root (the public-good
 * trusted_root.json of test/data, read from the repository root where test/fuzz/run works)
 * and a signer key: every input ends in a verdict with a one-line detail, and only a verdict
 * that verified names a signer. */
#include "fuzz.h"

#include "imageguard/sigstore/bundle.h"
#include "imageguard/sigstore/sigverify.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define ROOT "test/data/sigstore/sgo-provenance/trusted_root.json"
#define KEY                                                                                        \
	"-----BEGIN PUBLIC KEY-----\n"                                                             \
	"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFNLqFhf4fiN6o/glAuYnq2jYUeL0\n"                       \
	"vRuLu/z39pmbVwS9ff5AYnlwaP9sxREajdLY9ynM6G1sy6AAmb7Z63TsLg==\n"                           \
	"-----END PUBLIC KEY-----\n"

static struct sigverify_policy *policy;

static void make_policy(void)
{
	struct oidcmatch_rule rule = {"token", "sigstore-js"};
	struct sigverify_options o = {&rule, 1, false, NULL, 0};
	struct buf root = BUF_INIT;
	struct trustroot *tr;
	struct error err = ERROR_INIT;

	FUZZ_CHECK(buf_read_file(&root, ROOT) == 0);
	FUZZ_CHECK(trustroot_new(&tr, "fuzz", &err) == 0);
	FUZZ_CHECK(trustroot_add(tr, "trusted_root.json", (unsigned char *)root.data, root.len,
	                         &err) == 0);
	FUZZ_CHECK(trustroot_add(tr, "cosign.pub", (const unsigned char *)KEY, strlen(KEY), &err) ==
	           0);
	FUZZ_CHECK(trustroot_finish(tr, &err) == 0);
	FUZZ_CHECK(sigverify_policy_new(&policy, tr, &o, &err) == 0);
	buf_release(&root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const digests[] = {
	    "sha512:76176ffa33808b54602c7c35de5c6e9a4deb96066dba6533f50ac234f4f1f4c6b3527515dc17c06"
	    "fbe2860030f410eee69ea20079bd3a2c6f3dcf3b329b10751",
	    "sha256:634a8f35b5f16dcf4aaa0822adc0b1964bb786fca12f6831de8ddc45e5986a00"};
	struct sigverify_result r;

	fuzz_quiet();
	if (!policy)
		make_policy();
	for (size_t i = 0; i < 2; i++) {
		memset(&r, 0, sizeof(r));
		bundle_verify(&r, policy, digests[i], (const char *)data, size, "bundle");
		FUZZ_CHECK(r.status >= SIGVERIFY_OK && r.status <= SIGVERIFY_DIGEST_MISMATCH);
		FUZZ_CHECK(r.status != SIGVERIFY_UNSIGNED);
		FUZZ_CHECK((r.status == SIGVERIFY_OK) == (r.signer[0] != '\0'));
		for (const char *p = r.detail; *p; p++)
			FUZZ_CHECK((unsigned char)*p >= 0x20 || (*p & 0x80));
	}
	return 0;
}
