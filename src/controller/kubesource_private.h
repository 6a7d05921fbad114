/* kubesource's parts that need no API server, for its unit suite
 * (test/unit/controller/test_kubesource.c): discovery answers read, one object's document, a
 * Secret written into its folder and the sum a pass compares. Not part of the controller's
 * interface: only kubesource.c and its suite include it. */
#ifndef IMAGEGUARD_KUBESOURCE_PRIVATE_H
#define IMAGEGUARD_KUBESOURCE_PRIVATE_H

#include <jansson.h>
#include <stddef.h>

#include "imageguard/pass/kubesa.h"

struct error;

/* "/apis/G/V" of group's preferred version (out, n bytes) from g, the APIGroup that GET path
 * ("/apis/G") answered. Returns 0, or IG_EINVALID naming path when g has no
 * preferredVersion.version (empty, or with a '/'). */
int kubesource_preferred_api(char *out, size_t n, const char *group, const json_t *g,
                             const char *path, struct error *err);

/* Whether list, the APIResourceList that GET api answered, serves the plural of each of the
 * four kinds in group. Returns 0, or IG_ENOTFOUND naming api, the first missing kind and its
 * plural. */
int kubesource_served(const json_t *list, const char *api, const char *group, struct error *err);

/* The document of obj as kind (a new reference; NULL out of memory): apiVersion, kind,
 * metadata (name, namespace, labels, annotations but kubectl's last-applied copy) and a copy
 * of spec, before its Secrets are fetched and their names rewritten. */
json_t *kubesource_document_json(const char *kind, const json_t *obj);

/* What a watch keeps of an ImagePolicy or ImageRepository: apiVersion, kind, spec and
 * metadata's name, namespace, labels, annotations (without kubectl's last-applied copy), uid
 * and resourceVersion. A new reference sharing obj's parts; NULL when out of memory. */
json_t *kubesource_slim(const json_t *obj);

/* What a watch keeps of an ImagePolicy or ImageRepository (kubepack.c): one JSON string,
 * kubesource_slim's object as compact JSON text, then (when it has one) a NUL and its
 * resourceVersion, which the watch leaves out when it compares (kubewatch_same). A new
 * reference; NULL when out of memory. */
json_t *kubesource_pack(const json_t *obj);

/* The slim object back from what kubesource_pack kept (a new reference; NULL when out of
 * memory); any other object (the automations and GitRepositories the watches keep whole) is
 * returned as it is, incref'd. */
json_t *kubesource_unpack(const json_t *kept);

/* Secret s's data (base64 values) into the folder dir, made 0700, one 0600 file per key (the
 * decoded value). More than 64 keys (IG_ETOOBIG), a key that is not [-._a-zA-Z0-9]+ or is
 * "." or "..", or a value that is not a base64 string (IG_EINVALID), or dir that cannot be
 * made or written (IG_EFAIL): the error begins with what, and no folder is left. */
int kubesource_secret_write(const char *dir, const json_t *s, const char *what, struct error *err);

/* The SHA-256 a pass compares: of s's type and data (keys sorted), and code (0, or the API's
 * refusal when s is NULL). */
void kubesource_secret_sum(unsigned char sum[KUBESA_SUM_LEN], const json_t *s, int code);

#endif
