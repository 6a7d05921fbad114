/* Commit messages: the default list of changes, or a Flux messageTemplate run by the template
 * module on Flux's data, then the provenance trailers in the message's final trailer block. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commitmsg_private.h"
#include "imageguard/template/template.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/escape.h"

/* Values a render may build (Sprig lists, strings) beyond the output itself. */
#define RENDER_ARENA_MAX ((size_t)16 << 20)

/* Flux's RemovedTemplateFieldError texts, for the Go errors they replace. */
static const struct {
	const char *go_error, *flux;
} removed_fields[] = {
    {"can't evaluate field Updated in type source.TemplateData",
     "template uses removed '.Updated' field. Please use '.Changed' instead. See: "
     "https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template"},
    {"can't evaluate field ImageResult in type update.Result",
     "template uses removed '.Changed.ImageResult' field. Please use '.Changed.FileChanges' or "
     "'.Changed.Objects' instead. See: "
     "https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template"},
};

static void removed_field_error(struct error *err)
{
	size_t i;

	for (i = 0; i < sizeof(removed_fields) / sizeof(removed_fields[0]); i++) {
		const char *at = strstr(err->msg, removed_fields[i].go_error);

		if (at) {
			char prefix[ERROR_MSG_MAX];

			/* keep "template 'NAME': line N: " */
			snprintf(prefix, sizeof(prefix), "%.*s", (int)(at - err->msg), err->msg);
			error_set(err, IG_EINVALID, "%s%s", prefix, removed_fields[i].flux);
			return;
		}
	}
}

static int put_default(struct buf *out, const struct commitmsg_change *c, size_t n)
{
	size_t i;
	int rc = buf_printf(out, "imageguard: update %zu image%s\n\n", n, n == 1 ? "" : "s");

	for (i = 0; i < n && rc == 0; i++) {
		rc = escape_append(out, c[i].policy);
		if (rc == 0 && (rc = buf_puts(out, ": ")) == 0 &&
		    (rc = escape_append(out, c[i].old_value)) == 0 &&
		    (rc = buf_puts(out, " -> ")) == 0 &&
		    (rc = escape_append(out, c[i].new_value)) == 0 &&
		    (rc = buf_puts(out, " (")) == 0 && (rc = escape_append(out, c[i].file)) == 0)
			rc = buf_puts(out, ")");
		if (rc == 0 && c[i].reason && *c[i].reason && (rc = buf_puts(out, " [")) == 0 &&
		    (rc = escape_append(out, c[i].reason)) == 0)
			rc = buf_puts(out, "]");
		if (rc == 0)
			rc = buf_puts(out, "\n");
	}
	return rc;
}

static int render_template(struct buf *out, const struct commitmsg_input *in, struct error *err)
{
	struct tarena arena = TARENA_INIT(RENDER_ARENA_MAX);
	struct template *t = NULL;
	const struct tval *data;
	int rc;

	if ((rc = template_parse(&t, in->tmpl, in->tmpl_name ? in->tmpl_name : "messageTemplate",
	                         err)) < 0)
		goto done;
	if (!(data = commitmsg_data(&arena, in))) {
		rc = error_set(err, IG_ETOOBIG, "commit message: template data too large");
		goto done;
	}
	if ((rc = template_execute(out, t, data, &arena, err)) == IG_EINVALID)
		removed_field_error(err);
done:
	template_free(t);
	tarena_release(&arena);
	return rc;
}

/* ---- trailers ---- */

/* git's trailer line: "Token: value" (letters, digits, '-', spaces before the ':' allowed). */
static bool is_trailer_line(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (s[i] == '-' || (s[i] >= '0' && s[i] <= '9') ||
	                 ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')))
		i++;
	if (i == 0)
		return false;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i < n && s[i] == ':';
}

static bool starts_with(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && !memcmp(s, prefix, k);
}

/* Whether git (interpret-trailers, %(trailers)) reads the message's last paragraph, not its
 * title, as a trailer block: all trailer lines, or at least 25% of them with a git-generated
 * one (Signed-off-by, "(cherry picked from commit"). Continuation lines are neutral. */
static bool ends_in_trailers(const char *m, size_t len)
{
	size_t end = len, start, trailers = 0, others = 0;
	bool generated = false;

	while (end && (m[end - 1] == '\n' || m[end - 1] == ' ' || m[end - 1] == '\t'))
		end--;
	for (;;) {
		size_t n;

		for (start = end; start && m[start - 1] != '\n'; start--)
			;
		n = end - start;
		if (n == 0 || strspn(m + start, " \t") == n)
			break;
		if (starts_with(m + start, n, "Signed-off-by:") ||
		    starts_with(m + start, n, "(cherry picked from commit "))
			generated = true, trailers++;
		else if (is_trailer_line(m + start, n))
			trailers++;
		else if (m[start] != ' ' && m[start] != '\t')
			others++;
		if (start == 0)
			return false; /* the title paragraph holds no trailers */
		end = start - 1;
	}
	return trailers && (others == 0 || (generated && trailers * 4 >= trailers + others));
}

static int trailer(struct buf *out, const char *token, const char *value)
{
	int rc = buf_printf(out, "%s: ", token);

	if (rc == 0)
		rc = escape_append(out, value ? value : "");
	return rc ? rc : buf_puts(out, "\n");
}

static int cmp_policy(const void *a, const void *b)
{
	const struct commitmsg_change *x = *(const struct commitmsg_change *const *)a;
	const struct commitmsg_change *y = *(const struct commitmsg_change *const *)b;

	return strcmp(x->policy, y->policy);
}

/* One policy's set: the policy, its distinct decisions, the listing's sha256, the reason. */
static int policy_trailers(struct buf *out, const struct commitmsg_change *const *c, size_t n)
{
	size_t i, j;
	int rc = trailer(out, "Imageguard-Policy", c[0]->policy);

	for (i = 0; rc == 0 && i < n; i++) {
		bool seen = false;

		for (j = 0; j < i && !seen; j++)
			seen = !strcmp(c[j]->decision ? c[j]->decision : "",
			               c[i]->decision ? c[i]->decision : "");
		if (!seen)
			rc = trailer(out, "Imageguard-Decision",
			             c[i]->decision ? c[i]->decision : "update/forward");
	}
	if (rc == 0)
		rc = trailer(out, "Imageguard-Tags-Sha256", c[0]->tags_sha256);
	for (i = 0; rc == 0 && i < n; i++) {
		bool seen = !c[i]->verified_by;

		for (j = 0; j < i && !seen; j++)
			seen = c[j]->verified_by && !strcmp(c[j]->verified_by, c[i]->verified_by);
		if (!seen)
			rc = trailer(out, "Imageguard-Verified", c[i]->verified_by);
	}
	for (i = 0; rc == 0 && i < n; i++)
		if (c[i]->rollback_reason) {
			rc = trailer(out, "Rollback-Reason", c[i]->rollback_reason);
			break;
		}
	return rc;
}

static int put_trailers(struct buf *out, const struct commitmsg_change *changes, size_t n)
{
	const struct commitmsg_change **sorted;
	size_t i, from;
	int rc = 0;

	if (n == 0)
		return 0;
	if (!(sorted = malloc(n * sizeof(*sorted))))
		return IG_EFAIL;
	for (i = 0; i < n; i++)
		sorted[i] = &changes[i];
	qsort(sorted, n, sizeof(*sorted), cmp_policy);
	if (out->len && out->data[out->len - 1] != '\n')
		rc = buf_puts(out, "\n");
	if (rc == 0 && !ends_in_trailers(out->data ? out->data : "", out->len))
		rc = buf_puts(out, "\n");
	for (from = 0, i = 1; rc == 0 && i <= n; i++)
		if (i == n || strcmp(sorted[i]->policy, sorted[from]->policy) != 0) {
			rc = policy_trailers(out, sorted + from, i - from);
			from = i;
		}
	free(sorted);
	return rc;
}

int commitmsg_render(struct buf *out, const struct commitmsg_input *in, struct error *err)
{
	struct buf msg = BUF_INIT_MAX(out->max ? out->max : 0);
	int rc;

	if (!in->tmpl || !*in->tmpl)
		rc = put_default(&msg, in->changes, in->n) < 0
		         ? error_set(err, IG_ETOOBIG, "commit message: too long")
		         : 0;
	else
		rc = render_template(&msg, in, err);
	if (rc == 0 && msg.len && memchr(msg.data, 0, msg.len))
		rc = error_set(err, IG_EINVALID,
		               "template '%s': the commit message would contain a NUL byte",
		               in->tmpl_name ? in->tmpl_name : "messageTemplate");
	if (rc == 0 && put_trailers(&msg, in->changes, in->n) < 0)
		rc = error_set(err, IG_ETOOBIG, "commit message: too long");
	if (rc == 0 && buf_append(out, msg.data ? msg.data : "", msg.len) < 0)
		rc = error_set(err, IG_ETOOBIG, "commit message: too long");
	buf_release(&msg);
	return rc;
}

bool commitmsg_too_long(const struct error *err)
{
	/* the size failures' own words: commitmsg_render's, and the template's output budget
	 * (texec.c), which is the message's cap */
	return err->code == IG_ETOOBIG &&
	       (strstr(err->msg, "commit message: too long") ||
	        strstr(err->msg, "commit message: template data too large") ||
	        strstr(err->msg, "over budget: output longer than"));
}

int commitmsg_add_lease(struct buf *out, const char *generation, struct error *err)
{
	if ((out->len && out->data[out->len - 1] != '\n' && buf_puts(out, "\n") < 0) ||
	    trailer(out, "Imageguard-Lease", generation) < 0)
		return error_set(err, IG_ETOOBIG, "commit message: too long");
	return 0;
}

int commitmsg_lease_of(char *name, size_t n, long *transitions, const char *msg)
{
	static const char key[] = "Imageguard-Lease: ";
	const char *line = NULL, *p, *slash, *end;
	char *num_end;
	long t;

	for (p = msg; (p = strstr(p, key)); p += sizeof(key) - 1)
		if (p == msg || p[-1] == '\n')
			line = p + sizeof(key) - 1;
	if (!line)
		return 0;
	end = line + strcspn(line, "\n");
	for (slash = NULL, p = line; p < end; p++)
		if (*p == '/')
			slash = p;
	if (!slash || slash == line || (size_t)(slash - line) >= n || slash[1] < '0' ||
	    slash[1] > '9')
		return 0;
	t = strtol(slash + 1, &num_end, 10);
	if (num_end != end || t < 0)
		return 0;
	memcpy(name, line, (size_t)(slash - line));
	name[slash - line] = '\0';
	*transitions = t;
	return 1;
}

/* A trial run on this sample shows fields Flux's data does not have. */
static const struct commitmsg_change sample_change = {
    .policy = "default/app",
    .old_value = "ghcr.io/example/app:1.0.0",
    .new_value = "ghcr.io/example/app:1.0.1",
    .file = "deploy.yaml",
    .setter = "default:app",
    .api_version = "apps/v1",
    .kind = "Deployment",
    .name = "app",
    .namespace = "default",
    .decision = "update/forward",
};

static long long thread_cpu_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Each {{define}}d template run on the sample data as its dot: one that only a condition of the
 * real data calls is held to the budget now too. Only the budget counts here (a define may
 * expect another dot). The runs together get one CPU budget, so many defines cannot multiply
 * it. */
static int check_defines(const struct template *t, const struct commitmsg_input *in,
                         struct error *err)
{
	long long start = thread_cpu_ms();
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < template_define_count(t); i++) {
		struct tarena arena = TARENA_INIT(RENDER_ARENA_MAX);
		struct buf out = BUF_INIT_MAX(TEMPLATE_OUTPUT_MAX);
		const struct tval *data = commitmsg_data(&arena, in);
		struct error trial = ERROR_INIT;

		if (data && template_execute_define(&out, t, template_define_name(t, i), data,
		                                    &arena, &trial) == IG_ETOOBIG)
			rc = error_set(err, IG_ETOOBIG, "%s", trial.msg);
		else if (thread_cpu_ms() - start > TEMPLATE_CPU_MS)
			rc = error_set(
			    err, IG_ETOOBIG,
			    "template '%s': over budget: its defines took more than %d ms "
			    "of CPU time",
			    in->tmpl_name ? in->tmpl_name : "messageTemplate", TEMPLATE_CPU_MS);
		buf_release(&out);
		tarena_release(&arena);
	}
	return rc;
}

int commitmsg_check(const char *tmpl, const char *tmpl_name, struct error *err)
{
	struct commitmsg_input in = {tmpl, tmpl_name,      "default", "automation", "./", NULL,
	                             0,    &sample_change, 1};
	struct buf out = BUF_INIT_MAX((size_t)1 << 20);
	struct error trial = ERROR_INIT;
	struct template *t = NULL;
	int rc;

	if (!tmpl || !*tmpl)
		return 0;
	/* syntax and functions: always the template's fault */
	if ((rc = template_parse(&t, tmpl, tmpl_name ? tmpl_name : "messageTemplate", err)) < 0)
		return rc;
	rc = check_defines(t, &in, err);
	template_free(t);
	if (rc < 0)
		return rc;
	/* fields Flux's types lack (removed ones included) fail whatever the data, and so does
	 * a budget spent on one change; other failures may depend on the real data and are
	 * left to the render */
	rc = commitmsg_render(&out, &in, &trial);
	buf_release(&out);
	if (rc == IG_ETOOBIG || (rc == IG_EINVALID &&
	                         (strstr(trial.msg, "can't evaluate field") ||
	                          strstr(trial.msg, "removed '") || strstr(trial.msg, "NUL byte"))))
		return error_set(err, rc, "%s", trial.msg);
	return 0;
}
