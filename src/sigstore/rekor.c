/* Rekor log entries: read from a bundle or a cosign annotation, and checked three ways (the
 * SET, the inclusion proof under a signed checkpoint, the body against the signature). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/sigstore/rekor.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/sigjson.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define EM_DASH "\xe2\x80\x94"

void rekor_entry_release(struct rekor_entry *e)
{
	free(e->checkpoint);
	free(e->body);
	e->checkpoint = NULL;
	e->body = NULL;
	e->body_len = 0;
}

static int take_body(struct rekor_entry *e, struct buf *b)
{
	e->body_len = b->len;
	e->body = (unsigned char *)buf_detach(b);
	return e->body ? 0 : IG_EFAIL;
}

static int read_set(struct rekor_entry *e, const json_t *v)
{
	struct buf b = BUF_INIT;
	int rc = sigjson_b64(&b, v, REKOR_MAX_SIGNATURE);

	if (rc == 0 && b.len > 0) {
		memcpy(e->set, b.data, b.len);
		e->set_len = b.len;
		e->has_set = true;
	}
	buf_release(&b);
	return rc < 0 ? rc : e->has_set ? 0 : IG_EINVALID;
}

static int read_hashes(struct rekor_entry *e, const json_t *list)
{
	struct buf b = BUF_INIT;
	const json_t *h;
	size_t i;
	int rc = 0;

	if (!json_is_array(list))
		return IG_EINVALID;
	if (json_array_size(list) > MERKLE_MAX_PROOF)
		return IG_ETOOBIG;
	json_array_foreach((json_t *)list, i, h)
	{
		if ((rc = sigjson_b64(&b, h, 64)) < 0 || b.len != 32) {
			rc = rc < 0 ? rc : IG_EINVALID;
			break;
		}
		memcpy(e->hashes[i], b.data, 32);
		e->n_hashes = i + 1;
	}
	buf_release(&b);
	return rc;
}

static int read_proof(struct rekor_entry *e, const json_t *p, struct error *err)
{
	static const char *const keys[] = {"logIndex", "rootHash",   "treeSize",
	                                   "hashes",   "checkpoint", NULL};
	static const char *const cp_keys[] = {"envelope", NULL};
	const json_t *cpo = sigjson_get(p, "checkpoint");
	const char *cp = json_string_value(sigjson_get(cpo, "envelope"));
	struct buf root = BUF_INIT;
	int rc;

	/* protobuf JSON leaves out zeros and empty lists: index 0, no hashes (a one-leaf tree) */
	if (!sigjson_only(p, keys) || (cpo && !sigjson_only(cpo, cp_keys)) ||
	    !sigjson_int64_or_zero(&e->proof_index, sigjson_get(p, "logIndex")) ||
	    !sigjson_int64(&e->tree_size, sigjson_get(p, "treeSize")) ||
	    sigjson_b64(&root, sigjson_get(p, "rootHash"), 64) < 0 || root.len != 32) {
		buf_release(&root);
		return error_set(err, IG_EINVALID, "tlog entry: malformed inclusion proof");
	}
	memcpy(e->root, root.data, 32);
	buf_release(&root);
	if (sigjson_get(p, "hashes") && (rc = read_hashes(e, sigjson_get(p, "hashes"))) < 0)
		return error_set(err, rc, "tlog entry: %s",
		                 rc == IG_ETOOBIG ? "inclusion proof longer than 64 hashes"
		                                  : "malformed inclusion proof hashes");
	if (cp) {
		if (strlen(cp) > REKOR_MAX_CHECKPOINT)
			return error_set(err, IG_ETOOBIG, "tlog entry: checkpoint too large");
		if (!(e->checkpoint = strdup(cp)))
			return error_set(err, IG_EFAIL, "tlog entry: out of memory");
	}
	e->has_proof = true;
	return 0;
}

static int read_kind(struct rekor_entry *e, const json_t *kv)
{
	static const char *const keys[] = {"kind", "version", NULL};

	const char *kind = json_string_value(json_object_get(kv, "kind"));
	const char *version = json_string_value(json_object_get(kv, "version"));

	if (!sigjson_only(kv, keys) || !kind || !version || strlen(kind) >= sizeof(e->kind) ||
	    strlen(version) >= sizeof(e->version))
		return IG_EINVALID;
	snprintf(e->kind, sizeof(e->kind), "%s", kind);
	snprintf(e->version, sizeof(e->version), "%s", version);
	return 0;
}

static const char *const entry_keys[] = {
    "logIndex",         "logId",          "kindVersion",       "integratedTime",
    "inclusionPromise", "inclusionProof", "canonicalizedBody", NULL};
static const char *const logid_keys[] = {"keyId", NULL};
static const char *const promise_keys[] = {"signedEntryTimestamp", NULL};

static int read_promise(struct rekor_entry *e, const json_t *promise, struct error *err)
{
	if (!sigjson_only(promise, promise_keys) ||
	    read_set(e, sigjson_get(promise, "signedEntryTimestamp")) < 0)
		return error_set(err, IG_EINVALID, "tlog entry: malformed inclusion promise");
	return 0;
}

static int read_head(struct rekor_entry *out, const json_t *j, struct buf *id, struct error *err)
{
	const json_t *logid = sigjson_get(j, "logId");

	if (!sigjson_only(j, entry_keys) || read_kind(out, sigjson_get(j, "kindVersion")) < 0 ||
	    !sigjson_int64_or_zero(&out->log_index, sigjson_get(j, "logIndex")) ||
	    !sigjson_only(logid, logid_keys) ||
	    sigjson_b64(id, sigjson_get(logid, "keyId"), 64) < 0 || id->len != 32)
		return error_set(err, IG_EINVALID, "tlog entry: malformed kind, index or log id");
	memcpy(out->log_id, id->data, 32);
	out->integrated_time = -1;
	if (sigjson_get(j, "integratedTime") &&
	    !sigjson_int64(&out->integrated_time, sigjson_get(j, "integratedTime")))
		return error_set(err, IG_EINVALID, "tlog entry: malformed integratedTime");
	return 0;
}

int rekor_entry_from_json(struct rekor_entry *out, const struct json_t *entry, struct error *err)
{
	const json_t *j = (const json_t *)entry, *promise, *proof;
	struct buf body = BUF_INIT, id = BUF_INIT;
	int rc, error;

	memset(out, 0, sizeof(*out));
	if ((error = read_head(out, j, &id, err)) < 0)
		goto done;
	if ((rc = sigjson_b64(&body, sigjson_get(j, "canonicalizedBody"), REKOR_MAX_BODY)) < 0) {
		error = error_set(err, rc, "tlog entry: %s",
		                  rc == IG_ETOOBIG ? "body too large" : "malformed body");
		goto done;
	}
	if ((promise = sigjson_get(j, "inclusionPromise")) &&
	    (error = read_promise(out, promise, err)) < 0)
		goto done;
	if ((proof = sigjson_get(j, "inclusionProof")) && (error = read_proof(out, proof, err)) < 0)
		goto done;
	error =
	    take_body(out, &body) < 0 ? error_set(err, IG_EFAIL, "tlog entry: out of memory") : 0;
done:
	buf_release(&body);
	buf_release(&id);
	if (error < 0)
		rekor_entry_release(out);
	return error;
}

/* kind and apiVersion of a body; false when it is not a JSON object naming them. */
static bool body_kind(const struct rekor_entry *e, char *kind, size_t kn, char *version, size_t vn)
{
	json_t *b = json_loadb((const char *)e->body, e->body_len, JSON_REJECT_DUPLICATES, NULL);
	const char *k = json_string_value(json_object_get(b, "kind"));
	const char *v = json_string_value(json_object_get(b, "apiVersion"));
	bool ok = k && v && strlen(k) < kn && strlen(v) < vn;

	if (ok) {
		snprintf(kind, kn, "%s", k);
		snprintf(version, vn, "%s", v);
	}
	json_decref(b);
	return ok;
}

static int cosign_payload(struct rekor_entry *out, const json_t *p, struct buf *body)
{
	static const char *const keys[] = {"body", "integratedTime", "logIndex", "logID", NULL};
	const char *logid = json_string_value(json_object_get(p, "logID"));
	int rc;

	if (!sigjson_only(p, keys) || !logid ||
	    !sigcrypto_unhex(out->log_id, 32, logid, strlen(logid)) ||
	    !sigjson_int64(&out->log_index, json_object_get(p, "logIndex")) ||
	    !sigjson_int64(&out->integrated_time, json_object_get(p, "integratedTime")))
		return IG_EINVALID;
	if ((rc = sigjson_b64(body, json_object_get(p, "body"), REKOR_MAX_BODY)) < 0)
		return rc;
	return take_body(out, body) < 0 ? IG_EFAIL : 0;
}

int rekor_entry_from_cosign(struct rekor_entry *out, const char *data, size_t len,
                            struct error *err)
{
	static const char *const cosign_keys[] = {"SignedEntryTimestamp", "Payload", NULL};
	json_t *root = NULL;
	struct buf body = BUF_INIT;
	int error = 0, rc;

	memset(out, 0, sizeof(*out));
	if (len > REKOR_MAX_ANNOTATION)
		return error_set(err, IG_ETOOBIG, "rekor bundle: too large");
	root = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	if (!sigjson_only(root, cosign_keys) ||
	    read_set(out, json_object_get(root, "SignedEntryTimestamp")) < 0) {
		error = error_set(err, IG_EINVALID, "rekor bundle: no signed entry timestamp");
		goto done;
	}
	if ((rc = cosign_payload(out, json_object_get(root, "Payload"), &body)) < 0 ||
	    !body_kind(out, out->kind, sizeof(out->kind), out->version, sizeof(out->version))) {
		error = error_set(err, rc == IG_ETOOBIG ? rc : IG_EINVALID,
		                  "rekor bundle: malformed payload");
		goto done;
	}
done:
	json_decref(root);
	buf_release(&body);
	if (error < 0)
		rekor_entry_release(out);
	return error;
}

/* ---- the signed entry timestamp ---- */

static bool key_valid_at(const struct trustkey *k, int64_t t)
{
	return k->not_before <= t && t <= k->not_after;
}

bool rekor_verify_set(const struct rekor_entry *e, const struct trustroot *tr)
{
	const struct trustkey *k = trustroot_find(tr, TRUSTROOT_REKOR, e->log_id);
	struct buf canon = BUF_INIT;
	char id[65];
	bool ok;

	if (!e->has_set || !k || e->integrated_time < 0 || !key_valid_at(k, e->integrated_time))
		return false;
	sigcrypto_hex(id, e->log_id, 32);
	/* Canonical JSON (RFC 8785): keys sorted, no blanks; base64 and hex need no escapes. */
	ok = buf_puts(&canon, "{\"body\":\"") == 0 &&
	     sigcrypto_b64encode(&canon, e->body, e->body_len) == 0 &&
	     buf_printf(&canon, "\",\"integratedTime\":%lld,\"logID\":\"%s\",\"logIndex\":%lld}",
	                (long long)e->integrated_time, id, (long long)e->log_index) == 0 &&
	     sigcrypto_verify(k->pkey, canon.data, canon.len, e->set, e->set_len);
	buf_release(&canon);
	return ok;
}

/* ---- checkpoints ---- */

static int note_lines(struct rekor_checkpoint *out, const char *note, size_t len)
{
	const char *l2 = memchr(note, '\n', len), *l3, *end;
	struct buf root = BUF_INIT;
	char size[24];
	char *stop;
	int rc;

	if (!l2 || (size_t)(l2 - note) >= sizeof(out->origin) || l2 == note)
		return IG_EINVALID;
	snprintf(out->origin, sizeof(out->origin), "%.*s", (int)(l2 - note), note);
	l2++;
	if (!(l3 = memchr(l2, '\n', len - (size_t)(l2 - note))) || l3 == l2 ||
	    (size_t)(l3 - l2) >= sizeof(size) || *l2 == '-' || *l2 == '+')
		return IG_EINVALID;
	snprintf(size, sizeof(size), "%.*s", (int)(l3 - l2), l2);
	errno = 0;
	out->size = strtoull(size, &stop, 10);
	if (errno || *stop)
		return IG_EINVALID;
	l3++;
	if (!(end = memchr(l3, '\n', len - (size_t)(l3 - note))))
		return IG_EINVALID;
	root.max = 64;
	rc = sigcrypto_b64decode(&root, l3, (size_t)(end - l3));
	if (rc == 0 && root.len == 32)
		memcpy(out->root, root.data, 32);
	else
		rc = IG_EINVALID;
	buf_release(&root);
	return rc;
}

int rekor_checkpoint_parse(struct rekor_checkpoint *out, const char *env, size_t len,
                           struct error *err)
{
	const char *sep;

	memset(out, 0, sizeof(*out));
	if (len > REKOR_MAX_CHECKPOINT)
		return error_set(err, IG_ETOOBIG, "checkpoint: too large");
	for (sep = env; sep + 1 < env + len && !(sep[0] == '\n' && sep[1] == '\n'); sep++)
		; /* the first blank line ends the note (memmem is not POSIX) */
	if (sep + 1 >= env + len)
		return error_set(err, IG_EINVALID, "checkpoint: no blank line before signatures");
	out->note_len = (size_t)(sep - env) + 1;
	if (note_lines(out, env, out->note_len) < 0)
		return error_set(err, IG_EINVALID, "checkpoint: malformed note");
	return 0;
}

/* The signer's name is the note's origin, or its first word ("rekor.sigstore.dev - 1193..."):
 * the name is outside what the signature covers, the origin inside. */
static bool names_origin(const char *name, size_t n, const char *origin)
{
	return strncmp(origin, name, n) == 0 && (origin[n] == '\0' || origin[n] == ' ');
}

/* One signature line "— NAME BASE64" (the newline excluded): does a Rekor key verify it? */
static bool line_verifies(const char *line, size_t len, const char *note,
                          const struct rekor_checkpoint *cp, const struct trustroot *tr)
{
	const char *name = line + strlen(EM_DASH " "), *sp;
	struct buf sig = BUF_INIT_MAX(REKOR_MAX_SIGNATURE + 4);
	bool ok = false;

	if (len < strlen(EM_DASH " ") || memcmp(line, EM_DASH " ", strlen(EM_DASH " ")) != 0 ||
	    !(sp = memchr(name, ' ', len - (size_t)(name - line))) || sp == name ||
	    !names_origin(name, (size_t)(sp - name), cp->origin))
		return false;
	if (sigcrypto_b64decode(&sig, sp + 1, len - (size_t)(sp + 1 - line)) == 0 && sig.len > 4) {
		for (size_t i = 0; i < trustroot_count(tr, TRUSTROOT_REKOR) && !ok; i++) {
			const struct trustkey *k = trustroot_key(tr, TRUSTROOT_REKOR, i);

			ok = memcmp(k->id, sig.data, 4) == 0 &&
			     sigcrypto_verify(k->pkey, note, cp->note_len,
			                      (unsigned char *)sig.data + 4, sig.len - 4);
		}
	}
	buf_release(&sig);
	return ok;
}

static bool checkpoint_signed(const char *env, size_t len, const struct rekor_checkpoint *cp,
                              const struct trustroot *tr)
{
	const char *p = env + cp->note_len + 1, *end = env + len;
	int lines = 0;

	while (p < end && lines++ < REKOR_MAX_NOTE_SIGNATURES) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			return false; /* every signature line ends with a newline */
		if (line_verifies(p, (size_t)(nl - p), env, cp, tr))
			return true;
		p = nl + 1;
	}
	return false;
}

int rekor_verify_proof(const struct rekor_entry *e, const struct trustroot *tr, char *why, size_t n)
{
	struct rekor_checkpoint cp;
	struct error err = ERROR_INIT;
	unsigned char leaf[32];

	if (!e->has_proof)
		return snprintf(why, n, "no inclusion proof"), IG_EINVALID;
	if (!e->checkpoint)
		return snprintf(why, n, "inclusion proof without a checkpoint"), IG_EINVALID;
	if (rekor_checkpoint_parse(&cp, e->checkpoint, strlen(e->checkpoint), &err) < 0)
		return snprintf(why, n, "%s", err.msg), IG_EINVALID;
	if (!checkpoint_signed(e->checkpoint, strlen(e->checkpoint), &cp, tr))
		return snprintf(why, n, "checkpoint not signed by a trusted Rekor key"),
		       IG_EINVALID;
	if (cp.size != (uint64_t)e->tree_size || !sigcrypto_equal(cp.root, e->root, 32))
		return snprintf(why, n, "checkpoint does not match the proof's tree"), IG_EINVALID;
	if (merkle_leaf_hash(leaf, e->body, e->body_len) < 0 ||
	    !merkle_verify_inclusion(leaf, (uint64_t)e->proof_index, (uint64_t)e->tree_size,
	                             (const unsigned char(*)[32])e->hashes, e->n_hashes, e->root))
		return snprintf(why, n, "inclusion proof does not lead to the root hash"),
		       IG_EINVALID;
	return 0;
}

/* ---- the body ---- */

/* The base64 string at v equals the n bytes at want. */
static bool b64_equals(const json_t *v, const unsigned char *want, size_t n)
{
	struct buf b = BUF_INIT;
	bool ok = sigjson_b64(&b, v, REKOR_MAX_SIGNATURE * 2) == 0 && b.len == n &&
	          sigcrypto_equal(b.data, want, n);

	buf_release(&b);
	return ok;
}

/* {"algorithm": "sha256", "value": HEX} equals the 32 bytes at want. */
static bool hash_equals(const json_t *h, const unsigned char *want)
{
	const char *algo = json_string_value(json_object_get(h, "algorithm"));
	const char *hex = json_string_value(json_object_get(h, "value"));
	unsigned char got[32];

	return want && algo && strcmp(algo, "sha256") == 0 && hex &&
	       sigcrypto_unhex(got, 32, hex, strlen(hex)) && sigcrypto_equal(got, want, 32);
}

/* intoto 0.0.2 stores the signature base64-encoded twice. */
static bool intoto_sig_equals(const json_t *v, const struct rekor_claim *c)
{
	struct buf once = BUF_INIT;
	json_t *s;
	bool ok = false;

	if (sigjson_b64(&once, v, REKOR_MAX_SIGNATURE * 2) == 0 && once.data &&
	    (s = json_stringn(once.data, once.len))) {
		ok = b64_equals(s, c->sig, c->sig_len);
		json_decref(s);
	}
	buf_release(&once);
	return ok;
}

static const char *check_spec(const struct rekor_entry *e, const json_t *spec,
                              const struct rekor_claim *c)
{
	const json_t *sigs, *content;

	if (strcmp(e->kind, "hashedrekord") == 0 && strcmp(e->version, "0.0.1") == 0) {
		if (!b64_equals(json_object_get(json_object_get(spec, "signature"), "content"),
		                c->sig, c->sig_len))
			return "logged signature differs";
		return hash_equals(json_object_get(json_object_get(spec, "data"), "hash"),
		                   c->message_digest)
		           ? NULL
		           : "logged digest differs";
	}
	if (strcmp(e->kind, "dsse") == 0 && strcmp(e->version, "0.0.1") == 0) {
		sigs = json_object_get(spec, "signatures");
		if (json_array_size(sigs) != 1 ||
		    !b64_equals(json_object_get(json_array_get(sigs, 0), "signature"), c->sig,
		                c->sig_len))
			return "logged signature differs";
		return hash_equals(json_object_get(spec, "payloadHash"), c->payload_digest)
		           ? NULL
		           : "logged payload hash differs";
	}
	if (strcmp(e->kind, "intoto") == 0 && strcmp(e->version, "0.0.2") == 0) {
		content = json_object_get(spec, "content");
		sigs = json_object_get(json_object_get(content, "envelope"), "signatures");
		if (json_array_size(sigs) != 1 ||
		    !intoto_sig_equals(json_object_get(json_array_get(sigs, 0), "sig"), c))
			return "logged signature differs";
		return hash_equals(json_object_get(content, "payloadHash"), c->payload_digest)
		           ? NULL
		           : "logged payload hash differs";
	}
	return "unsupported entry kind";
}

int rekor_check_body(const struct rekor_entry *e, const struct rekor_claim *claim, char *why,
                     size_t n)
{
	json_t *b = json_loadb((const char *)e->body, e->body_len, JSON_REJECT_DUPLICATES, NULL);
	const char *kind = json_string_value(json_object_get(b, "kind"));
	const char *version = json_string_value(json_object_get(b, "apiVersion"));
	const char *problem = NULL;

	if (!json_is_object(b) || !kind || !version)
		problem = "body is not a log entry";
	else if (strcmp(kind, e->kind) != 0 || strcmp(version, e->version) != 0)
		problem = "body kind differs from the entry's";
	else
		problem = check_spec(e, json_object_get(b, "spec"), claim);
	json_decref(b);
	if (!problem)
		return 0;
	snprintf(why, n, "tlog entry %s %s: %s", e->kind, e->version, problem);
	return IG_EINVALID;
}
