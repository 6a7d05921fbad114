/* The signature gate's configuration (CONTRACT §12): the imageguard.io/verify-* annotations of
 * Flux's ImagePolicy, or spec.verify of imageguard.io/v1alpha1, and the check of the Secret they
 * name (its keys present and PEM-framed). The keys themselves are parsed by the pass
 * (src/sigstore/trustroot.c): this file links without OpenSSL, as check-config does. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <dirent.h>
#include <pcre2.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "config_private.h"

#define ANN_PROVIDER "imageguard.io/verify-provider"
#define ANN_SECRET "imageguard.io/verify-secret"
#define ANN_ISSUER "imageguard.io/verify-issuer"
#define ANN_SUBJECT "imageguard.io/verify-subject"
#define MAX_IDENTITIES 16   /* oidcmatch's OIDCMATCH_MAX_RULES */
#define MAX_PATTERN 1024    /* oidcmatch's OIDCMATCH_MAX_PATTERN */
#define MAX_KEY_FILE 65536  /* trustroot's TRUSTROOT_MAX_FILE */
#define MAX_SECRET_FILES 64 /* trustroot's TRUSTROOT_MAX_FILES */

const char *const config_verify_annotations[] = {ANN_PROVIDER, ANN_SECRET, ANN_ISSUER, ANN_SUBJECT,
                                                 NULL};

/* A regex as oidcmatch compiles it (PCRE2, UTF-8), else an error at line naming field. */
static void check_regex(struct doc *d, size_t line, const char *field, const char *re)
{
	PCRE2_UCHAR msg[160];
	PCRE2_SIZE at = 0;
	pcre2_code *code;
	int rc = 0;

	if (strlen(re) > MAX_PATTERN) {
		config_doc_error(d, line, "%s: longer than %d bytes", field, MAX_PATTERN);
		return;
	}
	code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &rc, &at, NULL);
	if (code) {
		pcre2_code_free(code);
		return;
	}
	pcre2_get_error_message(rc, msg, sizeof(msg));
	config_doc_error(d, line, "%s: '%s' is not a valid regex: %s at offset %zu", field, re,
	                 (const char *)msg, (size_t)at);
}

static void add_identity(struct doc *d, struct config_verify *v, char *issuer, char *subject)
{
	struct config_oidc_identity *ids = v->identities;

	if (v->identities_len >= MAX_IDENTITIES)
		return;
	if (!ids && !(ids = config_alloc(d->L, MAX_IDENTITIES * sizeof(*ids))))
		return;
	v->identities = ids;
	ids[v->identities_len++] = (struct config_oidc_identity){issuer, subject};
}

/* imageguard.io/verify-* on the ImagePolicy's metadata. */
static void read_annotations(struct doc *d, const yaml_node_t *a, struct config_verify *v)
{
	const char *path = "metadata.annotations";
	char *issuer = NULL, *subject = NULL;
	size_t line;

	config_yaml_get_str(d, a, path, ANN_PROVIDER, &v->provider);
	config_yaml_get_str(d, a, path, ANN_SECRET, &v->secret);
	config_yaml_get_str(d, a, path, ANN_ISSUER, &issuer);
	config_yaml_get_str(d, a, path, ANN_SUBJECT, &subject);
	v->field = "metadata.annotations." ANN_SECRET;
	v->line = config_yaml_key_line(d, a, v->secret ? ANN_SECRET : ANN_PROVIDER, line_of(a));
	line = config_yaml_key_line(d, a, issuer ? ANN_ISSUER : ANN_SUBJECT, line_of(a));
	if (!issuer != !subject)
		config_doc_error(d, line, "annotation '%s' needs '%s' (keyless identity)",
		                 issuer ? ANN_ISSUER : ANN_SUBJECT,
		                 issuer ? ANN_SUBJECT : ANN_ISSUER);
	else if (issuer) {
		check_regex(d, line, "annotation '" ANN_ISSUER "'", issuer);
		check_regex(d, config_yaml_key_line(d, a, ANN_SUBJECT, line),
		            "annotation '" ANN_SUBJECT "'", subject);
		add_identity(d, v, issuer, subject);
	}
	if (!v->provider && (v->secret || issuer))
		config_doc_error(d, v->secret ? v->line : line,
		                 "imageguard.io/verify-* annotations need '" ANN_PROVIDER "'");
}

/* spec.verify.matchOIDCIdentity: a list of {issuer, subject}, both required (as Flux's). */
static void read_identities(struct doc *d, const yaml_node_t *list, struct config_verify *v)
{
	static const char *const keys[] = {"issuer", "subject", NULL};
	const char *path = "spec.verify.matchOIDCIdentity";

	if (list->type != YAML_SEQUENCE_NODE) {
		config_doc_error(d, line_of(list), "'%s' must be a list of {issuer, subject}",
		                 path);
		return;
	}
	if (list->data.sequence.items.top - list->data.sequence.items.start > MAX_IDENTITIES)
		config_doc_error(d, line_of(list), "'%s': more than %d rules", path,
		                 MAX_IDENTITIES);
	for (yaml_node_item_t *i = list->data.sequence.items.start;
	     i < list->data.sequence.items.top; i++) {
		yaml_node_t *item = node(d, *i);
		char *issuer = NULL, *subject = NULL;

		if (!item || item->type != YAML_MAPPING_NODE) {
			config_doc_error(d, item ? line_of(item) : line_of(list),
			                 "'%s' items must be {issuer, subject}", path);
			continue;
		}
		config_yaml_check_keys(d, item, path, keys);
		if (config_yaml_need_str(d, item, line_of(item), path, "issuer", &issuer))
			check_regex(d, line_of(item), "'spec.verify.matchOIDCIdentity.issuer'",
			            issuer);
		if (config_yaml_need_str(d, item, line_of(item), path, "subject", &subject))
			check_regex(d, line_of(item), "'spec.verify.matchOIDCIdentity.subject'",
			            subject);
		if (issuer && subject)
			add_identity(d, v, issuer, subject);
	}
}

static void read_spec(struct doc *d, const yaml_node_t *spec, struct config_verify *v)
{
	static const char *const keys[] = {"provider", "secretRef", "matchOIDCIdentity", NULL};
	static const char *const ref_keys[] = {"name", NULL};
	yaml_node_t *m, *ref, *ids;

	if (!(m = config_yaml_get_map(d, spec, "spec", "verify", keys)))
		return;
	config_yaml_need_str(d, m, line_of(m), "spec.verify", "provider", &v->provider);
	v->field = "spec.verify.secretRef";
	v->line = line_of(m);
	if ((ref = config_yaml_get_map(d, m, "spec.verify", "secretRef", ref_keys))) {
		v->line = config_yaml_key_line(d, m, "secretRef", line_of(ref));
		config_yaml_need_str(d, ref, line_of(ref), "spec.verify.secretRef", "name",
		                     &v->secret);
	}
	if ((ids = config_yaml_lookup(d, m, "matchOIDCIdentity")) && !config_yaml_is_null(ids))
		read_identities(d, ids, v);
}

void config_verify_read(struct doc *d, const yaml_node_t *annotations, const yaml_node_t *spec,
                        struct config_policy *p)
{
	struct config_verify *v = &p->verify;
	const yaml_node_t *sv = spec ? config_yaml_lookup(d, spec, "verify") : NULL;
	bool has_ann = false;

	for (size_t i = 0; annotations && config_verify_annotations[i]; i++)
		has_ann |= config_yaml_lookup(d, annotations, config_verify_annotations[i]) != NULL;
	if (sv && !d->imageguard_api) {
		config_doc_error(d, line_of(sv),
		                 "'spec.verify' needs apiVersion imageguard.io/v1alpha1 (on Flux's "
		                 "ImagePolicy use the imageguard.io/verify-* annotations)");
		return;
	}
	if (sv && has_ann) {
		config_doc_error(d, line_of(sv),
		                 "'spec.verify' and imageguard.io/verify-* annotations: set one");
		return;
	}
	if (sv)
		read_spec(d, spec, v);
	else if (has_ann)
		read_annotations(d, annotations, v);
	if (!v->provider)
		return;
	if (strcmp(v->provider, "cosign") != 0)
		config_doc_error(d, v->line, "verification provider '%s' is not supported (cosign)",
		                 v->provider);
	else if (!v->secret || !*v->secret)
		config_doc_error(d, v->line,
		                 "'%s': a Secret with the public keys (*.pub) or the keyless trust "
		                 "root is required",
		                 v->field);
}

/* ---- the Secret's folder ---- */

static bool has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static bool has_suffix(const char *s, const char *x)
{
	size_t n = strlen(s), m = strlen(x);

	return n >= m && !strcmp(s + n - m, x);
}

/* "" when the file holds a PEM block (BEGIN and END lines, within the size cap). */
static void check_pem(char *msg, size_t n, const char *dir, const char *key)
{
	static char data[MAX_KEY_FILE + 1];
	char path[4400];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, key);
	if (!(f = fopen(path, "rb"))) {
		snprintf(msg, n, "key '%s': cannot be read", key);
		return;
	}
	len = fread(data, 1, sizeof(data), f);
	fclose(f);
	data[len < sizeof(data) ? len : MAX_KEY_FILE] = '\0';
	if (len > MAX_KEY_FILE)
		snprintf(msg, n, "key '%s': over %d bytes", key, MAX_KEY_FILE);
	else if (!strstr(data, "-----BEGIN ") || !strstr(data, "-----END "))
		snprintf(msg, n, "key '%s': not PEM (no BEGIN/END block)", key);
	memset(data, 0, len < sizeof(data) ? len : sizeof(data));
}

void config_verify_check_folder(char *msg, size_t n, const char *dir, bool keyless)
{
	bool signer = false, fulcio = false, rekor = false, root = false;
	size_t files = 0;
	struct dirent *e;
	DIR *dp = opendir(dir);

	*msg = '\0';
	if (!dp) {
		snprintf(msg, n, "cannot be read");
		return;
	}
	while ((e = readdir(dp)) && !*msg && files < MAX_SECRET_FILES) {
		const char *k = e->d_name;
		bool pub = has_suffix(k, ".pub"), crt = has_suffix(k, ".crt.pem");

		if (k[0] == '.')
			continue;
		files++;
		root |= !strcmp(k, "trusted_root.json");
		rekor |= pub && has_prefix(k, "rekor");
		signer |= pub && !has_prefix(k, "rekor") && !has_prefix(k, "ctfe") &&
		          !has_prefix(k, "ctlog");
		fulcio |= crt && has_prefix(k, "fulcio");
		if (pub || (crt && has_prefix(k, "fulcio")))
			check_pem(msg, n, dir, k);
	}
	closedir(dp);
	if (*msg)
		return;
	if (keyless && !root && !(fulcio && rekor))
		snprintf(msg, n,
		         "keyless identities need the trust root: 'fulcio*.crt.pem' and "
		         "'rekor*.pub', or 'trusted_root.json'");
	else if (!keyless && !signer)
		snprintf(msg, n, "no public key ('*.pub', PEM)");
}
