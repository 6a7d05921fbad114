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

void log_event(enum log_level level, const char *event, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	char when[32];
	va_list ap;

	if (!log_is_enabled(level))
		return;
	va_start(ap, fmt);
	buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	log_timestamp(when, sizeof(when));
	pthread_mutex_lock(&lock);
	if (format == LOG_JSON) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:s?}", "time", when, "level", names[level],
				      "event", event, "msg", msg.data);
		char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;

		if (line)
			fprintf(stderr, "%s\n", line);
		free(line);
		json_decref(o);
	} else {
		fprintf(stderr, "%s %-5s %s: %s\n", when, names[level], event,
			msg.data ? msg.data : "");
	}
	fflush(stderr);
	pthread_mutex_unlock(&lock);
	buf_release(&msg);
}
