/* Unit tests for configuration loading: YAML snippets as users write them (Flux's kinds and
 * imageguard's), defaults, every error with its file:line, warnings, directories, and the
 * time syntaxes (Go durations, RFC3339). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/config/config.h"
#include "imageguard/util/duration.h"
#include "imageguard/util/error.h"
#include "imageguard/policy/policy.h"

/* ---- helpers ---- */

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s", "/tmp/imageguard-test-config.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_rf(const char *path)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

static void teardown(void)
{
	rm_rf(tmpdir);
}

/* Writes text to tmpdir/name (creating parent folders) and returns the path (static). */
static const char *write_file(const char *name, const char *text)
{
	static char path[512];
	char dir[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = dir + strlen(tmpdir) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(dir, 0755);
		*s = '/';
	}
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	return path;
}

static const char *data_dir(void)
{
	static char path[512];
	const char *src = getenv("IMAGEGUARD_SRC");

	snprintf(path, sizeof(path), "%s/test/data/config", src ? src : ".");
	return path;
}

static bool has_diag(const struct config_diags *d, enum config_severity sev, size_t line,
                     const char *text)
{
	for (size_t i = 0; i < d->len; i++)
		if (d->items[i].severity == sev && d->items[i].line == line &&
		    strstr(d->items[i].message, text))
			return true;
	return false;
}

static void dump(const struct config_diags *d)
{
	for (size_t i = 0; i < d->len; i++)
		fprintf(stderr, "  %s:%zu: %s%s\n", d->items[i].file, d->items[i].line,
		        d->items[i].severity == CONFIG_WARNING ? "warning: " : "",
		        d->items[i].message);
}

/* ---- snippets: each error and warning with its line ---- */

struct expect {
	size_t line;
	const char *text;
};

#define REPO                                                                                       \
	"apiVersion: image.toolkit.fluxcd.io/v1beta2\n" /* 1 */                                    \
	"kind: ImageRepository\n"                       /* 2 */                                    \
	"metadata:\n"                                   /* 3 */                                    \
	"  name: app\n"                                 /* 4 */                                    \
	"spec:\n"                                       /* 5 */                                    \
	"  image: ghcr.io/acme/app\n"                   /* 6 */                                    \
	"---\n"                                         /* 7 */
#define POLICY_HEAD                                                                                \
	"apiVersion: image.toolkit.fluxcd.io/v1beta2\n" /* 8 */                                    \
	"kind: ImagePolicy\n"                           /* 9 */                                    \
	"metadata:\n"                                   /* 10 */                                   \
	"  name: app\n"                                 /* 11 */
#define POLICY_REF                                                                                 \
	"spec:\n"                 /* 12 */                                                         \
	"  imageRepositoryRef:\n" /* 13 */                                                         \
	"    name: app\n"         /* 14 */
#define IG_DIGEST_HEAD                                                                             \
	"apiVersion: imageguard.io/v1alpha1\nkind: ImageRepository\nmetadata:\n  name: app\n"      \
	"spec:\n  image: ghcr.io/acme/app\n---\napiVersion: imageguard.io/v1alpha1\n"              \
	"kind: ImagePolicy\nmetadata:\n  name: app\n" /* 11 */
#define SEMVER_ANY                                                                                 \
	"  policy:\n"              /* 15 */                                                        \
	"    semver:\n"            /* 16 */                                                        \
	"      range: '>=1.0.0'\n" /* 17 */

static const struct snippet {
	const char *name;
	const char *yaml;
	struct expect errors[6];
	struct expect warnings[4];
} snippets[] = {
    {"valid flux pair", REPO POLICY_HEAD POLICY_REF SEMVER_ANY, {{0}}, {{0}}},
    {"rollback without reason",
     REPO POLICY_HEAD "  annotations:\n"                       /* 12 */
                      "    imageguard.io/rollback-to: 1.0.0\n" /* 13 */
                      "spec:\n  imageRepositoryRef:\n    name: app\n"
                      "  policy:\n    semver:\n      range: '>=1.0.0'\n",
     {{13, "needs 'imageguard.io/rollback-reason'"}},
     {{0}}},
    {"rollback empty reason",
     REPO POLICY_HEAD "  annotations:\n"
                      "    imageguard.io/rollback-to: 1.0.0\n" /* 13 */
                      "    imageguard.io/rollback-reason: ''\n"
                      "spec:\n  imageRepositoryRef:\n    name: app\n"
                      "  policy:\n    semver:\n      range: '>=1.0.0'\n",
     {{13, "needs 'imageguard.io/rollback-reason'"}},
     {{0}}},
    {"bad rollback-until",
     REPO POLICY_HEAD "  annotations:\n"
                      "    imageguard.io/rollback-to: 1.0.0\n"
                      "    imageguard.io/rollback-reason: broken\n"
                      "    imageguard.io/rollback-until: 2026-13-01T00:00:00Z\n" /* 15 */
                      "spec:\n  imageRepositoryRef:\n    name: app\n"
                      "  policy:\n    semver:\n      range: '>=1.0.0'\n",
     {{15, "not an RFC3339 date-time"}},
     {{0}}},
    {"bad rollback-to tag",
     REPO POLICY_HEAD "  annotations:\n"
                      "    imageguard.io/rollback-to: '-bad'\n" /* 13 */
                      "    imageguard.io/rollback-reason: broken\n"
                      "    imageguard.io/rolback-until: x\n" /* 15 */
                      "spec:\n  imageRepositoryRef:\n    name: app\n"
                      "  policy:\n    semver:\n      range: '>=1.0.0'\n",
     {{13, "not a valid tag"}},
     {{15, "unknown annotation 'imageguard.io/rolback-until'"}}},
    {"reason without rollback-to",
     REPO POLICY_HEAD "  annotations:\n" /* 12: the mapping starts on 13 */
                      "    imageguard.io/rollback-reason: why\n"
                      "spec:\n  imageRepositoryRef:\n    name: app\n"
                      "  policy:\n    semver:\n      range: '>=1.0.0'\n",
     {{0}},
     {{13, "without 'imageguard.io/rollback-to'"}}},
    {"bad duration",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n  image: ghcr.io/acme/app\n"
     "  interval: 5 min\n" /* 7 */
     "  timeout: -30s\n",  /* 8 */
     {{7, "duration '5 min'"}, {8, "must be at least 1ms"}},
     {{0}}},
    {"bad regex",
     REPO POLICY_HEAD POLICY_REF "  filterTags:\n"                      /* 15 */
                                 "    pattern: '^main-(?P<ts>[0-9]+'\n" /* 16 */
                                 "    extract: $ts\n"
                                 "  policy:\n    numerical:\n      order: asc\n",
     {{16, "'spec.filterTags': pattern"}},
     {{0}}},
    {"extract names a missing group",
     REPO POLICY_HEAD POLICY_REF "  filterTags:\n"
                                 "    pattern: '^main-(?P<ts>[0-9]+)$'\n" /* 16 */
                                 "    extract: $stamp\n"
                                 "  policy:\n    numerical:\n      order: asc\n",
     {{16, "'spec.filterTags': extract"}},
     {{0}}},
    {"bad range and bad regex both reported",
     REPO POLICY_HEAD POLICY_REF "  filterTags:\n"
                                 "    pattern: '(['\n" /* 16 */
                                 "  policy:\n"
                                 "    semver:\n"
                                 "      range: '>=>1'\n", /* 19 */
     {{16, "pattern"}, {19, "semver range"}},
     {{0}}},
    {"missing repository",
     POLICY_HEAD "spec:\n"
                 "  imageRepositoryRef:\n" /* 6 */
                 "    name: nope\n"
                 "    namespace: other\n"
                 "  policy:\n    alphabetical:\n      order: desc\n",
     {{6, "ImageRepository 'other/nope' not found"}},
     {{0}}},
    {"repository in another namespace is not found",
     REPO "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata:\n"
          "  name: app\n  namespace: team\n"              /* 12 */
          "spec:\n  imageRepositoryRef:\n    name: app\n" /* 14 */
          "  policy:\n    semver:\n      range: '>=1.0.0'\n",
     {{14, "ImageRepository 'team/app' not found"}},
     {{0}}},
    {"missing git repository",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\nmetadata:\n"
     "  name: auto\nspec:\n"
     "  sourceRef:\n" /* 6 */
     "    kind: GitRepository\n    name: fleet\n",
     {{6, "GitRepository 'default/fleet' not found"}},
     {{0}}},
    {"duplicate names",
     REPO "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n" /* 9 */
          "metadata:\n  name: app\n  namespace: default\nspec:\n  image: ghcr.io/acme/other\n",
     {{9, "ImageRepository 'default/app' is already defined at"}},
     {{0}}},
    {"same name in two namespaces",
     REPO "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
          "metadata:\n  name: app\n  namespace: prod\nspec:\n  image: ghcr.io/acme/other\n",
     {{0}},
     {{0}}},
    {"unknown fields warn",
     REPO POLICY_HEAD POLICY_REF SEMVER_ANY "  sorting: newest\n" /* 18 */
                                            "status:\n  ready: true\n",
     {{0}},
     {{18, "unknown field 'spec.sorting'"}}},
    {"unknown kinds and apiVersions ignored",
     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n"
     "---\napiVersion: cert-manager.io/v1\nkind: ImagePolicy\nspec: 3\n"
     "---\n- just\n- a list\n---\nplain scalar\n---\n",
     {{0}},
     {{0}}},
    {"our group, other version",
     "apiVersion: image.toolkit.fluxcd.io/v1alpha1\nkind: ImagePolicy\nmetadata:\n  name: x\n",
     {{0}},
     {{2, "apiVersion 'image.toolkit.fluxcd.io/v1alpha1' is not supported"}}},
    {"imageguard unknown kind",
     "apiVersion: imageguard.io/v1alpha1\nkind: Guard\n",
     {{0}},
     {{2, "kind 'Guard' is not an imageguard kind"}}},
    {"digest policy platform",
     IG_DIGEST_HEAD "spec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    digest:\n"
                    "      tag: latest\n      platform: linux/arm64/v8\n",
     {{0}},
     {{0}}},
    {"digest policy bad platform",
     IG_DIGEST_HEAD "spec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    digest:\n"
                    "      tag: latest\n      platform: arm64\n", /* 18 */
     {{18, "'spec.policy.digest.platform': 'arm64' is not os/arch[/variant]"}},
     {{0}}},
    {"digest policy rollback to a digest",
     IG_DIGEST_HEAD "  annotations:\n    imageguard.io/rollback-to: \"sha256:"
                    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n"
                    "    imageguard.io/rollback-reason: bad build\n"
                    "spec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    digest:\n"
                    "      tag: latest\n",
     {{0}},
     {{0}}},
    {"digest policy rollback to a tag",
     IG_DIGEST_HEAD "  annotations:\n    imageguard.io/rollback-to: v1.2.3\n" /* 13 */
                    "    imageguard.io/rollback-reason: bad build\n"
                    "spec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    digest:\n"
                    "      tag: latest\n",
     {{13, "'v1.2.3' is not a digest"}},
     {{0}}},
    {"semver policy rollback to a digest",
     IG_DIGEST_HEAD "  annotations:\n    imageguard.io/rollback-to: \"sha256:"
                    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n" /* 13 */
                    "    imageguard.io/rollback-reason: bad build\n"
                    "spec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    semver:\n"
                    "      range: '>=1.0.0'\n",
     {{13, "is not a valid tag"}},
     {{0}}},
    {"digest policy needs imageguard apiVersion",
     REPO POLICY_HEAD POLICY_REF "  policy:\n"
                                 "    digest:\n" /* 16 */
                                 "      tag: edge\n",
     {{16, "needs apiVersion imageguard.io/v1alpha1"}},
     {{0}}},
    {"two policy kinds",
     REPO POLICY_HEAD POLICY_REF "  policy:\n"
                                 "    semver:\n"
                                 "      range: '1.x'\n"
                                 "    numerical:\n      order: asc\n",
     {{15, "exactly one of semver, numerical, alphabetical"}},
     {{0}}},
    {"no policy kind", REPO POLICY_HEAD POLICY_REF, {{13, "'spec.policy' is required"}}, {{0}}},
    {"bad order",
     REPO POLICY_HEAD POLICY_REF "  policy:\n    alphabetical:\n"
                                 "      order: newest\n", /* 17 */
     {{17, "'newest' must be asc or desc"}},
     {{0}}},
    {"semver without range",
     REPO POLICY_HEAD POLICY_REF "  policy:\n"
                                 "    semver:\n" /* 16 */
                                 "      rang: 1.x\n",
     {{17, "'spec.policy.semver.range' is required"}},
     {{17, "unknown field 'spec.policy.semver.rang'"}}},
    {"image with tag",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n"
     "  image: ghcr.io/acme/app:1.0\n", /* 6 */
     {{6, "a tag is not allowed"}},
     {{0}}},
    {"image missing",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n"
     "  interval: 1m\n", /* 6: the spec mapping */
     {{6, "'spec.image' is required"}},
     {{0}}},
    {"bad exclusion and bad secret name",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n  image: ghcr.io/acme/app\n"
     "  exclusionList:\n"
     "    - '^.*\\.sig$'\n"
     "    - '(unclosed'\n" /* 9 */
     "  secretRef:\n"
     "    name: ../etc\n", /* 11 */
     {{9, "'spec.exclusionList'"}, {11, "not a valid Kubernetes name"}},
     {{0}}},
    {"null exclusionList takes the default",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n  image: ghcr.io/acme/app\n"
     "  exclusionList:\n", /* checked in defaults below too */
     {{0}},
     {{0}}},
    {"exclusionList not a list",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n  image: ghcr.io/acme/app\n"
     "  exclusionList: '^x$'\n", /* 7 */
     {{7, "must be a list of regexes"}},
     {{0}}},
    {"bad booleans and types",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n  image: ghcr.io/acme/app\n"
     "  insecure: 'yes'\n"  /* 7 */
     "  suspend: maybe\n"   /* 8 */
     "  secretRef: ghcr\n", /* 9 */
     {{7, "'spec.insecure' must be true or false"},
      {8, "'spec.suspend' must be true or false"},
      {9, "'spec.secretRef' must be a mapping"}},
     {{0}}},
    {"update strategy and path",
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n"
     "spec:\n  url: https://example.com/fleet.git\n---\n"
     "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
     "  name: auto\nspec:\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n"
     "  update:\n"
     "    path: ../outside\n"     /* 17 */
     "    strategy: Kustomize\n", /* 18 */
     {{17, "must be relative to the repository root"}, {18, "'Kustomize' is not supported"}},
     {{0}}},
    {"a value spanning lines is quoted on one line (fuzz regression)",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: \"app\\nx\"\n" /* 4 */
     "spec:\n  image: ghcr.io/acme/app\n",
     {{4, "'app x' is not a valid Kubernetes name"}},
     {{0}}},
    {"messageTemplate the commit step would refuse",
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n"
     "spec:\n  url: https://example.com/fleet.git\n---\n"
     "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
     "  name: auto\nspec:\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n"
     "  git:\n    commit:\n"
     "      messageTemplate: '{{ if .Changed }}x{{ end }}'\n", /* 18 */
     {{18, "unsupported action 'if .Changed'"}},
     {{0}}},
    {"empty branch, author and path",
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n"
     "spec:\n  url: https://example.com/fleet.git\n"
     "  ref:\n    branch: ''\n" /* 8 */
     "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
     "  name: auto\nspec:\n  sourceRef:\n    name: fleet\n"
     "  git:\n    commit:\n      author:\n"
     "        email: \"\"\n" /* 20 */
     "    push:\n"
     "      branch: ''\n" /* 22 */
     "  update:\n"
     "    path: ''\n", /* 24 */
     {{8, "GitRepository 'default/fleet': 'spec.ref.branch' must not be empty"},
      {20, "'spec.git.commit.author.email' must not be empty"},
      {22, "'spec.git.push.branch' must not be empty"},
      {24, "ImageUpdateAutomation 'default/auto': 'spec.update.path' must not be empty"}},
     {{0}}},
    {"source kind and git url",
     "apiVersion: source.toolkit.fluxcd.io/v1beta2\nkind: GitRepository\nmetadata:\n"
     "  name: fleet\nspec:\n"
     "  url: git@github.com:acme/fleet\n" /* 6 */
     "---\napiVersion: image.toolkit.fluxcd.io/v1beta1\nkind: ImageUpdateAutomation\n"
     "metadata:\n  name: auto\nspec:\n  sourceRef:\n"
     "    kind: Bucket\n" /* 14 */
     "    name: fleet\n",
     {{6, "must start with ssh://"}, {14, "'Bucket' is not supported"}},
     {{0}}},
    {"reflection policy",
     REPO POLICY_HEAD POLICY_REF SEMVER_ANY "  digestReflectionPolicy: Sometimes\n", /* 18 */
     {{18, "must be Never, IfNotPresent or Always"}},
     {{0}}},
    {"invalid YAML",
     REPO "apiVersion: image.toolkit.fluxcd.io/v1beta2\n"
          "kind: ImagePolicy\n"
          "metadata: {name: [x\n", /* 10 */
     {{11, "invalid YAML"}},
     {{0}}},
    {"duplicate key",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n  image: ghcr.io/acme/app\n"
     "  image: ghcr.io/acme/other\n", /* 7 */
     {{7, "'spec.image': duplicate key"}},
     {{0}}},
    {"metadata problems",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: App_1\n" /* 4: the metadata mapping */
     "spec:\n  image: ghcr.io/acme/app\n---\n"
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n" /* 9 */
     "spec:\n  image: ghcr.io/acme/app\n",
     {{4, "'metadata.name': 'App_1' is not a valid Kubernetes name"},
      {9, "'metadata' must be a mapping"}},
     {{0}}},
    {"spec not a mapping",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\n"
     "spec: [1, 2]\n", /* 5 */
     {{5, "'spec' must be a mapping"}},
     {{0}}},
    {"many errors in one file, all reported",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n"
     "  image: GHCR.io/Acme/App\n" /* 6 */
     "  interval: 1x\n"            /* 7 */
     "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata:\n"
     "  name: p\nspec:\n"
     "  imageRepositoryRef:\n" /* 14 */
     "    name: gone\n  policy:\n    numerical:\n"
     "      order: sideways\n", /* 18 */
     {{6, "'spec.image'"},
      {7, "'spec.interval'"},
      {14, "'default/gone' not found"},
      {18, "must be asc or desc"}},
     {{0}}},
};

START_TEST(snippet)
{
	const struct snippet *s = &snippets[_i];
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	size_t nerr = 0, nwarn = 0;
	const char *path = write_file("c.yaml", s->yaml);
	int rc = config_load(&c, path, &diags, &err);

	while (nerr < 6 && s->errors[nerr].text)
		nerr++;
	while (nwarn < 4 && s->warnings[nwarn].text)
		nwarn++;
	if (diags.errors != nerr || diags.warnings != nwarn)
		dump(&diags);
	ck_assert_msg(diags.errors == nerr, "%s: %zu errors, expected %zu", s->name, diags.errors,
	              nerr);
	ck_assert_msg(diags.warnings == nwarn, "%s: %zu warnings, expected %zu", s->name,
	              diags.warnings, nwarn);
	for (size_t i = 0; i < nerr; i++)
		if (!has_diag(&diags, CONFIG_ERROR, s->errors[i].line, s->errors[i].text)) {
			dump(&diags);
			ck_abort_msg("%s: no error at line %zu with '%s'", s->name,
			             s->errors[i].line, s->errors[i].text);
		}
	for (size_t i = 0; i < nwarn; i++)
		if (!has_diag(&diags, CONFIG_WARNING, s->warnings[i].line, s->warnings[i].text)) {
			dump(&diags);
			ck_abort_msg("%s: no warning at line %zu with '%s'", s->name,
			             s->warnings[i].line, s->warnings[i].text);
		}
	for (size_t i = 0; i < diags.len; i++)
		ck_assert_str_eq(diags.items[i].file, path);
	if (nerr) {
		ck_assert_int_eq(rc, IG_EINVALID);
		ck_assert_ptr_null(c);
		ck_assert_msg(strstr(err.msg, "error"), "%s", err.msg);
	} else {
		ck_assert_msg(rc == 0, "%s: %s", s->name, err.msg);
		ck_assert_ptr_nonnull(c);
	}
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* ---- whole configurations ---- */

static struct config *load_ok(const char *path, struct config_diags *diags)
{
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	int rc = config_load(&c, path, diags, &err);

	if (rc != 0)
		dump(diags);
	ck_assert_msg(rc == 0, "%s: %s", path, err.msg);
	return c;
}

START_TEST(flux_folder)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	char path[600];
	struct config *c;
	const struct config_policy *p;
	const struct config_automation *a;
	const struct config_repository *r;

	snprintf(path, sizeof(path), "%s/flux", data_dir());
	c = load_ok(path, &diags);
	ck_assert_uint_eq(diags.len, 0); /* .hidden/broken.yaml and README.md are not read */
	ck_assert_uint_eq(c->files.len, 5);
	for (size_t i = 1; i < c->files.len; i++) /* sorted */
		ck_assert(strcmp(c->files.items[i - 1], c->files.items[i]) < 0);
	ck_assert_uint_eq(c->repositories_len, 1);
	ck_assert_uint_eq(c->policies_len, 2);
	ck_assert_uint_eq(c->git_sources_len, 1);
	ck_assert_uint_eq(c->automations_len, 1);

	r = config_find_repository(c, "flux-system", "podinfo");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->ref.registry, "ghcr.io");
	ck_assert_str_eq(r->ref.repository, "stefanprodan/podinfo");
	ck_assert_str_eq(r->secret_ref, "ghcr-auth");
	ck_assert_int_eq(r->interval_ms, 300000);
	ck_assert_uint_eq(r->exclusion.len, 1);
	ck_assert_str_eq(r->exclusion.items[0], "^.*\\.sig$");

	p = config_find_policy_id(c, "flux-system/podinfo-main");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_eq(p, config_find_policy(c, "flux-system", "podinfo-main"));
	ck_assert_ptr_eq(p->repository, r);
	ck_assert_int_eq(p->kind, CONFIG_POLICY_NUMERICAL);
	ck_assert(p->ascending);
	ck_assert_str_eq(p->extract, "$ts");
	ck_assert_ptr_null(p->order_policy);
	ck_assert_ptr_nonnull(p->policy);
	{
		const char *tags[] = {"main-abc123-100", "main-def456-99", "5.0.3", "x.sig"};
		struct policy_result res = POLICY_RESULT_INIT;
		struct error err = ERROR_INIT;

		ck_assert_int_eq(policy_select(&res, p->policy, tags, 4, &err), 0);
		ck_assert_str_eq(res.latest, "main-abc123-100");
		policy_result_release(&res);
	}
	ck_assert_ptr_null(config_find_policy_id(c, "default/podinfo"));

	a = config_find_automation(c, "flux-system", "flux-system");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_eq(a->source, config_find_git_source(c, "flux-system", "flux-system"));
	ck_assert_str_eq(a->source->url, "ssh://git@github.com/acme/fleet");
	ck_assert_str_eq(a->source->secret_ref, "flux-system");
	ck_assert_int_eq(a->source->interval_ms, 60000);
	ck_assert_str_eq(a->checkout_branch, "main");
	ck_assert_str_eq(a->push_branch, "main");
	ck_assert_str_eq(a->author_name, "fluxcdbot");
	ck_assert_str_eq(a->author_email, "fluxcdbot@users.noreply.github.com");
	ck_assert_ptr_nonnull(strstr(a->message_template, ".Changed.Changes"));
	ck_assert_str_eq(a->update_path, "./clusters/prod");
	ck_assert_int_eq(a->interval_ms, 30 * 60000);
	ck_assert(strstr(a->origin.file, "image-automation.yml"));
	ck_assert_uint_eq(a->origin.line, 2);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

START_TEST(imageguard_kinds)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	char path[600];
	struct config *c;
	const struct config_policy *p, *edge;
	const struct config_repository *r;
	const struct config_automation *a;

	snprintf(path, sizeof(path), "%s/imageguard.yaml", data_dir());
	c = load_ok(path, &diags);
	ck_assert_uint_eq(diags.len, 0);
	r = config_find_repository(c, "apps", "app");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->ref.registry, "registry.example.com:5000");
	ck_assert_int_eq(r->interval_ms, 90 * 60000);
	ck_assert_int_eq(r->timeout_ms, 45000);
	ck_assert(r->insecure && !r->suspend);
	ck_assert_str_eq(r->cert_secret_ref, "registry-ca");
	ck_assert_ptr_null(r->secret_ref);
	ck_assert_uint_eq(r->exclusion.len, 2);

	p = config_find_policy(c, "apps", "app");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->reflect, CONFIG_REFLECT_IF_NOT_PRESENT);
	/* the SemVer order without the range (">=1.0.0 <2.0.0"): 2.5.0 is behind 3.0.0 */
	ck_assert_ptr_nonnull(p->order_policy);
	ck_assert_int_eq(policy_compare(p->policy, "3.0.0", "1.5.0"), POLICY_INCOMPARABLE);
	ck_assert_int_eq(policy_compare(p->order_policy, "3.0.0", "1.5.0"), POLICY_BACKWARD);
	ck_assert_int_eq(policy_compare(p->order_policy, "3.0.0-rc.1", "1.5.0"), POLICY_BACKWARD);
	ck_assert_str_eq(p->override.tag, "1.4.2");
	ck_assert_str_eq(p->override.reason, "1.5.0 corrupts sessions (INC-1234)");
	ck_assert(p->override.has_until);
	ck_assert_int_eq(p->override.until, 1798131600); /* 2026-12-24T17:00:00Z */
	ck_assert(config_override_active(&p->override, 1798131599));
	ck_assert(!config_override_active(&p->override, 1798131600));

	edge = config_find_policy(c, "apps", "app-edge");
	ck_assert_ptr_nonnull(edge);
	ck_assert_int_eq(edge->kind, CONFIG_POLICY_DIGEST);
	ck_assert_str_eq(edge->digest_tag, "edge");
	ck_assert_int_eq(edge->reflect, CONFIG_REFLECT_ALWAYS);
	ck_assert_ptr_null(edge->order_policy);
	ck_assert(!config_override_active(&edge->override, 0));
	ck_assert(policy_accepts(edge->policy, "edge"));
	ck_assert(!policy_accepts(edge->policy, "edgy"));
	ck_assert(!policy_accepts(edge->policy, "1.0.0"));

	/* defaults: namespace, branches from the GitRepository, author, path, interval */
	a = config_find_automation(c, "default", "fleet");
	ck_assert_ptr_nonnull(a);
	ck_assert_str_eq(a->source->id, "default/fleet");
	ck_assert_str_eq(a->checkout_branch, "release");
	ck_assert_str_eq(a->push_branch, "release");
	ck_assert_str_eq(a->author_name, "imageguard");
	ck_assert_str_eq(a->author_email, "imageguard@localhost");
	ck_assert_ptr_null(a->message_template);
	ck_assert_str_eq(a->update_path, "./clusters");
	ck_assert_int_eq(a->interval_ms, 300000);
	ck_assert(!a->suspend);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

START_TEST(defaults)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	const struct config_policy *p;
	const struct config_automation *a;
	const char *path = write_file(
	    "d.yaml",
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"
	    "  name: app\nspec:\n  image: nginx\n  exclusionList: []\n  suspend: true\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"
	    "  name: nulls\nspec:\n  image: nginx\n  exclusionList: ~\n  interval: null\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"
	    "  name: app\n  namespace: web\nspec:\n  imageRepositoryRef:\n    name: app\n"
	    "    namespace: default\n  policy:\n    numerical: {}\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"
	    "  name: empty-exclusions\nspec:\n  imageRepositoryRef: {name: app}\n"
	    "  policy: {alphabetical: {}}\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"
	    "  name: default-exclusions\nspec:\n  imageRepositoryRef: {name: nulls}\n"
	    "  policy: {alphabetical: {}}\n---\n"
	    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"
	    "  name: g\nspec:\n  url: file:///srv/git/fleet.git\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
	    "  name: a\nspec:\n  sourceRef:\n    name: g\n  git:\n    push:\n"
	    "      branch: auto\n");

	c = load_ok(path, &diags);
	ck_assert_uint_eq(diags.len, 0);
	ck_assert_str_eq(c->repositories[0].ref.repository, "library/nginx");
	ck_assert_str_eq(config_find_repository(c, "default", "nulls")->exclusion.items[0],
	                 "^.*\\.sig$");
	ck_assert_uint_eq(c->repositories[0].exclusion.len, 0);
	ck_assert(c->repositories[0].suspend);
	p = config_find_policy(c, "web", "app");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->repository->id, "default/app");
	ck_assert(p->ascending);
	ck_assert_int_eq(p->reflect, CONFIG_REFLECT_NEVER);
	ck_assert(!p->suspend);
	/* exclusionList: [] excludes nothing; absent or null, the default excludes signatures */
	ck_assert(policy_accepts(config_find_policy(c, "default", "empty-exclusions")->policy,
	                         "sha256-abc.sig"));
	ck_assert(!policy_accepts(config_find_policy(c, "default", "default-exclusions")->policy,
	                          "sha256-abc.sig"));
	ck_assert(policy_accepts(config_find_policy(c, "default", "default-exclusions")->policy,
	                         "sha256-abc"));
	a = &c->automations[0];
	ck_assert_str_eq(a->checkout_branch, "master");
	ck_assert_str_eq(a->push_branch, "auto");
	ck_assert_str_eq(a->update_path, "./");
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

START_TEST(directory_walk)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	struct error err = ERROR_INIT;
	char path[600];

	write_file("cfg/b/repo.yml", "apiVersion: imageguard.io/v1alpha1\nkind: ImageRepository\n"
	                             "metadata:\n  name: r\nspec:\n  image: ghcr.io/a/b\n");
	write_file("cfg/a.yaml", "apiVersion: imageguard.io/v1alpha1\nkind: ImagePolicy\n"
	                         "metadata:\n  name: p\nspec:\n  imageRepositoryRef:\n    name: r\n"
	                         "  policy:\n    alphabetical:\n      order: desc\n");
	write_file("cfg/notes.txt", "kind: ImagePolicy\n[broken\n");
	write_file("cfg/..data/x.yaml", "[broken\n");
	write_file("cfg/.git/config.yaml", "[broken\n");
	snprintf(path, sizeof(path), "%s/cfg/", tmpdir);
	c = load_ok(path, &diags);
	ck_assert_uint_eq(c->files.len, 2);
	ck_assert(strstr(c->files.items[0], "/cfg/a.yaml") && !strstr(c->files.items[0], "//"));
	ck_assert(strstr(c->files.items[1], "/cfg/b/repo.yml"));
	ck_assert_ptr_nonnull(c->policies[0].repository);
	ck_assert(!c->policies[0].ascending);
	config_free(c);

	/* a broken file among good ones: its error, and the others still read */
	write_file("cfg/c.yaml", "apiVersion: imageguard.io/v1alpha1\nkind: ImagePolicy\n"
	                         "metadata:\n  name: q\nspec:\n  imageRepositoryRef:\n"
	                         "    name: missing\n  policy: {numerical: {order: asc}}\n");
	c = NULL;
	ck_assert_int_eq(config_load(&c, path, &diags, &err), IG_EINVALID);
	ck_assert_ptr_null(c);
	ck_assert_uint_eq(diags.errors, 1);
	ck_assert(strstr(diags.items[0].file, "cfg/c.yaml"));
	ck_assert_ptr_nonnull(strstr(err.msg, "1 error"));
	config_diags_release(&diags);

	/* a symlink loop ends at the depth cap with an error, not a hang */
	snprintf(path, sizeof(path), "%s/loop", tmpdir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/loop/again", tmpdir);
	ck_assert_int_eq(symlink("..", path), 0);
	snprintf(path, sizeof(path), "%s/loop", tmpdir);
	ck_assert_int_eq(config_load(&c, path, &diags, &err), IG_ETOOBIG);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.msg, "nested deeper than"));
	config_diags_release(&diags);
}
END_TEST

START_TEST(load_failures)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char path[600];
	const char *big;
	FILE *f;

	snprintf(path, sizeof(path), "%s/none.yaml", tmpdir);
	ck_assert_int_eq(config_load(&c, path, &diags, &err), IG_ENOTFOUND);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.msg, "none.yaml"));

	big = write_file("big.yaml", "# big\n");
	ck_assert_ptr_nonnull(f = fopen(big, "a"));
	for (size_t i = 0; i <= CONFIG_MAX_FILE_BYTES / 15; i++)
		fputs("# padding pad.\n", f); /* 15 bytes */
	fclose(f);
	ck_assert_int_eq(config_load(&c, big, &diags, &err), IG_EINVALID);
	ck_assert(has_diag(&diags, CONFIG_ERROR, 0, "larger than"));
	config_diags_release(&diags);

	/* an empty file and a file of comments are fine, and hold nothing */
	c = load_ok(write_file("empty.yaml", ""), &diags);
	ck_assert_uint_eq(c->policies_len + c->repositories_len, 0);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* run --kube's path: objects' JSON as documents, named "Kind/ns/name" in every message. */
START_TEST(documents)
{
	static const char repo[] = "{\n  \"apiVersion\": \"image.toolkit.fluxcd.io/v1\",\n"
	                           "  \"kind\": \"ImageRepository\",\n"
	                           "  \"metadata\": {\"name\": \"app\", \"namespace\": \"t\"},\n"
	                           "  \"spec\": {\"image\": \"reg.example/app\"}\n}";
	static const char pol[] = "{\n  \"apiVersion\": \"image.toolkit.fluxcd.io/v1\",\n"
	                          "  \"kind\": \"ImagePolicy\",\n"
	                          "  \"metadata\": {\"name\": \"app\", \"namespace\": \"t\"},\n"
	                          "  \"spec\": {\"imageRepositoryRef\": {\"name\": \"app\"},\n"
	                          "    \"policy\": {\"semver\": {\"range\": \"[bad\"}}}\n}";
	struct config_document docs[] = {{"ImageRepository/t/app", repo, sizeof(repo) - 1},
	                                 {"ImagePolicy/t/app", pol, sizeof(pol) - 1}};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(config_load_documents(&c, docs, 1, "kubernetes api", &diags, &err), 0);
	ck_assert_uint_eq(c->repositories_len, 1);
	ck_assert_str_eq(c->repositories[0].id, "t/app");
	ck_assert_str_eq(c->repositories[0].origin.file, "ImageRepository/t/app");
	ck_assert_uint_eq(c->repositories[0].origin.line, 3);
	config_free(c);
	ck_assert_int_eq(config_load_documents(&c, docs, 2, "kubernetes api", &diags, &err),
	                 IG_EINVALID);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.msg, "kubernetes api"));
	ck_assert_uint_ge(diags.errors, 1);
	ck_assert_str_eq(diags.items[diags.len - 1].file, "ImagePolicy/t/app");
	ck_assert_uint_ge(diags.items[diags.len - 1].line, 2);
	config_diags_release(&diags);
}
END_TEST

START_TEST(secret_path)
{
	struct error err = ERROR_INIT;
	char *p = NULL;

	ck_assert_int_eq(config_secret_path(&p, "/run/secrets", "ghcr-auth", &err), 0);
	ck_assert_str_eq(p, "/run/secrets/ghcr-auth");
	free(p);
	ck_assert_int_eq(config_secret_path(&p, "/run/secrets", "../etc", &err), IG_EINVALID);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(config_secret_path(&p, "/s", "a/b", &err), IG_EINVALID);
	ck_assert_str_eq(config_reflect_name(CONFIG_REFLECT_IF_NOT_PRESENT), "IfNotPresent");
}
END_TEST

/* ---- time syntaxes ---- */

static const struct {
	const char *in;
	int rc;
	long long ns;
} durations[] = {
    {"5m", 0, 300000000000LL},
    {"1h30m", 0, 5400000000000LL},
    {"30s", 0, 30000000000LL},
    {"500ms", 0, 500000000LL},
    {"1.5h", 0, 5400000000000LL},
    {"1m0s", 0, 60000000000LL},
    {"2h45m30.5s", 0, 9930500000000LL},
    {"100us", 0, 100000LL},
    {"100\xc2\xb5s", 0, 100000LL},
    {"7ns", 0, 7LL},
    {"0", 0, 0},
    {"-5m", 0, -300000000000LL},
    {".5s", 0, 500000000LL},
    {"2562047h47m16.854775807s", 0, 9223372036854775807LL},
    {"2562048h", IG_EINVALID, 0},
    {"", IG_EINVALID, 0},
    {"5", IG_EINVALID, 0},
    {"5 m", IG_EINVALID, 0},
    {"5min", IG_EINVALID, 0},
    {"m", IG_EINVALID, 0},
    {"1d", IG_EINVALID, 0},
    {".s", IG_EINVALID, 0},
    {"-", IG_EINVALID, 0},
    {"99999999999999999999h", IG_EINVALID, 0},
};

START_TEST(duration)
{
	struct error err = ERROR_INIT;
	int64_t ns = 42;
	int rc = duration_parse(&ns, durations[_i].in, &err);

	ck_assert_msg(rc == durations[_i].rc, "'%s': rc %d", durations[_i].in, rc);
	if (rc == 0)
		ck_assert_msg(ns == durations[_i].ns, "'%s': %lld", durations[_i].in,
		              (long long)ns);
	else
		ck_assert_ptr_nonnull(strstr(err.msg, "duration '"));
}
END_TEST

static const struct {
	const char *in;
	int rc;
	long long t;
} instants[] = {
    {"2026-12-01T00:00:00Z", 0, 1796083200LL},
    {"2026-12-01t00:00:00z", 0, 1796083200LL},
    {"2026-12-01T02:00:00+02:00", 0, 1796083200LL},
    {"2026-11-30T19:30:00-04:30", 0, 1796083200LL},
    {"2026-12-01T00:00:00.123456Z", 0, 1796083200LL},
    {"2024-02-29T12:00:00Z", 0, 1709208000LL},
    {"2023-02-29T12:00:00Z", IG_EINVALID, 0},
    {"2026-12-01", IG_EINVALID, 0},
    {"2026-12-01 00:00:00Z", IG_EINVALID, 0},
    {"2026-12-01T00:00:00", IG_EINVALID, 0},
    {"2026-12-01T24:00:00Z", IG_EINVALID, 0},
    {"2026-12-01T00:00:00+0200", IG_EINVALID, 0},
    {"2026-12-01T00:00:00.Z", IG_EINVALID, 0},
    {"2026-12-01T00:00:00Zjunk", IG_EINVALID, 0},
    {"tomorrow", IG_EINVALID, 0},
};

START_TEST(rfc3339)
{
	struct error err = ERROR_INIT;
	time_t t = 0;
	int rc = rfc3339_parse(&t, instants[_i].in, &err);

	ck_assert_msg(rc == instants[_i].rc, "'%s': rc %d", instants[_i].in, rc);
	if (rc == 0)
		ck_assert_msg((long long)t == instants[_i].t, "'%s': %lld", instants[_i].in,
		              (long long)t);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("load");
	TCase *tt = tcase_create("time");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, snippet, 0, sizeof(snippets) / sizeof(snippets[0]));
	tcase_add_test(tc, flux_folder);
	tcase_add_test(tc, imageguard_kinds);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, directory_walk);
	tcase_add_test(tc, load_failures);
	tcase_add_test(tc, secret_path);
	tcase_add_test(tc, documents);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(tt, duration, 0, sizeof(durations) / sizeof(durations[0]));
	tcase_add_loop_test(tt, rfc3339, 0, sizeof(instants) / sizeof(instants[0]));
	suite_add_tcase(s, tt);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
