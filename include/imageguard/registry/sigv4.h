/* AWS Signature Version 4 (the "AWS4-HMAC-SHA256" Authorization header) for the few AWS calls
 * the cloud providers make (STS, ECR). Pure computation: no I/O, no clock. The secret key and
 * the signature are secrets: never log them. */
#ifndef IMAGEGUARD_SIGV4_H
#define IMAGEGUARD_SIGV4_H

#include <stddef.h>

struct buf;
struct error;

struct sigv4_request {
	const char *method;         /* "GET", "POST" */
	const char *path;           /* the URI path as sent, unencoded ("/", "/ሴ"); NULL: "/" */
	const char *query;          /* the query as sent, without '?', or NULL */
	const char *const *headers; /* NULL-terminated "Name:value" lines, every one signed; they
	                             * must hold Host and X-Amz-Date (and X-Amz-Security-Token
	                             * when session credentials sign) */
	const void *payload;        /* the body, or NULL */
	size_t payload_len;
};

struct sigv4_key {
	const char *access_key_id;
	const char *secret_access_key;
	const char *region;  /* "us-east-1" */
	const char *service; /* "sts", "ecr", "ecr-public" */
};

/* Appends the canonical request of req to out (exposed for tests). Returns 0, IG_EINVALID (a
 * header line without ':' or a malformed %-escape) or IG_EFAIL (out of memory). */
int sigv4_canonical_request(struct buf *out, const struct sigv4_request *req, struct error *err);

/* Appends the Authorization value ("AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
 * Signature=...") for req signed with key at amz_date ("20150830T123600Z", which must be the
 * request's X-Amz-Date) to out. Returns 0, IG_EINVALID or IG_EFAIL. */
int sigv4_sign(struct buf *out, const struct sigv4_request *req, const struct sigv4_key *key,
               const char *amz_date, struct error *err);

/* Writes the X-Amz-Date form of t (UTC, "YYYYMMDDTHHMMSSZ") into out[17]. */
void sigv4_format_date(char out[17], long long t);

#endif
