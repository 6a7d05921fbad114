/* Logging: one line per event on stderr, text or JSON lines, with a level threshold.
 * Messages must never contain secrets: callers log names and codes, not credentials. */
#ifndef IMAGEGUARD_LOG_H
#define IMAGEGUARD_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };
enum log_format { LOG_TEXT = 0, LOG_JSON };

/* Sets the threshold and format; called once from main before threads start. */
void log_configure(enum log_level level, enum log_format format);
/* Parses "error|warn|info|debug" / "text|json"; returns 0 or IG_EINVALID. */
int log_parse_level(enum log_level *out, const char *s);
int log_parse_format(enum log_format *out, const char *s);
/* True when messages at level would be written. */
bool log_is_enabled(enum log_level level);
/* The current time as RFC 3339 UTC with milliseconds ("2026-12-01T02:30:00.123Z"), the one
 * timestamp format of log lines, audit records and verify reports. n >= 32. */
void log_timestamp(char *out, size_t n);
/* Writes one event line: `event` is a short stable name ("registry.retry"), the rest printf. */
void log_event(enum log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(ev, ...) log_event(LOG_ERROR, ev, __VA_ARGS__)
#define log_warn(ev, ...) log_event(LOG_WARN, ev, __VA_ARGS__)
#define log_info(ev, ...) log_event(LOG_INFO, ev, __VA_ARGS__)
#define log_debug(ev, ...) log_event(LOG_DEBUG, ev, __VA_ARGS__)

#endif
