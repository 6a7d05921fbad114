/* Configuration diagnostics: every error and warning the loader finds, with file:line, kept in
 * order. The bottom of the config chain: config_yaml, config_kinds and config call into it,
 * it calls nothing of theirs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_private.h"
#include "imageguard/config/config.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"
#include "imageguard/util/vec.h"

void config_diags_release(struct config_diags *d)
{
	for (size_t i = 0; i < d->len; i++) {
		free(d->items[i].file);
		free(d->items[i].message);
	}
	free(d->items);
	*d = (struct config_diags)CONFIG_DIAGS_INIT;
}

void config_diag_v(struct loader *L, enum config_severity sev, const char *file, size_t line,
                   const char *fmt, va_list ap)
{
	struct config_diags *d = L->diags;
	struct buf msg = BUF_INIT;
	struct config_diag *p;
	char *f = strdup(file);

	if (buf_vprintf(&msg, fmt, ap) < 0 || !f)
		goto oom;
	error_flatten(msg.data); /* values quoted from the YAML may span lines */
	if (!(p = vec_reserve(d->items, &d->cap, d->len, sizeof(*p), 16)))
		goto oom;
	d->items = p;
	d->items[d->len++] = (struct config_diag){sev, f, line, buf_detach(&msg)};
	if (sev == CONFIG_ERROR)
		d->errors++;
	else if (sev == CONFIG_WARNING)
		d->warnings++;
	else
		d->infos++;
	return;
oom:
	L->oom = true;
	if (sev == CONFIG_ERROR)
		d->errors++; /* the config must still be refused */
	free(f);
	buf_release(&msg);
}

void config_diag_error(struct loader *L, const char *file, size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_diag_v(L, CONFIG_ERROR, file, line, fmt, ap);
	va_end(ap);
}

void config_diag_warn(struct loader *L, const char *file, size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_diag_v(L, CONFIG_WARNING, file, line, fmt, ap);
	va_end(ap);
}

void config_diag_info(struct loader *L, const char *file, size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_diag_v(L, CONFIG_INFO, file, line, fmt, ap);
	va_end(ap);
}

void config_diags_print(const struct config_diags *d, bool as_log)
{
	for (size_t i = 0; i < d->len; i++) {
		const struct config_diag *g = &d->items[i];
		const char *sev = g->severity == CONFIG_WARNING ? "warning: "
		                  : g->severity == CONFIG_INFO  ? "info: "
		                                                : "";

		if (as_log && g->severity == CONFIG_INFO)
			log_info("config.info", "%s:%zu: %s", g->file, g->line, g->message);
		else if (as_log && g->severity == CONFIG_WARNING)
			log_warn("config.warning", "%s:%zu: %s", g->file, g->line, g->message);
		else if (as_log)
			log_error("config.error", "%s:%zu: %s", g->file, g->line, g->message);
		else if (g->line)
			fprintf(stderr, "imageguard: %s:%zu: %s%s\n", g->file, g->line, sev,
			        g->message);
		else
			fprintf(stderr, "imageguard: %s: %s%s\n", g->file, sev, g->message);
	}
}
