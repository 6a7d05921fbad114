/* WWW-Authenticate parsing (RFC 7235): several challenges in one value, auth-params with
 * quoted strings (commas and escapes inside), token68 forms tolerated. */
#ifndef IMAGEGUARD_WWWAUTH_H
#define IMAGEGUARD_WWWAUTH_H

#include <stddef.h>

struct error;

struct wwwauth_challenge {
	char *scheme; /* lower-cased ("bearer", "basic"); owned */
	char *realm;  /* owned, NULL when absent (as every field below) */
	char *service;
	char *scope;
	char *error; /* Bearer's error="invalid_token" and the like */
};

#define WWWAUTH_CHALLENGE_INIT                                                                     \
	{                                                                                          \
		NULL, NULL, NULL, NULL, NULL                                                       \
	}

/* Parses header (every WWW-Authenticate value joined by ", ") and returns in out the
 * challenge imageguard prefers: Bearer, else Basic, else the first one. Parameter names are
 * case-insensitive; the first occurrence of a parameter wins. Returns 0, IG_ENOTFOUND when
 * there is no challenge at all, or IG_EINVALID for a malformed value (unterminated quote,
 * parameter before any scheme, missing value). out is caller-owned: wwwauth_release it. */
int wwwauth_parse(struct wwwauth_challenge *out, const char *header, struct error *err);
void wwwauth_release(struct wwwauth_challenge *c);

#endif
