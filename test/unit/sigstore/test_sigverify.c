/* The signature gate (sigverify) on real recorded signatures: cosign's own `.sig` signatures
 * from containers/image's test data (a key, a key logged in Rekor, keyless with Fulcio and
 * Rekor, a private PKI) and Sigstore bundles from cosign's and sigstore-go's test data (see
 * test/data/sigstore/README.md), served through a fake registry source. Each must verify, and
 * no one-byte tamper of a payload, signature or bundle may. */
#include <check.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/sigstore/bundle.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/sigverify.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define DATA "test/data/sigstore/"
#define KEYS DATA "cimage-keys/"
#define KEYLESS_DIGEST "sha256:0489474da8ea22426ece86ace6c1c0026ab2fd3cdfbbd62b7e94650266c37d9a"
#define KEY_DIGEST "sha256:634a8f35b5f16dcf4aaa0822adc0b1964bb786fca12f6831de8ddc45e5986a00"
#define OTHER_DIGEST "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define ATTEST_DIGEST "sha256:732112270d7e59418a8c080b134b24cabd67d250d0d0147a97ed95ba5c280aa4"

static void read_data(struct buf *b, const char *rel)
{
	const char *root = getenv("IMAGEGUARD_SRC");
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root && *root ? root : ".", rel);
	buf_reset(b);
	ck_assert_msg(buf_read_file(b, path) == 0, "cannot read %s", path);
}

/* ---- a registry in memory ---- */

#define FAKE_MAX 32

struct fake {
	char refs[FAKE_MAX][200];
	struct buf bodies[FAKE_MAX];
	size_t n;
	bool referrers_api;
	int listing; /* has_tag answer for tags not stored: 0 absent, -1 unknown */
	unsigned calls;
};

static void fake_release(struct fake *f)
{
	for (size_t i = 0; i < f->n; i++)
		buf_release(&f->bodies[i]);
	f->n = 0;
}

static void fake_put(struct fake *f, const char *ref, const void *data, size_t len)
{
	ck_assert_uint_lt(f->n, FAKE_MAX);
	snprintf(f->refs[f->n], sizeof(f->refs[0]), "%s", ref);
	f->bodies[f->n] = (struct buf)BUF_INIT;
	ck_assert_int_eq(buf_append(&f->bodies[f->n], data, len), 0);
	f->n++;
}

/* Stores a blob under its digest, written into digest (72 bytes). */
static void fake_blob(struct fake *f, const void *data, size_t len, char *digest)
{
	unsigned char md[32];

	ck_assert_int_eq(sigcrypto_sha256(md, data, len), 0);
	memcpy(digest, "sha256:", 7);
	sigcrypto_hex(digest + 7, md, 32);
	fake_put(f, digest, data, len);
}

static const struct buf *fake_find(const struct fake *f, const char *ref)
{
	for (size_t i = f->n; i-- > 0;)
		if (strcmp(f->refs[i], ref) == 0)
			return &f->bodies[i];
	return NULL;
}

static int fake_get(struct fake *f, struct buf *body, const char *ref, struct error *err)
{
	const struct buf *b = fake_find(f, ref);

	f->calls++;
	if (!b)
		return error_set(err, IG_ENOTFOUND, "'%s': 404 not found", ref);
	buf_reset(body);
	return buf_append(body, b->data, b->len) < 0
	           ? error_set(err, IG_ETOOBIG, "'%s': too large", ref)
	           : 0;
}

static int get_manifest(void *ctx, struct buf *body, char *type, size_t n, const char *ref,
                        struct error *err)
{
	snprintf(type, n, "application/vnd.oci.image.manifest.v1+json");
	return fake_get(ctx, body, ref, err);
}

static int get_blob(void *ctx, struct buf *body, const char *digest, struct error *err)
{
	unsigned char md[32];
	char hex[65];
	int rc = fake_get(ctx, body, digest, err);

	if (rc < 0)
		return rc;
	sigcrypto_sha256(md, body->data, body->len);
	sigcrypto_hex(hex, md, 32);
	return strcmp(hex, digest + 7) == 0
	           ? 0
	           : error_set(err, IG_EINVALID, "blob '%s': does not match its digest", digest);
}

static int get_referrers(void *ctx, struct buf *body, const char *digest, struct error *err)
{
	struct fake *f = ctx;
	char ref[200];

	if (!f->referrers_api) {
		f->calls++;
		return error_set(err, IG_ENOTFOUND, "referrers: 404 not found");
	}
	snprintf(ref, sizeof(ref), "referrers/%s", digest);
	return fake_get(f, body, ref, err);
}

static int has_tag(void *ctx, const char *tag)
{
	struct fake *f = ctx;

	return f->listing < 0 ? -1 : fake_find(f, tag) ? 1 : 0;
}

static struct sigverify_source source(struct fake *f)
{
	struct sigverify_source s = {get_manifest, get_blob, get_referrers, has_tag, f};

	return s;
}

/* ---- policies ---- */

struct key_file {
	const char *key, *path;
};

static struct sigverify_policy *policy(const struct key_file *files, size_t n, const char *issuer,
                                       const char *subject)
{
	struct oidcmatch_rule rule = {issuer, subject};
	struct sigverify_options o = {&rule, issuer || subject ? 1 : 0, false, NULL, 0};
	struct sigverify_policy *p;
	struct trustroot *tr;
	struct error err = ERROR_INIT;
	struct buf b = BUF_INIT;

	ck_assert_int_eq(trustroot_new(&tr, "test", &err), 0);
	for (size_t i = 0; i < n; i++) {
		read_data(&b, files[i].path);
		ck_assert_msg(
		    trustroot_add(tr, files[i].key, (unsigned char *)b.data, b.len, &err) == 0,
		    "%s", err.msg);
	}
	buf_release(&b);
	ck_assert_msg(trustroot_finish(tr, &err) == 0, "%s", err.msg);
	ck_assert_msg(sigverify_policy_new(&p, tr, &o, &err) == 0, "%s", err.msg);
	return p;
}

static const struct key_file key_secret[] = {{"cosign.pub", KEYS "cosign.pub"}};
static const struct key_file key2_secret[] = {{"cosign.pub", KEYS "cosign2.pub"}};
static const struct key_file key_rekor_secret[] = {{"cosign.pub", KEYS "cosign2.pub"},
                                                   {"rekor.pub", KEYS "rekor.pub"}};
static const struct key_file keyless_secret[] = {{"fulcio.crt.pem", KEYS "fulcio_v1.crt.pem"},
                                                 {"rekor.pub", KEYS "rekor.pub"}};
static const struct key_file public_good_secret[] = {
    {"trusted_root.json", DATA "sgo-provenance/trusted_root.json"}};
static const struct key_file pki_secret[] = {{"fulcio.crt.pem", KEYS "pki_root_crts.pem"},
                                             {"fulcio-2.crt.pem", KEYS "pki_intermediate_crts.pem"},
                                             {"rekor.pub", KEYS "rekor.pub"}};

/* ---- cosign's legacy signatures, as containers/image recorded them ---- */

/* A containers/image signature file: a header line, then {mimeType, payload, annotations}. */
static json_t *cimage_signature(const char *dir, struct buf *payload)
{
	struct buf b = BUF_INIT;
	char rel[256];
	const char *brace;
	json_t *j;

	snprintf(rel, sizeof(rel), DATA "%s/signature-1", dir);
	read_data(&b, rel);
	ck_assert_ptr_nonnull(brace = memchr(b.data, '{', b.len));
	j = json_loadb(brace, b.len - (size_t)(brace - b.data), 0, NULL);
	ck_assert_ptr_nonnull(j);
	payload->max = 1 << 20;
	ck_assert_int_eq(
	    sigcrypto_b64decode(payload, json_string_value(json_object_get(j, "payload")),
	                        strlen(json_string_value(json_object_get(j, "payload")))),
	    0);
	buf_release(&b);
	return j;
}

/* Puts cosign's `.sig` manifest for digest `for_digest`: one simple-signing layer with the
 * payload (stored as a blob) and the annotations, exactly cosign's layout. */
static void put_sig(struct fake *f, const char *for_digest, const struct buf *payload,
                    json_t *annotations)
{
	char blob[80], config[80], tag[160];
	json_t *m;
	char *text;

	fake_blob(f, payload->data, payload->len, blob);
	fake_blob(f, "{}", 2, config);
	m = json_pack("{s:i, s:s, s:{s:s, s:i, s:s}, s:[{s:s, s:I, s:s, s:O}]}", "schemaVersion", 2,
	              "mediaType", "application/vnd.oci.image.manifest.v1+json", "config",
	              "mediaType", "application/vnd.oci.image.config.v1+json", "size", 2, "digest",
	              config, "layers", "mediaType",
	              "application/vnd.dev.cosign.simplesigning.v1+json", "size",
	              (json_int_t)payload->len, "digest", blob, "annotations", annotations);
	ck_assert_ptr_nonnull(m);
	text = json_dumps(m, JSON_COMPACT);
	snprintf(tag, sizeof(tag), "sha256-%s.sig", for_digest + 7);
	fake_put(f, tag, text, strlen(text));
	free(text);
	json_decref(m);
}

/* The recorded signature of containers/image fixture dir, put for for_digest. */
static void put_recorded(struct fake *f, const char *dir, const char *for_digest)
{
	struct buf payload = BUF_INIT;
	json_t *sig = cimage_signature(dir, &payload);

	put_sig(f, for_digest, &payload, json_object_get(sig, "annotations"));
	json_decref(sig);
	buf_release(&payload);
}

static void check(struct sigverify_result *r, const struct sigverify_policy *p, const char *digest,
                  struct fake *f)
{
	struct sigverify_source s = source(f);
	struct error err = ERROR_INIT;

	ck_assert_msg(sigverify_check(r, p, digest, &s, &err) == 0, "%s", err.msg);
}

/* The recorded image manifests hash to the digests their payloads name. */
START_TEST(recorded_manifests_are_the_signed_digests)
{
	static const char *const cases[][2] = {
	    {"cimage-cosign-valid", KEY_DIGEST},
	    {"cimage-cosign-fulcio-rekor-valid", KEYLESS_DIGEST},
	    {"cimage-cosign-key-rekor-valid", KEYLESS_DIGEST},
	};
	struct buf b = BUF_INIT;
	unsigned char md[32];
	char rel[256], hex[65];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(rel, sizeof(rel), DATA "%s/manifest.json", cases[i][0]);
		read_data(&b, rel);
		sigcrypto_sha256(md, b.data, b.len);
		sigcrypto_hex(hex, md, 32);
		ck_assert_str_eq(hex, cases[i][1] + 7);
	}
	buf_release(&b);
}
END_TEST

/* One row: a recorded signature (put for `put_for`), a secret, rules, the digest checked. */
struct legacy_case {
	const char *name, *dir, *put_for, *digest;
	const struct key_file *secret;
	size_t nsecret;
	const char *issuer, *subject;
	enum sigverify_status want;
	const char *signer; /* expected with OK */
};

#define S(x) x, sizeof(x) / sizeof(x[0])
#define GH "https://github.com/login/oauth"

static const struct legacy_case legacy[] = {
    {"key", "cimage-cosign-valid", KEY_DIGEST, KEY_DIGEST, S(key_secret), NULL, NULL, SIGVERIFY_OK,
     "key cosign.pub (sha256:"},
    {"another key", "cimage-cosign-valid", KEY_DIGEST, KEY_DIGEST, S(key2_secret), NULL, NULL,
     SIGVERIFY_BAD_SIGNATURE, NULL},
    {"replayed onto another digest", "cimage-cosign-valid", OTHER_DIGEST, OTHER_DIGEST,
     S(key_secret), NULL, NULL, SIGVERIFY_DIGEST_MISMATCH, NULL},
    {"unsigned", "cimage-cosign-valid", KEY_DIGEST, OTHER_DIGEST, S(key_secret), NULL, NULL,
     SIGVERIFY_UNSIGNED, NULL},
    {"key logged in rekor", "cimage-cosign-key-rekor-valid", KEYLESS_DIGEST, KEYLESS_DIGEST,
     S(key_rekor_secret), NULL, NULL, SIGVERIFY_OK, "key cosign.pub"},
    {"key logged, no rekor key", "cimage-cosign-key-rekor-valid", KEYLESS_DIGEST, KEYLESS_DIGEST,
     S(key2_secret), NULL, NULL, SIGVERIFY_OK, "key cosign.pub"},
    {"keyless", "cimage-cosign-fulcio-rekor-valid", KEYLESS_DIGEST, KEYLESS_DIGEST,
     S(keyless_secret), "^https://github\\.com/login/oauth$", "^mitr@redhat\\.com$", SIGVERIFY_OK,
     "mitr@redhat.com (" GH ")"},
    {"keyless, public-good trusted root (SCT checked)", "cimage-cosign-fulcio-rekor-valid",
     KEYLESS_DIGEST, KEYLESS_DIGEST, S(public_good_secret), GH, "^mitr@redhat\\.com$", SIGVERIFY_OK,
     "mitr@redhat.com"},
    {"keyless, unanchored as Go", "cimage-cosign-fulcio-rekor-valid", KEYLESS_DIGEST,
     KEYLESS_DIGEST, S(keyless_secret), "github", "redhat", SIGVERIFY_OK, "mitr@redhat.com"},
    {"keyless, wrong subject", "cimage-cosign-fulcio-rekor-valid", KEYLESS_DIGEST, KEYLESS_DIGEST,
     S(keyless_secret), "^https://github\\.com/login/oauth$", "^someone@redhat\\.com$",
     SIGVERIFY_IDENTITY_MISMATCH, NULL},
    {"keyless, wrong issuer", "cimage-cosign-fulcio-rekor-valid", KEYLESS_DIGEST, KEYLESS_DIGEST,
     S(keyless_secret), "^https://accounts\\.google\\.com$", "redhat", SIGVERIFY_IDENTITY_MISMATCH,
     NULL},
    {"keyless, replayed", "cimage-cosign-fulcio-rekor-valid", OTHER_DIGEST, OTHER_DIGEST,
     S(keyless_secret), GH, "mitr", SIGVERIFY_DIGEST_MISMATCH, NULL},
    {"keyless, key-only secret", "cimage-cosign-fulcio-rekor-valid", KEYLESS_DIGEST, KEYLESS_DIGEST,
     S(key_secret), NULL, NULL, SIGVERIFY_UNTRUSTED_SIGNER, NULL},
    {"keyless, another CA", "cimage-cosign-fulcio-rekor-valid", KEYLESS_DIGEST, KEYLESS_DIGEST,
     S(pki_secret), GH, "mitr", SIGVERIFY_UNTRUSTED_SIGNER, NULL},
    {"private PKI, never logged", "cimage-cosign-pki-valid",
     "sha256:253c890b744fe3efa923b68e3a1be07bd007eb44ba29da1e7deb1d4c53b3e212",
     "sha256:253c890b744fe3efa923b68e3a1be07bd007eb44ba29da1e7deb1d4c53b3e212", S(pki_secret), "",
     "qiwan", SIGVERIFY_NO_TRANSPARENCY_PROOF, NULL},
};

START_TEST(legacy_recorded)
{
	const struct legacy_case *c = &legacy[_i];
	struct sigverify_policy *p = policy(c->secret, c->nsecret, c->issuer, c->subject);
	struct fake f = {.listing = -1};
	struct sigverify_result r;

	put_recorded(&f, c->dir, c->put_for);
	check(&r, p, c->digest, &f);
	ck_assert_msg(r.status == c->want, "%s: %s (%s), want %s", c->name,
	              sigverify_status_name(r.status), r.detail, sigverify_status_name(c->want));
	if (c->signer)
		ck_assert_msg(strstr(r.signer, c->signer), "%s: signer '%s'", c->name, r.signer);
	if (r.status != SIGVERIFY_UNSIGNED)
		ck_assert_str_eq(r.format, "cosign");
	fake_release(&f);
	sigverify_policy_free(p);
}
END_TEST

/* Every one-bit change of the recorded payload (re-uploaded with a matching descriptor, as an
 * attacker with push rights can) and of the signature is refused. */
static void tamper_legacy(const char *dir, const char *digest, const struct key_file *secret,
                          size_t n, const char *issuer, const char *subject)
{
	struct sigverify_policy *p = policy(secret, n, issuer, subject);
	struct buf payload = BUF_INIT, sig = BUF_INIT_MAX(4096), enc = BUF_INIT;
	json_t *rec = cimage_signature(dir, &payload), *ann;
	const char *b64 = json_string_value(json_object_get(json_object_get(rec, "annotations"),
	                                                    "dev.cosignproject.cosign/signature"));
	struct sigverify_result r;

	ck_assert_int_eq(sigcrypto_b64decode(&sig, b64, strlen(b64)), 0);
	for (size_t i = 0; i < payload.len + sig.len; i++) {
		struct fake f = {.listing = -1};
		struct buf *target = i < payload.len ? &payload : &sig;
		size_t at = i < payload.len ? i : i - payload.len;

		target->data[at] ^= 0x01;
		ann = json_deep_copy(json_object_get(rec, "annotations"));
		buf_reset(&enc);
		sigcrypto_b64encode(&enc, (unsigned char *)sig.data, sig.len);
		json_object_set_new(ann, "dev.cosignproject.cosign/signature",
		                    json_string(enc.data));
		put_sig(&f, digest, &payload, ann);
		check(&r, p, digest, &f);
		ck_assert_msg(r.status == SIGVERIFY_BAD_SIGNATURE, "%s byte %zu: %s (%s)",
		              i < payload.len ? "payload" : "signature", at,
		              sigverify_status_name(r.status), r.detail);
		target->data[at] ^= 0x01;
		json_decref(ann);
		fake_release(&f);
	}
	json_decref(rec);
	buf_release(&payload);
	buf_release(&sig);
	buf_release(&enc);
	sigverify_policy_free(p);
}

START_TEST(legacy_key_tampered)
{
	tamper_legacy("cimage-cosign-valid", KEY_DIGEST, S(key_secret), NULL, NULL);
}
END_TEST

START_TEST(legacy_keyless_tampered)
{
	tamper_legacy("cimage-cosign-fulcio-rekor-valid", KEYLESS_DIGEST, S(keyless_secret), GH,
	              "mitr");
}
END_TEST

/* The Rekor bundle annotation of a keyless signature: every one-bit change of its SET or body
 * fails the transparency proof; without it there is no proof at all. */
START_TEST(legacy_keyless_rekor_tampered)
{
	struct sigverify_policy *p = policy(S(keyless_secret), GH, "mitr");
	struct buf payload = BUF_INIT;
	json_t *rec = cimage_signature("cimage-cosign-fulcio-rekor-valid", &payload);
	json_t *ann = json_object_get(rec, "annotations");
	const char *bundle = json_string_value(json_object_get(ann, "dev.sigstore.cosign/bundle"));
	json_t *b = json_loads(bundle, 0, NULL);
	const char *fields[] = {"SignedEntryTimestamp", "Payload.body"};
	struct sigverify_result r;

	for (size_t k = 0; k < 2; k++) {
		json_t *holder = k ? json_object_get(b, "Payload") : b;
		const char *name = k ? "body" : "SignedEntryTimestamp";
		char *orig = strdup(json_string_value(json_object_get(holder, name)));
		struct buf raw = BUF_INIT, enc = BUF_INIT;

		raw.max = 1 << 20;
		ck_assert_int_eq(sigcrypto_b64decode(&raw, orig, strlen(orig)), 0);
		for (size_t i = 0; i < raw.len; i += k ? 7 : 1) {
			struct fake f = {.listing = -1};
			json_t *a2 = json_deep_copy(ann);
			char *text;

			raw.data[i] ^= 0x01;
			buf_reset(&enc);
			sigcrypto_b64encode(&enc, (unsigned char *)raw.data, raw.len);
			json_object_set_new(holder, name, json_string(enc.data));
			text = json_dumps(b, JSON_COMPACT);
			json_object_set_new(a2, "dev.sigstore.cosign/bundle", json_string(text));
			put_sig(&f, KEYLESS_DIGEST, &payload, a2);
			check(&r, p, KEYLESS_DIGEST, &f);
			ck_assert_msg(r.status != SIGVERIFY_OK, "%s byte %zu accepted", fields[k],
			              i);
			raw.data[i] ^= 0x01;
			free(text);
			json_decref(a2);
			fake_release(&f);
		}
		json_object_set_new(holder, name, json_string(orig));
		free(orig);
		buf_release(&raw);
		buf_release(&enc);
	}
	{
		struct fake f = {.listing = -1};
		json_t *a2 = json_deep_copy(ann);

		json_object_del(a2, "dev.sigstore.cosign/bundle");
		put_sig(&f, KEYLESS_DIGEST, &payload, a2);
		check(&r, p, KEYLESS_DIGEST, &f);
		ck_assert_int_eq(r.status, SIGVERIFY_NO_TRANSPARENCY_PROOF);
		json_decref(a2);
		fake_release(&f);
	}
	json_decref(b);
	json_decref(rec);
	buf_release(&payload);
	sigverify_policy_free(p);
}
END_TEST

/* ---- Sigstore bundles ---- */

struct bundle_case {
	const char *name, *file, *root, *digest, *issuer, *subject;
	enum sigverify_status want;
	const char *signer;
};

static const struct bundle_case bundles[] = {
    {"cosign oci attestation (v0.3 dsse)", "cosign-oci-attestation/oci-attestation.sigstore.json",
     "cosign-oci-attestation/trusted_root.json", ATTEST_DIGEST,
     "^https://github\\.com/login/oauth$", "^cody@soyland\\.com$", SIGVERIFY_OK,
     "cody@soyland.com (" GH ")"},
    {"attestation for another digest", "cosign-oci-attestation/oci-attestation.sigstore.json",
     "cosign-oci-attestation/trusted_root.json", OTHER_DIGEST, GH, "cody",
     SIGVERIFY_DIGEST_MISMATCH, NULL},
    {"attestation, wrong subject", "cosign-oci-attestation/oci-attestation.sigstore.json",
     "cosign-oci-attestation/trusted_root.json", ATTEST_DIGEST, GH, "^cody@soyland\\.co$",
     SIGVERIFY_IDENTITY_MISMATCH, NULL},
    {"attestation, another trust root", "cosign-oci-attestation/oci-attestation.sigstore.json",
     "sgo-othername/trusted_root.json", ATTEST_DIGEST, GH, "cody", SIGVERIFY_NO_TRANSPARENCY_PROOF,
     NULL},
    {"othername SAN (v0.3 message signature)", "sgo-othername/othername.sigstore.json",
     "sgo-othername/trusted_root.json",
     "sha256:bc103b4a84971ef6459b294a2b98568a2bfb72cded09d4acd1e16366a401f95b",
     "^http://oidc\\.local:8080$", "^foo!oidc\\.local$", SIGVERIFY_OK,
     "foo!oidc.local (http://oidc.local:8080)"},
    {"othername, email rule", "sgo-othername/othername.sigstore.json",
     "sgo-othername/trusted_root.json",
     "sha256:bc103b4a84971ef6459b294a2b98568a2bfb72cded09d4acd1e16366a401f95b", "oidc",
     "^foo@oidc\\.local$", SIGVERIFY_IDENTITY_MISMATCH, NULL},
    {"npm provenance (v0.1 intoto)", "sgo-provenance/bundle-provenance.json",
     "sgo-provenance/trusted_root.json",
     "sha512:76176ffa33808b54602c7c35de5c6e9a4deb96066dba6533f50ac234f4f1f4c6b3527515dc17c06fbe28"
     "60030f410eee69ea20079bd3a2c6f3dcf3b329b10751",
     "^https://token\\.actions\\.githubusercontent\\.com$",
     "^https://github\\.com/sigstore/sigstore-js/", SIGVERIFY_OK,
     "https://github.com/sigstore/sigstore-js/.github/workflows/release.yml@refs/heads/main"},
};

static struct sigverify_policy *root_policy(const char *root, const char *issuer,
                                            const char *subject)
{
	const struct key_file files[] = {{"trusted_root.json", root}};
	char path[256];

	snprintf(path, sizeof(path), DATA "%s", root);
	((struct key_file *)files)[0].path = path;
	return policy(files, 1, issuer, subject);
}

START_TEST(bundle_recorded)
{
	const struct bundle_case *c = &bundles[_i];
	struct sigverify_policy *p = root_policy(c->root, c->issuer, c->subject);
	struct sigverify_result r = {0};
	struct buf b = BUF_INIT;
	char rel[256];

	snprintf(rel, sizeof(rel), DATA "%s", c->file);
	read_data(&b, rel);
	bundle_verify(&r, p, c->digest, b.data, b.len, "bundle");
	ck_assert_msg(r.status == c->want, "%s: %s (%s), want %s", c->name,
	              sigverify_status_name(r.status), r.detail, sigverify_status_name(c->want));
	if (c->signer)
		ck_assert_msg(strstr(r.signer, c->signer), "%s: signer '%s'", c->name, r.signer);
	buf_release(&b);
	sigverify_policy_free(p);
}
END_TEST

/* Every one-bit change of a whole recorded bundle document is refused (the two bundles carry
 * nothing that verification ignores). */
START_TEST(bundle_tampered)
{
	const struct bundle_case *c = &bundles[_i == 0 ? 0 : 4];
	struct sigverify_policy *p = root_policy(c->root, c->issuer, c->subject);
	struct sigverify_result r;
	struct buf b = BUF_INIT;
	char rel[256];

	snprintf(rel, sizeof(rel), DATA "%s", c->file);
	read_data(&b, rel);
	for (size_t i = 0; i < b.len; i++) {
		b.data[i] ^= 0x01;
		bundle_verify(&r, p, c->digest, b.data, b.len, "bundle");
		ck_assert_msg(r.status != SIGVERIFY_OK, "%s: byte %zu ('%c') accepted", c->name, i,
		              b.data[i] ^ 0x01);
		b.data[i] ^= 0x01;
	}
	buf_release(&b);
	sigverify_policy_free(p);
}
END_TEST

/* A message signature over an artifact that is not at hand is checked against its digest: it
 * verifies under the signing key only, and neither another key nor a changed digest passes
 * (EVP_PKEY_verify answers 0 for a wrong signature, which is not an error). */
START_TEST(prehashed_signatures)
{
	EVP_PKEY *key = EVP_EC_gen("P-256"), *other = EVP_EC_gen("P-256");
	EVP_PKEY_CTX *ctx;
	unsigned char md[32], sig[256];
	size_t len = sizeof(sig);

	ck_assert(key && other);
	ck_assert_int_eq(sigcrypto_sha256(md, "imageguard", 10), 0);
	ctx = EVP_PKEY_CTX_new(key, NULL);
	ck_assert(ctx && EVP_PKEY_sign_init(ctx) == 1 &&
	          EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1 &&
	          EVP_PKEY_sign(ctx, sig, &len, md, sizeof(md)) == 1);
	EVP_PKEY_CTX_free(ctx);
	ck_assert(sigcrypto_verify_prehashed(key, md, sig, len));
	ck_assert(!sigcrypto_verify_prehashed(other, md, sig, len));
	md[0] ^= 1;
	ck_assert(!sigcrypto_verify_prehashed(key, md, sig, len));
	EVP_PKEY_free(key);
	EVP_PKEY_free(other);
}
END_TEST

/* A trusted root whose CT log keys are another key (the Rekor key) under the same log IDs: no
 * SCT verifies, the certificate is not trusted; with the real keys it is. */
START_TEST(sct_under_another_key)
{
	struct buf b = BUF_INIT;
	json_t *root, *ct, *rekor_key;
	struct trustroot *tr;
	struct sigverify_policy *p;
	struct oidcmatch_rule rule = {"github", "cody"};
	struct sigverify_options o = {&rule, 1, false, NULL, 0};
	struct sigverify_result r;
	struct error err = ERROR_INIT;
	char *text;
	size_t i;

	read_data(&b, DATA "cosign-oci-attestation/trusted_root.json");
	root = json_loadb(b.data, b.len, 0, NULL);
	rekor_key = json_object_get(
	    json_object_get(json_array_get(json_object_get(root, "tlogs"), 0), "publicKey"),
	    "rawBytes");
	json_array_foreach(json_object_get(root, "ctlogs"), i, ct)
	    json_object_set(json_object_get(ct, "publicKey"), "rawBytes", rekor_key);
	text = json_dumps(root, 0);
	ck_assert_int_eq(trustroot_new(&tr, "ct", &err), 0);
	ck_assert_int_eq(
	    trustroot_add(tr, "trusted_root.json", (unsigned char *)text, strlen(text), &err), 0);
	ck_assert_int_eq(trustroot_finish(tr, &err), 0);
	ck_assert_int_eq(sigverify_policy_new(&p, tr, &o, &err), 0);
	read_data(&b, DATA "cosign-oci-attestation/oci-attestation.sigstore.json");
	bundle_verify(&r, p, ATTEST_DIGEST, b.data, b.len, "bundle");
	ck_assert_msg(r.status == SIGVERIFY_UNTRUSTED_SIGNER && strstr(r.detail, "SCT"), "%s: %s",
	              sigverify_status_name(r.status), r.detail);
	free(text);
	json_decref(root);
	buf_release(&b);
	sigverify_policy_free(p);
}
END_TEST

/* ---- the dispatcher: formats, requests, errors ---- */

/* The recorded attestation bundle attached for ATTEST_DIGEST as an OCI 1.1 referrer: its blob,
 * its artifact manifest, and an index listing it, stored under index_ref. */
static void put_referrer(struct fake *f, const char *index_ref)
{
	struct buf b = BUF_INIT;
	char blob[80], config[80], man[80];
	char *text;
	json_t *m, *idx;

	read_data(&b, DATA "cosign-oci-attestation/oci-attestation.sigstore.json");
	fake_blob(f, b.data, b.len, blob);
	fake_blob(f, "{}", 2, config);
	m = json_pack("{s:i, s:s, s:s, s:{s:s, s:i, s:s}, s:[{s:s, s:I, s:s}]}", "schemaVersion", 2,
	              "mediaType", "application/vnd.oci.image.manifest.v1+json", "artifactType",
	              "application/vnd.dev.sigstore.bundle.v0.3+json", "config", "mediaType",
	              "application/vnd.oci.empty.v1+json", "size", 2, "digest", config, "layers",
	              "mediaType", "application/vnd.dev.sigstore.bundle.v0.3+json", "size",
	              (json_int_t)b.len, "digest", blob);
	text = json_dumps(m, JSON_COMPACT);
	fake_blob(f, text, strlen(text), man); /* stored under its digest, as a manifest */
	idx = json_pack("{s:i, s:s, s:[{s:s, s:s, s:I, s:s}]}", "schemaVersion", 2, "mediaType",
	                "application/vnd.oci.image.index.v1+json", "manifests", "mediaType",
	                "application/vnd.oci.image.manifest.v1+json", "digest", man, "size",
	                (json_int_t)strlen(text), "artifactType",
	                "application/vnd.dev.sigstore.bundle.v0.3+json");
	free(text);
	text = json_dumps(idx, JSON_COMPACT);
	fake_put(f, index_ref, text, strlen(text));
	free(text);
	json_decref(m);
	json_decref(idx);
	buf_release(&b);
}

struct count_case {
	const char *name;
	int listing;        /* has_tag for absent tags: 0 known absent, -1 unknown */
	bool referrers_api; /* the registry answers the referrers API */
	int signed_as;      /* 0 unsigned, 1 cosign .sig, 2 bundle by tag, 3 bundle by API */
	bool no_api;        /* the pass knows the registry has no referrers API */
	enum sigverify_status want;
	unsigned calls;
};

static const struct count_case counts[] = {
    {"cosign, listing, known without API", 0, false, 1, true, SIGVERIFY_OK, 2},
    {"cosign, listing, first contact", 0, false, 1, false, SIGVERIFY_OK, 3},
    {"cosign, no listing", -1, false, 1, false, SIGVERIFY_OK, 4},
    {"bundle by tag, listing", 0, false, 2, false, SIGVERIFY_OK, 3},
    {"bundle by tag, no listing", -1, false, 2, false, SIGVERIFY_OK, 4},
    {"bundle by referrers API", 0, true, 3, false, SIGVERIFY_OK, 3},
    {"unsigned, listing, known without API", 0, false, 0, true, SIGVERIFY_UNSIGNED, 0},
    {"unsigned, listing", 0, false, 0, false, SIGVERIFY_UNSIGNED, 1},
    {"unsigned, no listing", -1, false, 0, false, SIGVERIFY_UNSIGNED, 3},
    /* the API answers (nothing): no tag fallback, then the .sig tag */
    {"unsigned, referrers API", -1, true, 0, false, SIGVERIFY_UNSIGNED, 2},
};

START_TEST(requests_per_candidate)
{
	const struct count_case *c = &counts[_i];
	struct sigverify_policy *p =
	    c->signed_as == 1 ? policy(S(key_secret), NULL, NULL)
	                      : root_policy("cosign-oci-attestation/trusted_root.json", GH, "cody");
	const char *digest = c->signed_as == 1 ? KEY_DIGEST : ATTEST_DIGEST;
	struct fake f = {.listing = c->listing, .referrers_api = c->referrers_api};
	struct sigverify_source src = source(&f);
	struct sigverify_result r;
	struct error err = ERROR_INIT;
	char ref[200];

	if (c->signed_as == 1)
		put_recorded(&f, "cimage-cosign-valid", KEY_DIGEST);
	if (c->signed_as == 2)
		put_referrer(
		    &f, "sha256-732112270d7e59418a8c080b134b24cabd67d250d0d0147a97ed95ba5c280aa4");
	if (c->signed_as == 3) {
		snprintf(ref, sizeof(ref), "referrers/%s", ATTEST_DIGEST);
		put_referrer(&f, ref);
	}
	if (c->referrers_api && c->signed_as != 3) { /* an API with nothing to list */
		snprintf(ref, sizeof(ref), "referrers/%s", digest);
		fake_put(&f, ref, "{\"schemaVersion\":2,\"manifests\":[]}", 34);
	}
	if (c->no_api)
		src.get_referrers = NULL;
	f.calls = 0;
	ck_assert_msg(sigverify_check(&r, p, digest, &src, &err) == 0, "%s", err.msg);
	ck_assert_msg(r.status == c->want, "%s: %s (%s)", c->name, sigverify_status_name(r.status),
	              r.detail);
	ck_assert_msg(r.requests == c->calls && f.calls == c->calls, "%s: %u requests, %u calls",
	              c->name, r.requests, f.calls);
	if (c->signed_as)
		ck_assert_str_eq(r.format, c->signed_as == 1 ? "cosign" : "bundle");
	fake_release(&f);
	sigverify_policy_free(p);
}
END_TEST

static int failing_manifest(void *ctx, struct buf *body, char *type, size_t n, const char *ref,
                            struct error *err)
{
	(void)ctx, (void)body, (void)type, (void)n;
	return error_set(err, IG_ETIMEOUT, "registry 'r.example/app': manifest '%s': timed out",
	                 ref);
}

/* A registry that fails is no verdict: the error comes back, never "unsigned". */
START_TEST(registry_failure_is_an_error)
{
	struct sigverify_policy *p = policy(S(key_secret), NULL, NULL);
	struct fake f = {.listing = -1};
	struct sigverify_source src = source(&f);
	struct sigverify_result r;
	struct error err = ERROR_INIT;

	src.get_manifest = failing_manifest;
	ck_assert_int_eq(sigverify_check(&r, p, KEY_DIGEST, &src, &err), IG_ETIMEOUT);
	ck_assert_msg(strstr(err.msg, "verify bundle: registry 'r.example/app'"), "%s", err.msg);
	ck_assert_int_eq(sigverify_check(&r, p, "latest", &src, &err), IG_EINVALID);
	sigverify_policy_free(p);
}
END_TEST

/* A payload blob the registry serves under another digest is a bad signature; a .sig
 * manifest of many layers is read up to the cap. */
START_TEST(hostile_signature_manifests)
{
	struct sigverify_policy *p = policy(S(key_secret), NULL, NULL);
	struct fake f = {.listing = -1};
	struct buf payload = BUF_INIT;
	json_t *rec = cimage_signature("cimage-cosign-valid", &payload), *m, *layers;
	struct sigverify_result r;
	char tag[160], *text;

	put_recorded(&f, "cimage-cosign-valid", KEY_DIGEST);
	for (size_t i = 0; i < f.n; i++)
		if (strcmp(f.refs[i],
		           "sha256:"
		           "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a") !=
		        0 &&
		    strncmp(f.refs[i], "sha256:", 7) == 0)
			f.bodies[i].data[0] ^= 1; /* the payload, corrupted in the registry */
	check(&r, p, KEY_DIGEST, &f);
	ck_assert_msg(r.status == SIGVERIFY_BAD_SIGNATURE && strstr(r.detail, "match"), "%s",
	              r.detail);
	fake_release(&f);
	/* twenty layers whose payloads do not exist */
	put_recorded(&f, "cimage-cosign-valid", KEY_DIGEST);
	snprintf(tag, sizeof(tag), "sha256-%s.sig", KEY_DIGEST + 7);
	m = json_loadb(fake_find(&f, tag)->data, fake_find(&f, tag)->len, 0, NULL);
	layers = json_object_get(m, "layers");
	json_object_set_new(
	    json_array_get(layers, 0), "digest",
	    json_string("sha256:0000000000000000000000000000000000000000000000000000"
	                "000000000000"));
	for (int i = 0; i < 19; i++)
		json_array_append_new(layers, json_deep_copy(json_array_get(layers, 0)));
	text = json_dumps(m, JSON_COMPACT);
	fake_put(&f, tag, text, strlen(text));
	f.calls = 0;
	f.listing = 0;
	check(&r, p, KEY_DIGEST, &f);
	ck_assert_int_eq(r.status, SIGVERIFY_BAD_SIGNATURE);
	/* the referrers API, the .sig manifest, then at most SIGVERIFY_MAX_ARTIFACTS payloads */
	ck_assert_uint_eq(f.calls, 2 + SIGVERIFY_MAX_ARTIFACTS);
	free(text);
	json_decref(m);
	json_decref(rec);
	buf_release(&payload);
	fake_release(&f);
	sigverify_policy_free(p);
}
END_TEST

START_TEST(policies)
{
	const struct key_file files[] = {
	    {"trusted_root.json", DATA "sgo-provenance/trusted_root.json"}};
	const char *const bad_format[] = {"notation"};
	const struct oidcmatch_rule a = {"github", "acme"}, b = {"github", "acme-corp"};
	struct sigverify_options o = {NULL, 0, false, NULL, 0};
	struct sigverify_policy *p, *q;
	struct trustroot *tr;
	struct error err = ERROR_INIT;
	struct buf data = BUF_INIT;

	read_data(&data, files[0].path);
	/* keyless trust without identity rules */
	ck_assert_int_eq(trustroot_new(&tr, "kl", &err), 0);
	ck_assert_int_eq(
	    trustroot_add(tr, "trusted_root.json", (unsigned char *)data.data, data.len, &err), 0);
	ck_assert_int_eq(trustroot_finish(tr, &err), 0);
	ck_assert_int_eq(sigverify_policy_new(&p, tr, &o, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "secret 'kl': a keyless trust root needs matchOIDCIdentity"),
	              "%s", err.msg);
	/* an unknown format */
	p = policy(S(key_secret), NULL, NULL);
	sigverify_policy_free(p);
	ck_assert_int_eq(trustroot_new(&tr, "k", &err), 0);
	read_data(&data, KEYS "cosign.pub");
	ck_assert_int_eq(
	    trustroot_add(tr, "cosign.pub", (unsigned char *)data.data, data.len, &err), 0);
	ck_assert_int_eq(trustroot_finish(tr, &err), 0);
	o.formats = bad_format;
	o.n_formats = 1;
	ck_assert_int_eq(sigverify_policy_new(&p, tr, &o, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "'notation'"));
	/* the fingerprint covers the identity rules */
	p = root_policy("sgo-provenance/trusted_root.json", a.issuer, a.subject);
	q = root_policy("sgo-provenance/trusted_root.json", b.issuer, b.subject);
	ck_assert_str_ne(sigverify_policy_fingerprint(p), sigverify_policy_fingerprint(q));
	sigverify_policy_free(q);
	q = root_policy("sgo-provenance/trusted_root.json", a.issuer, a.subject);
	ck_assert_str_eq(sigverify_policy_fingerprint(p), sigverify_policy_fingerprint(q));
	sigverify_policy_free(p);
	sigverify_policy_free(q);
	buf_release(&data);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sigverify");
	TCase *tc = tcase_create("recorded");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, recorded_manifests_are_the_signed_digests);
	tcase_add_loop_test(tc, legacy_recorded, 0, sizeof(legacy) / sizeof(legacy[0]));
	tcase_add_test(tc, legacy_key_tampered);
	tcase_add_test(tc, legacy_keyless_tampered);
	tcase_add_test(tc, legacy_keyless_rekor_tampered);
	tcase_add_loop_test(tc, bundle_recorded, 0, sizeof(bundles) / sizeof(bundles[0]));
	tcase_add_loop_test(tc, bundle_tampered, 0, 2);
	tcase_add_test(tc, prehashed_signatures);
	tcase_add_test(tc, sct_under_another_key);
	suite_add_tcase(s, tc);
	tc = tcase_create("dispatcher");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, requests_per_candidate, 0, sizeof(counts) / sizeof(counts[0]));
	tcase_add_test(tc, registry_failure_is_an_error);
	tcase_add_test(tc, hostile_signature_manifests);
	tcase_add_test(tc, policies);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
