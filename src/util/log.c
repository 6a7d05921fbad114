/* Event logging to stderr. The configuration is process state set once by main (as OpenSMTPD's
 * log.c); a mutex keeps lines whole when registry scans run on several threads. */
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/escape.h"
#include "imageguard/util/log.h"

static enum log_level threshold = LOG_INFO;
static enum log_format format = LOG_TEXT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const names[] = {"error", "warn", "info", "debug"};

void log_configure(enum log_level level, enum log_format fmt)
{
	threshold = level;
	format = fmt;
}

int log_parse_level(enum log_level *out, const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return IG_EINVALID;
}

int log_parse_format(enum log_format *out, const char *s)
{
	if (strcmp(s, "text") == 0)
		*out = LOG_TEXT;
	else if (strcmp(s, "json") == 0)
		*out = LOG_JSON;
	else
		return IG_EINVALID;
	return 0;
}

bool log_is_enabled(enum log_level level)
{
	return level <= threshold;
}

void log_timestamp(char *out, size_t n)
{
	struct timespec ts;
	struct tm tm;
	char base[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, n, "%s.%03dZ", base, (int)(ts.tv_nsec / 1000000L % 1000));
}

/* The JSON line; jansson refuses text that is not UTF-8, so such a message is written with
 * its non-ASCII bytes as \xHH rather than dropped. */
static void write_json(const char *when, enum log_level level, const char *event, const char *msg)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s?}", "time", when, "level", names[level], "event",
	                      event, "msg", msg);
	char *line;

	if (!o && msg) {
		struct buf safe = BUF_INIT;

		for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
			if ((*p < 0x80 ? buf_append(&safe, p, 1)
			               : buf_printf(&safe, "\\x%02x", *p)) < 0)
				break;
		o = json_pack("{s:s,s:s,s:s,s:s?}", "time", when, "level", names[level], "event",
		              event, "msg", safe.data);
		buf_release(&safe);
	}
	if ((line = o ? json_dumps(o, JSON_COMPACT) : NULL))
		fprintf(stderr, "%s\n", line);
	free(line);
	json_decref(o);
}

void log_event(enum log_level level, const char *event, const char *fmt, ...)
{
	struct buf msg = BUF_INIT, text = BUF_INIT;
	char when[32];
	va_list ap;

	if (!log_is_enabled(level))
		return;
	va_start(ap, fmt);
	buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	log_timestamp(when, sizeof(when));
	/* text lines: the message body is escaped whole (file names, tags, reasons and Git's
	 * words reach it), so that no newline or ESC in them can forge a line or drive a
	 * terminal; the time, level and event are ours */
	if (format != LOG_JSON && msg.data && escape_append(&text, msg.data) < 0)
		buf_reset(&text);
	pthread_mutex_lock(&lock);
	if (format == LOG_JSON)
		write_json(when, level, event, msg.data);
	else
		fprintf(stderr, "%s %-5s %s: %s\n", when, names[level], event,
		        text.data ? text.data : "");
	fflush(stderr);
	pthread_mutex_unlock(&lock);
	buf_release(&msg);
	buf_release(&text);
}
