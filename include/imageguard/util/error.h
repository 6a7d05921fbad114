/* The caller-owned error struct every fallible function fills, and the few named codes.
 * Messages are one line, lower case, no final period, subject first in quotes. */
#ifndef IMAGEGUARD_ERROR_H
#define IMAGEGUARD_ERROR_H

#include <stdarg.h>

enum {
	IG_OK = 0,
	IG_EFAIL = -1,     /* generic runtime failure */
	IG_ENOTFOUND = -2, /* the thing asked for does not exist (404, no such file) */
	IG_EAUTH = -3,     /* credentials missing or refused */
	IG_ETIMEOUT = -4,  /* a deadline passed */
	IG_ECONFLICT = -5, /* someone else moved first (non-fast-forward push) */
	IG_EINVALID = -6,  /* the input is malformed */
	IG_ETOOBIG = -7,   /* a cap on outside input was exceeded */
	IG_EUSAGE = -8,    /* the command line is wrong */
};

#define ERROR_MSG_MAX 1024

struct error {
	int code;
	char msg[ERROR_MSG_MAX];
};

#define ERROR_INIT                                                                                 \
	{                                                                                          \
		0,                                                                                 \
		{                                                                                  \
			0                                                                          \
		}                                                                                  \
	}

/* Sets the message (printf-style) and code; returns code so callers can `return error_set(...)`. */
int error_set(struct error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the existing message with "<context>: " (each layer adds its context once);
 * returns the stored code. Safe with err == NULL. */
int error_prefix(struct error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "out of memory" with IG_EFAIL (libgit2's git_error_set_oom): the one place that says it;
 * returns IG_EFAIL. */
int error_oom(struct error *err);

/* Keeps text from outside on one line: control characters become spaces, in place. */
void error_flatten(char *s);

/* Secrets at least this long are scrubbed wherever they occur; shorter ones only where they
 * stand as a whole token, so that a short value never garbles ordinary words. */
#define ERROR_SECRET_MIN 8

/* Replaces secret in msg (in place, at most cap bytes) with "***": everywhere when it is at
 * least ERROR_SECRET_MIN bytes long, else only where no letter or digit touches it on either
 * side. NULL or "" does nothing. */
void error_scrub_secret(char *msg, size_t cap, const char *secret);

/* Replaces credentials that text from outside may echo: the value of an "Authorization"
 * header, the token after "Basic " / "Bearer " when it looks like one (8 or more token
 * characters, not a plain lower-case word), and the password of URL userinfo
 * ("://user:***@"). Ordinary text is left as it is. Every error_set and error_prefix runs it. */
void error_scrub_credentials(char *msg);

/* Clears the error. */
void error_clear(struct error *err);

/* A short name for a code ("not found", "invalid", ...), static storage. */
const char *error_code_name(int code);

#endif
