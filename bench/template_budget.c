/* The messageTemplate budget in figures: the thread CPU time of Flux's documented v1 template
 * over N changes (default 2,000, each in its own file and object), and of each hostile template
 * until its budget stops it. Prints one line per template: name, result, milliseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/git/commitmsg.h"
#include "imageguard/template/template.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static const char flux_v1[] =
    "Automated image update\n\nAutomation name: {{ .AutomationObject }}\n\nFiles:\n"
    "{{ range $filename, $_ := .Changed.FileChanges -}}\n- {{ $filename }}\n{{ end -}}\n\n"
    "Objects:\n{{ range $resource, $changes := .Changed.Objects -}}\n"
    "- {{ $resource.Kind }} {{ $resource.Name }}\n  Changes:\n"
    "{{- range $_, $change := $changes }}\n    - {{ $change.OldValue }} -> "
    "{{ $change.NewValue }}\n{{ end -}}\n{{ end -}}\n";

static const struct {
	const char *name, *tmpl;
} templates[] = {
    {"flux-v1", flux_v1},
    {"recursion", "{{define \"a\"}}{{if lt (len .) 40}}{{template \"a\" (printf \"%sx\" .)}}"
                  "{{template \"a\" (printf \"%sx\" .)}}{{end}}{{end}}{{template \"a\" \"\"}}"},
    {"regex-cpu", "{{range 90000}}{{regexMatch \"^(a|aa)*$\" "
                  "\"aaaaaaaaaaaaaaaaaaaaaaaab\"}}{{end}}"},
    {"regex-backtrack", "{{regexMatch \"^(a+)+$\" (printf \"%sb\" (repeat 40 \"a\"))}}"},
    {"steps", "{{$s := repeat 200000 \"x\"}}{{range until 20000}}{{len $s}}{{end}}"},
    {"uniq", "{{len (uniq (until 30000))}}"},
    {"output", "{{range 100000}}{{repeat 1000 \"x\"}}{{end}}"},
};

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
	struct commitmsg_change *c = calloc(n ? n : 1, sizeof(*c));
	char(*files)[32] = calloc(n ? n : 1, sizeof(*files));
	char(*names)[32] = calloc(n ? n : 1, sizeof(*names));

	if (!c || !files || !names)
		return 1;
	for (size_t i = 0; i < n; i++) {
		snprintf(files[i], sizeof(files[i]), "apps/app%zu.yaml", i);
		snprintf(names[i], sizeof(names[i]), "app%zu", i);
		c[i] = (struct commitmsg_change){.policy = "default/app",
		                                 .old_value = "ghcr.io/example/app:1.0.0",
		                                 .new_value = "ghcr.io/example/app:1.0.1",
		                                 .file = files[i],
		                                 .api_version = "apps/v1",
		                                 .kind = "Deployment",
		                                 .name = names[i],
		                                 .namespace = "default",
		                                 .decision = "update/forward",
		                                 .tags_sha256 = "00"};
	}
	printf("budget: %d steps, %d ms CPU, %d bytes of output, %d backtracks per match\n",
	       TEMPLATE_STEPS_MAX, TEMPLATE_CPU_MS, TEMPLATE_OUTPUT_MAX, TEMPLATE_MATCH_LIMIT);
	for (size_t k = 0; k < sizeof(templates) / sizeof(templates[0]); k++) {
		struct commitmsg_input in = {
		    templates[k].tmpl, "messageTemplate", "default", "auto", "./", NULL, 0, c, n};
		struct buf out = BUF_INIT_MAX((size_t)64 << 20);
		struct error err = ERROR_INIT;
		double t0 = cpu_ms();
		int rc = commitmsg_render(&out, &in, &err);

		printf("%-16s %zu changes: %-8s %7.1f ms CPU, %zu bytes%s%s\n", templates[k].name,
		       n, rc == 0 ? "ok" : "refused", cpu_ms() - t0, out.len, rc ? ": " : "",
		       rc ? err.msg : "");
		buf_release(&out);
	}
	free(c);
	free(files);
	free(names);
	return 0;
}
