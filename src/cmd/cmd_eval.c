/* `imageguard eval`: which tag a policy picks from a list on stdin, and whether that is a move
 * forward from --current (CONTRACT §3). The verdict is policy_verdict, the one the guard decides
 * every commit with. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/cmd/commands.h"
#include "imageguard/util/error.h"
#include "imageguard/policy/policy.h"
#include "imageguard/policy/policyflags.h"
#include "imageguard/policy/taglines.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/escape.h"

struct eval_opts {
	struct policyflags pf;
	const char *current;
	bool json;
};

static void usage(FILE *out)
{
	fputs("usage: imageguard eval [POLICY FLAGS] [--current TAG] [-o text|json] < tags\n"
	      "\n"
	      "Reads tags from stdin, one per line (blank lines and CR ignored, duplicates\n"
	      "folded, unreadable lines skipped), and prints the tag the policy picks.\n"
	      "\n"
	      "With text output the list streams through a fixed buffer (its counts in\n"
	      "messages include duplicates); JSON output reads it whole.\n"
	      "\n"
	      "policy flags (as a Flux ImagePolicy):\n"
	      "  --pattern RE            keep tags matching RE (pcre2, unanchored)\n"
	      "  --extract TEMPLATE      order by $1, $name or ${name} of --pattern's first\n"
	      "                          match (only the expanded template, as in Flux)\n"
	      "  --exclude RE            drop tags matching RE (repeatable; replaces the\n"
	      "                          default exclusion ^.*\\.sig$)\n"
	      "  --semver RANGE          newest version in RANGE (Masterminds v3 syntax)\n"
	      "  --numerical asc|desc    asc picks the greatest number\n"
	      "  --alphabetical asc|desc asc picks the byte-wise greatest\n"
	      "options:\n"
	      "  --current TAG           also compare TAG with the pick, as the guard does:\n"
	      "                          forward, same (also the same version spelled\n"
	      "                          differently), backward (also a narrowed range, or a\n"
	      "                          looser spelling of a version ahead: v2, 2.1) or\n"
	      "                          incomparable\n"
	      "  -o, --output text|json  text (default): the tag; json: {latest, candidates,\n"
	      "                          skipped, current, verdict}: candidates are the tags\n"
	      "                          the policy can order; skipped those that passed the\n"
	      "                          filter but are not orderable (not semver, outside the\n"
	      "                          range, not a number), plus unreadable lines\n"
	      "\n"
	      "Exit status: 0 a tag was picked, 1 no candidate (or, as in Flux, a numerical\n"
	      "policy over a tag that passes the filter but is not a number), 2 usage or\n"
	      "invalid policy.\n",
	      out);
}

/* Takes `--name VALUE` or `--name=VALUE` (or a short alias); 1 taken, 0 not this option. */
static int take_value(const char **out, const char *name, const char *alias, int argc, char **argv,
                      int *i, struct error *err)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) == 0 && a[n] == '=') {
		*out = a + n + 1;
		*i += 1;
		return 1;
	}
	if (strcmp(a, name) != 0 && !(alias && strcmp(a, alias) == 0))
		return 0;
	if (*i + 1 >= argc)
		return error_set(err, IG_EUSAGE, "option '%s': missing value", a);
	*out = argv[*i + 1];
	*i += 2;
	return 1;
}

static int parse_args(struct eval_opts *o, int argc, char **argv, struct error *err)
{
	const char *output = "text";
	int i = 1, rc;

	while (i < argc) {
		if ((rc = policyflags_take(&o->pf, argc, argv, &i, err)) != 0 ||
		    (rc = take_value(&o->current, "--current", NULL, argc, argv, &i, err)) != 0 ||
		    (rc = take_value(&output, "--output", "-o", argc, argv, &i, err)) != 0) {
			if (rc < 0)
				return rc;
			continue;
		}
		return error_set(err, IG_EUSAGE,
		                 "'%s': unknown argument (see imageguard eval --help)", argv[i]);
	}
	if (strcmp(output, "json") == 0)
		o->json = true;
	else if (strcmp(output, "text") != 0)
		return error_set(err, IG_EUSAGE, "option '-o': expected text or json, got '%s'",
		                 output);
	if ((rc = policyflags_finish(&o->pf, err)) < 0)
		return rc;
	if (!o->pf.set)
		return error_set(err, IG_EUSAGE,
		                 "one of --semver, --numerical, --alphabetical is required");
	return 0;
}

static int print_json(const struct policy_result *r, size_t unreadable, const char *current,
                      const char *verdict)
{
	json_t *o = json_object();
	char *s = NULL;
	int rc = -1;

	if (!o)
		return -1;
	if (json_object_set_new(o, "latest", r->latest ? json_string(r->latest) : json_null()) ||
	    json_object_set_new(o, "candidates", json_integer((json_int_t)r->candidates)) ||
	    json_object_set_new(o, "skipped",
	                        json_integer((json_int_t)(r->skipped + unreadable))) ||
	    json_object_set_new(o, "current", current ? json_string(current) : json_null()) ||
	    json_object_set_new(o, "verdict", verdict ? json_string(verdict) : json_null()))
		goto done;
	if (!(s = json_dumps(o, JSON_PRESERVE_ORDER)))
		goto done;
	printf("%s\n", s);
	rc = 0;
done:
	free(s);
	json_decref(o);
	return rc;
}

/* Flux fails a numerical policy over a non-number, and so does eval: one line naming the tag. */
static void print_unordered(const char *tag)
{
	struct buf b = BUF_INIT_MAX(1024);

	if (escape_append(&b, tag) < 0)
		buf_reset(&b);
	fprintf(stderr,
	        "imageguard: eval: numerical policy: tag '%s' passes the filter but is not a "
	        "number\n",
	        b.data ? b.data : "?");
	buf_release(&b);
}

/* The pick so far of a streamed list: policy_select keeps the first of equal tags, so the
 * pick of [pick so far, batch's pick] is the pick of everything read. */
struct stream_pick {
	const struct policy *p;
	struct policy_result r; /* candidates and skipped count lines, duplicates included */
	size_t tags;            /* tag lines handed over */
};

static int pick_batch(void *ctx, const char *const *tags, size_t n, struct error *err)
{
	struct stream_pick *sp = ctx;
	struct policy_result b = POLICY_RESULT_INIT, m = POLICY_RESULT_INIT;
	int rc;

	sp->tags += n;
	if ((rc = policy_select(&b, sp->p, tags, n, err)) < 0)
		return rc;
	sp->r.candidates += b.candidates;
	sp->r.skipped += b.skipped;
	if (b.unordered && !sp->r.unordered) {
		sp->r.unordered = b.unordered;
		b.unordered = NULL;
	}
	if (b.latest && !sp->r.latest) {
		sp->r.latest = b.latest;
		b.latest = NULL;
	} else if (b.latest) {
		const char *two[2] = {sp->r.latest, b.latest};

		if ((rc = policy_select(&m, sp->p, two, 2, err)) == 0 &&
		    strcmp(m.latest, sp->r.latest) != 0) {
			free(sp->r.latest);
			sp->r.latest = m.latest;
			m.latest = NULL;
		}
	}
	policy_result_release(&m);
	policy_result_release(&b);
	return rc;
}

/* The text output needs only the pick: the list streams through one block of memory (a
 * million tags took 34 MiB read whole). A numerical policy's non-number drops the pick, as
 * policy_select does. */
static int select_streamed(struct policy_result *r, size_t *tags, struct taglines_stats *st,
                           const struct policy *p, struct error *err)
{
	struct stream_pick sp = {p, POLICY_RESULT_INIT, 0};
	int rc = taglines_stream_fd(st, 0, TAGLINES_INPUT_MAX, 0, pick_batch, &sp, err);

	if (rc == 0 && sp.r.unordered) {
		free(sp.r.latest);
		sp.r.latest = NULL;
	}
	if (rc < 0)
		policy_result_release(&sp.r);
	*r = sp.r;
	*tags = sp.tags;
	return rc;
}

int cmd_eval(int argc, char **argv)
{
	struct eval_opts o = {POLICYFLAGS_INIT, NULL, false};
	struct taglines tl = TAGLINES_INIT;
	struct taglines_stats st;
	size_t tags = 0;
	struct policy_result r = POLICY_RESULT_INIT;
	struct error err = ERROR_INIT;
	struct policy *p = NULL;
	const char *verdict = NULL;
	int rc, exit_code = 2;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			exit_code = 0;
			goto done;
		}
	if ((rc = parse_args(&o, argc, argv, &err)) < 0)
		goto fail;
	if (o.current) { /* jansson refuses invalid UTF-8: check before reading stdin */
		json_t *j = json_string(o.current);

		if (!j)
			goto bad_current;
		json_decref(j);
	}
	if ((rc = policy_new(&p, &o.pf.spec, &err)) < 0)
		goto fail;
	if (o.json) { /* its counts fold duplicates: the whole list is read */
		if ((rc = taglines_read_fd(&tl, 0, TAGLINES_INPUT_MAX, &err)) < 0)
			goto fail;
		st = (struct taglines_stats){0, tl.unreadable, tl.first_bad, tl.first_bad_why};
		tags = tl.n;
		if ((rc = policy_select(&r, p, tl.tags, tl.n, &err)) < 0)
			goto fail;
	} else if ((rc = select_streamed(&r, &tags, &st, p, &err)) < 0) {
		goto fail;
	}
	if (st.unreadable)
		fprintf(
		    stderr,
		    "imageguard: eval: stdin: skipped %zu unreadable line(s), first at line %zu "
		    "(%s)\n",
		    st.unreadable, st.first_bad, st.first_bad_why);
	if (o.current && r.latest)
		verdict = policy_verdict_name(policy_verdict(p, o.current, r.latest));
	if (o.json && print_json(&r, tl.unreadable, o.current, verdict) < 0) {
		error_set(&err, IG_EFAIL, "writing JSON: out of memory");
		goto fail;
	}
	if (!o.json && r.latest)
		printf("%s\n", r.latest);
	if (r.unordered) {
		print_unordered(r.unordered);
		exit_code = 1;
		goto done;
	}
	if (!r.latest) {
		fprintf(stderr,
		        "imageguard: eval: no candidate: %zu tag(s) read, none passes the policy "
		        "(%zu skipped)\n",
		        tags, r.skipped + st.unreadable);
		exit_code = 1;
		goto done;
	}
	exit_code = fflush(stdout) == 0 ? 0 : 1;
	goto done;
bad_current:
	error_set(&err, IG_EUSAGE, "option '--current': not valid UTF-8");
fail:
	fprintf(stderr, "imageguard: eval: %s\n", err.msg);
	exit_code =
	    err.code == IG_EUSAGE || err.code == IG_EINVALID || err.code == IG_ETOOBIG ? 2 : 1;
done:
	policy_result_release(&r);
	policy_free(p);
	taglines_release(&tl);
	policyflags_release(&o.pf);
	return exit_code;
}
