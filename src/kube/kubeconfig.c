/* Kubernetes client configuration: kubeconfig files (parsed with libyaml, current-context
 * only) and the in-cluster service account. Errors name the file and field, never a value. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/util/yamltree.h"

struct reader {
	const char *name; /* the file, for messages */
	yaml_document_t *doc;
	struct kubeconfig *out;
	struct error *err;
};

void kubeconfig_release(struct kubeconfig *c)
{
	if (!c)
		return;
	free(c->source);
	free(c->server);
	free(c->ca_file);
	free(c->ca_pem);
	free(c->token);
	free(c->token_file);
	free(c->cert_file);
	free(c->cert_pem);
	free(c->key_file);
	free(c->key_pem);
	free(c->ns);
	memset(c, 0, sizeof(*c));
}

static int b64_value(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

int kubeconfig_base64_decode(char **out, size_t *len_out, const char *s)
{
	size_t n = strlen(s), o = 0, pad = 0;
	unsigned acc = 0, bits = 0;
	char *d = malloc(n / 4 * 3 + 4);

	*out = NULL;
	*len_out = 0;
	if (!d)
		return IG_EFAIL;
	for (size_t i = 0; i < n; i++) {
		int v;

		if (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')
			continue;
		if (s[i] == '=') {
			pad++;
			continue;
		}
		if (pad || (v = b64_value((unsigned char)s[i])) < 0)
			goto bad; /* data after padding, or not a base64 character */
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			d[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (pad > 2 || bits >= 6 || (acc & ((1u << bits) - 1)) != 0)
		goto bad; /* a dangling 6-bit group or non-zero trailing bits */
	d[o] = '\0';
	*out = d;
	*len_out = o;
	return 0;
bad:
	free(d);
	return IG_EINVALID;
}

static int fail(struct reader *r, const yaml_node_t *at, const char *field, const char *problem)
{
	if (at)
		return error_set(r->err, IG_EINVALID, "kubeconfig '%s': line %zu: %s: %s", r->name,
		                 yamltree_line(at), field, problem);
	return error_set(r->err, IG_EINVALID, "kubeconfig '%s': %s: %s", r->name, field, problem);
}

static int dup_to(char **dst, const char *s, struct error *err)
{
	free(*dst);
	if (!(*dst = strdup(s)))
		return error_oom(err);
	return 0;
}

/* A path field, made absolute against the kubeconfig's folder as kubectl does. */
static int path_to(char **dst, struct reader *r, const char *value)
{
	struct buf b = BUF_INIT;
	const char *slash = strrchr(r->name, '/');

	if (value[0] == '/' || !slash)
		return dup_to(dst, value, r->err);
	if (buf_append(&b, r->name, (size_t)(slash - r->name) + 1) < 0 || buf_puts(&b, value) < 0) {
		buf_release(&b);
		return error_oom(r->err);
	}
	free(*dst);
	*dst = buf_detach(&b);
	return 0;
}

static int data_to(char **dst, struct reader *r, const yaml_node_t *at, const char *field,
                   const char *value)
{
	size_t len;
	int error = kubeconfig_base64_decode(dst, &len, value);

	if (error == IG_EINVALID || (!error && len == 0)) {
		free(*dst);
		*dst = NULL;
		return fail(r, at, field, error ? "not valid base64" : "empty");
	}
	if (error < 0)
		return error_oom(r->err);
	return 0;
}

/* A string field of m: NULL when absent; a non-scalar is an error (*bad set). */
static const char *field_str(struct reader *r, const yaml_node_t *m, const char *key,
                             const char *field, int *bad)
{
	yaml_node_t *n = yamltree_get(r->doc, m, key);

	if (yamltree_is_null(n))
		return NULL;
	if (n->type != YAML_SCALAR_NODE) {
		*bad = fail(r, n, field, "expected a string");
		return NULL;
	}
	return yamltree_str(n);
}

/* The entry of list `key` (clusters, users, contexts) whose name is name: its inner map
 * (`cluster`, `user`, `context`). */
static int find_named(const yaml_node_t **out, struct reader *r, const yaml_node_t *root,
                      const char *key, const char *inner, const char *name)
{
	yaml_node_t *list = yamltree_get(r->doc, root, key), *item;
	char field[256];

	*out = NULL;
	if (yamltree_is_null(list))
		return fail(r, NULL, key, "missing");
	if (list->type != YAML_SEQUENCE_NODE)
		return fail(r, list, key, "expected a list");
	for (size_t i = 0; (item = yamltree_item(r->doc, list, i)); i++) {
		const char *n = yamltree_get_str(r->doc, item, "name");
		yaml_node_t *body;

		if (!n || strcmp(n, name) != 0)
			continue;
		body = yamltree_get(r->doc, item, inner);
		snprintf(field, sizeof(field), "%s[%s].%s", key, name, inner);
		if (yamltree_is_null(body))
			return fail(r, item, field, "missing");
		if (body->type != YAML_MAPPING_NODE)
			return fail(r, body, field, "expected a mapping");
		*out = body;
		return 0;
	}
	snprintf(field, sizeof(field), "no entry named '%s'", name);
	return fail(r, list, key, field);
}

static int read_cluster(struct reader *r, const yaml_node_t *c, const char *name)
{
	char field[256];
	const char *v;
	int bad = 0;

	snprintf(field, sizeof(field), "clusters[%s].cluster.server", name);
	if (!(v = field_str(r, c, "server", field, &bad)))
		return bad ? bad : fail(r, c, field, "missing");
	if (strncmp(v, "https://", 8) != 0 && strncmp(v, "http://", 7) != 0)
		return fail(r, yamltree_get(r->doc, c, "server"), field,
		            "expected an https:// or http:// URL");
	if (dup_to(&r->out->server, v, r->err) < 0)
		return IG_EFAIL;
	while (strlen(r->out->server) > 8 && r->out->server[strlen(r->out->server) - 1] == '/')
		r->out->server[strlen(r->out->server) - 1] = '\0';
	snprintf(field, sizeof(field), "clusters[%s].cluster.certificate-authority-data", name);
	if ((v = field_str(r, c, "certificate-authority-data", field, &bad)) &&
	    data_to(&r->out->ca_pem, r, yamltree_get(r->doc, c, "certificate-authority-data"),
	            field, v) < 0)
		return r->err->code;
	snprintf(field, sizeof(field), "clusters[%s].cluster.certificate-authority", name);
	if (!bad && !r->out->ca_pem &&
	    (v = field_str(r, c, "certificate-authority", field, &bad)) &&
	    path_to(&r->out->ca_file, r, v) < 0)
		return IG_EFAIL;
	snprintf(field, sizeof(field), "clusters[%s].cluster.insecure-skip-tls-verify", name);
	if (!bad && (v = field_str(r, c, "insecure-skip-tls-verify", field, &bad))) {
		if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
			return fail(r, yamltree_get(r->doc, c, "insecure-skip-tls-verify"), field,
			            "expected true or false");
		r->out->insecure = strcmp(v, "true") == 0;
	}
	return bad;
}

/* One user field: a `-data` (base64) or a path. */
static int user_field(struct reader *r, const yaml_node_t *u, const char *uname, const char *key,
                      char **dst, bool is_data)
{
	char field[256];
	const char *v;
	int bad = 0;

	snprintf(field, sizeof(field), "users[%s].user.%s", uname, key);
	if (!(v = field_str(r, u, key, field, &bad)))
		return bad;
	if (is_data)
		return data_to(dst, r, yamltree_get(r->doc, u, key), field, v);
	return path_to(dst, r, v);
}

static int read_user(struct reader *r, const yaml_node_t *u, const char *name)
{
	static const char *const unsupported[] = {"exec", "auth-provider", "username", "password"};
	char field[256];
	const char *v;
	int bad = 0, error;

	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		yaml_node_t *n = yamltree_get(r->doc, u, unsupported[i]);
		if (!yamltree_is_null(n)) {
			snprintf(field, sizeof(field), "users[%s].user.%s", name, unsupported[i]);
			return fail(r, n, field,
			            "not supported (use a token or a client certificate)");
		}
	}
	snprintf(field, sizeof(field), "users[%s].user.token", name);
	if ((v = field_str(r, u, "token", field, &bad)) && dup_to(&r->out->token, v, r->err) < 0)
		return IG_EFAIL;
	if (bad)
		return bad;
	if (!r->out->token &&
	    (error = user_field(r, u, name, "tokenFile", &r->out->token_file, false)) < 0)
		return error;
	if ((error = user_field(r, u, name, "client-certificate-data", &r->out->cert_pem, true)) <
	        0 ||
	    (!r->out->cert_pem && (error = user_field(r, u, name, "client-certificate",
	                                              &r->out->cert_file, false)) < 0) ||
	    (error = user_field(r, u, name, "client-key-data", &r->out->key_pem, true)) < 0 ||
	    (!r->out->key_pem &&
	     (error = user_field(r, u, name, "client-key", &r->out->key_file, false)) < 0))
		return error;
	snprintf(field, sizeof(field), "users[%s].user", name);
	if ((r->out->cert_pem || r->out->cert_file) != (r->out->key_pem || r->out->key_file))
		return fail(r, u, field, "a client certificate needs a client key and the reverse");
	return 0;
}

static int read_root(struct reader *r, const yaml_node_t *root)
{
	const yaml_node_t *ctx = NULL, *cluster = NULL, *user = NULL;
	const char *cur, *cname, *uname, *ns;
	int bad = 0, error;

	if (!root || root->type != YAML_MAPPING_NODE)
		return fail(r, root, "document", "expected a mapping");
	if (!(cur = field_str(r, root, "current-context", "current-context", &bad)))
		return bad ? bad : fail(r, NULL, "current-context", "missing");
	if ((error = find_named(&ctx, r, root, "contexts", "context", cur)) < 0)
		return error;
	if (!(cname = field_str(r, ctx, "cluster", "context.cluster", &bad)))
		return bad ? bad : fail(r, ctx, "context.cluster", "missing");
	if ((error = find_named(&cluster, r, root, "clusters", "cluster", cname)) < 0 ||
	    (error = read_cluster(r, cluster, cname)) < 0)
		return error;
	if ((uname = field_str(r, ctx, "user", "context.user", &bad)) &&
	    ((error = find_named(&user, r, root, "users", "user", uname)) < 0 ||
	     (error = read_user(r, user, uname)) < 0))
		return error;
	if (bad)
		return bad;
	ns = field_str(r, ctx, "namespace", "context.namespace", &bad);
	if (bad)
		return bad;
	return dup_to(&r->out->ns, ns ? ns : "default", r->err);
}

int kubeconfig_parse(struct kubeconfig *out, const char *name, const char *data, size_t len,
                     struct error *err)
{
	struct reader r = {name, NULL, out, err};
	yaml_parser_t parser;
	yaml_document_t doc;
	struct buf src = BUF_INIT;
	int error;

	kubeconfig_release(out);
	if (!yaml_parser_initialize(&parser))
		return error_oom(err);
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	if (!yaml_parser_load(&parser, &doc)) {
		error = error_set(err, IG_EINVALID, "kubeconfig '%s': line %zu: %s", name,
		                  parser.problem_mark.line + 1,
		                  parser.problem ? parser.problem : "does not parse");
		yaml_parser_delete(&parser);
		return error;
	}
	r.doc = &doc;
	error = read_root(&r, yaml_document_get_root_node(&doc));
	if (!error && buf_printf(&src, "kubeconfig '%s'", name) == 0)
		out->source = buf_detach(&src);
	else if (!error)
		error = error_oom(err);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (error < 0)
		kubeconfig_release(out);
	return error;
}

int kubeconfig_load(struct kubeconfig *out, const char *path, struct error *err)
{
	struct buf b = BUF_INIT_MAX(KUBECONFIG_MAX_FILE_BYTES);
	int error = buf_read_file(&b, path);

	if (error == IG_ENOTFOUND)
		error_set(err, error, "kubeconfig '%s': no such file", path);
	else if (error == IG_ETOOBIG)
		error_set(err, error, "kubeconfig '%s': larger than %u bytes", path,
		          KUBECONFIG_MAX_FILE_BYTES);
	else if (error < 0)
		error_set(err, error, "kubeconfig '%s': cannot read", path);
	else
		error = kubeconfig_parse(out, path, b.data ? b.data : "", b.len, err);
	buf_release(&b);
	return error;
}

/* The trimmed first line of a small file, or NULL; *error on a read failure. */
static char *read_small(const char *path, size_t max, int *error)
{
	struct buf b = BUF_INIT_MAX(max);
	size_t n;

	*error = buf_read_file(&b, path);
	if (*error < 0) {
		buf_release(&b);
		return NULL;
	}
	n = b.len;
	while (n > 0 && (b.data[n - 1] == '\n' || b.data[n - 1] == '\r' || b.data[n - 1] == ' '))
		n--;
	if (b.data)
		b.data[n] = '\0';
	return buf_detach(&b);
}

int kubeconfig_in_cluster(struct kubeconfig *out, const char *sa_dir, struct error *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct buf b = BUF_INIT;
	char *ns = NULL;
	int error = 0, rerr;

	kubeconfig_release(out);
	sa_dir = sa_dir ? sa_dir : KUBECONFIG_SERVICE_ACCOUNT_DIR;
	if (!host || !*host || !port || !*port)
		return error_set(err, IG_ENOTFOUND,
		                 "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
		                 "are not set (not running in a pod; use --kubeconfig)");
	if (strchr(host, ':') ? buf_printf(&b, "https://[%s]:%s", host, port)
	                      : buf_printf(&b, "https://%s:%s", host, port))
		goto oom;
	out->server = buf_detach(&b);
	if (buf_printf(&b, "%s/token", sa_dir) < 0)
		goto oom;
	out->token_file = buf_detach(&b);
	if (buf_printf(&b, "%s/ca.crt", sa_dir) < 0)
		goto oom;
	out->ca_file = buf_detach(&b);
	if (!(out->source = strdup("in-cluster service account")))
		goto oom;
	free(read_small(out->token_file, KUBECONFIG_MAX_TOKEN_BYTES, &rerr));
	if (rerr < 0) {
		error = error_set(err, rerr == IG_ENOTFOUND ? IG_ENOTFOUND : IG_EFAIL,
		                  "in-cluster: '%s': %s", out->token_file,
		                  rerr == IG_ENOTFOUND ? "no such file" : "cannot read");
		goto done;
	}
	if (access(out->ca_file, R_OK) != 0) {
		error = error_set(err, IG_ENOTFOUND, "in-cluster: '%s': cannot read", out->ca_file);
		goto done;
	}
	if (buf_printf(&b, "%s/namespace", sa_dir) < 0)
		goto oom;
	ns = read_small(b.data, 256, &rerr);
	buf_release(&b);
	out->ns = ns && *ns ? ns : NULL;
	if (!out->ns) {
		free(ns);
		if (!(out->ns = strdup("default")))
			goto oom;
	}
	goto done;
oom:
	error = error_oom(err);
done:
	buf_release(&b);
	if (error < 0)
		kubeconfig_release(out);
	return error;
}
