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
#include "imageguard/config/labelsel.h"
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
     {{15, "unknown annotation 'imageguard.io/rolback-until' (ignored) (did you mean "
           "'imageguard.io/rollback-until'?)"}}},
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
    {"policySelector mistakes",
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
     "spec:\n  url: file:///srv/g.git\n---\n"
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\nmetadata:\n"
     "  name: a\nspec:\n  sourceRef: {name: g}\n  policySelector:\n"
     "    matchLabel: {app: web}\n" /* 15 */
     "    matchExpressions:\n"
     "      - key: app\n"
     "        operator: in\n"                               /* 18 */
     "      - {key: tier, operator: In}\n"                  /* 19 */
     "      - {key: tier, operator: Exists, values: [x]}\n" /* 20 */
     "      - {key: -tier, operator: Exists}\n",            /* 21 */
     {{18, "ImageUpdateAutomation 'default/a': 'spec.policySelector.matchExpressions[0]."
           "operator': 'in' is not In, NotIn, Exists or DoesNotExist (did you mean 'In'?)"},
      {19, "ImageUpdateAutomation 'default/a': 'spec.policySelector.matchExpressions[1]."
           "values' must not be empty for operator In"},
      {20, "ImageUpdateAutomation 'default/a': 'spec.policySelector.matchExpressions[2]."
           "values' must be empty for operator Exists"},
      {21, "ImageUpdateAutomation 'default/a': 'spec.policySelector.matchExpressions[3].key': "
           "'-tier' is not a valid label key"}},
     {{15, "ImageUpdateAutomation 'default/a': unknown field 'spec.policySelector.matchLabel' "
           "(ignored) (did you mean 'matchLabels'?)"}}},
    {"bad policy labels",
     REPO POLICY_HEAD "  labels:\n"
                      "    app: 'web app'\n" /* 13 */
                      "    'a/b/c': x\n"     /* 14 */
     POLICY_REF SEMVER_ANY,
     {{13, "ImagePolicy 'default/app': 'metadata.labels.app': 'web app' is not a valid label "
           "value"},
      {14, "ImagePolicy 'default/app': 'metadata.labels': 'a/b/c' is not a valid label key"}},
     {{0}}},
    {"fields imageguard cannot honour are errors (a signing key and a plain refspec are not)",
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
     "spec:\n  url: file:///srv/g.git\n---\n"
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\nmetadata:\n"
     "  name: a\nspec:\n  sourceRef: {name: g}\n  git:\n    checkout:\n      ref:\n"
     "        tag: v1.0.0\n" /* 17 */
     "    commit:\n      author: {name: bot, email: bot@example.com}\n"
     "      signingKey:\n" /* 20 */
     "        secretRef: {name: gpg}\n"
     "    push:\n      branch: auto\n"
     "      refspec: +refs/heads/auto:refs/heads/auto\n" /* 24 */
     "      options: {merge_request.create: ''}\n",      /* 25 */
     {{17, "ImageUpdateAutomation 'default/a': 'spec.git.checkout.ref.tag' is not supported: "
           "imageguard checks out a branch (spec.git.checkout.ref.branch)"},
      {24, "ImageUpdateAutomation 'default/a': 'spec.git.push.refspec': "
           "'+refs/heads/auto:refs/heads/auto' is forced (leading '+'); imageguard never "
           "forces a push"},
      {25, "ImageUpdateAutomation 'default/a': 'spec.git.push.options' is not supported: "
           "libgit2 1.5 cannot send push options"}},
     {{0}}},
    {"refspec and signingKey mistakes",
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
     "spec:\n  url: file:///srv/g.git\n---\n"
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\nmetadata:\n"
     "  name: a\nspec:\n  sourceRef: {name: g}\n  git:\n"
     "    commit:\n"
     "      signingKey: {}\n" /* 16 */
     "    push:\n"
     "      refspec: refs/heads/main\n" /* 18 */
     "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
     "metadata:\n  name: b\nspec:\n  sourceRef: {name: g}\n  git:\n"
     "    push: {refspec: 'HEAD:heads/x'}\n", /* 27 */
     {{16, "ImageUpdateAutomation 'default/a': 'spec.git.commit.signingKey.secretRef' is "
           "required"},
      {18, "ImageUpdateAutomation 'default/a': 'spec.git.push.refspec': 'refs/heads/main' is "
           "not SRC:refs/... (SRC a branch, refs/heads/BRANCH or HEAD)"},
      {27, "ImageUpdateAutomation 'default/b': 'spec.git.push.refspec': 'HEAD:heads/x' is not "
           "SRC:refs/... (SRC a branch, refs/heads/BRANCH or HEAD)"}},
     {{0}}},
    {"signingKey.type: gpg is honoured, ssh and anything else refused naming the field",
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
     "spec:\n  url: file:///srv/g.git\n---\n"
     "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
     "  name: a\nspec:\n  sourceRef: {name: g}\n  git:\n"
     "    commit:\n"
     "      signingKey: {secretRef: {name: k}, type: gpg}\n" /* 16 */
     "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
     "metadata:\n  name: b\nspec:\n  sourceRef: {name: g}\n  git:\n    commit:\n"
     "      signingKey:\n        secretRef: {name: k}\n"
     "        type: ssh\n" /* 28 */
     "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
     "metadata:\n  name: c\nspec:\n  sourceRef: {name: g}\n  git:\n    commit:\n"
     "      signingKey: {secretRef: {name: k}, type: GPG}\n", /* 38 */
     {{28, "ImageUpdateAutomation 'default/b': 'spec.git.commit.signingKey.type': 'ssh' is not "
           "supported: imageguard signs commits with OpenPGP only (type 'gpg', the Secret's "
           "git.asc)"},
      {38, "ImageUpdateAutomation 'default/c': 'spec.git.commit.signingKey.type': 'GPG' is not "
           "a signing key type (Flux's are 'gpg' and 'ssh')"}},
     {{0}}},
    {"a GitRepository checking out a tag needs the automation's own branch",
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
     "spec:\n  url: file:///srv/g.git\n  ref:\n    branch: main\n"
     "    tag: v1.0.0\n" /* 9 */
     "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
     "metadata:\n  name: a\nspec:\n"
     "  sourceRef: {name: g}\n" /* 16 */
     "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
     "metadata:\n  name: b\nspec:\n  sourceRef: {name: g}\n"
     "  git: {checkout: {ref: {branch: main}}}\n",
     {{16, "ImageUpdateAutomation 'default/a': GitRepository 'default/g' checks out "
           "'spec.ref.tag' ("}},
     {{0}}},
    {"providers and service accounts",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n  image: ghcr.io/acme/app\n  provider: generic\n---\n"
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: ecr\nspec:\n  image: 1234.dkr.ecr.eu-west-1.amazonaws.com/app\n"
     "  provider: aws\n"              /* 15 */
     "  serviceAccountName: puller\n" /* 16 */
     "  accessFrom:\n"                /* 17 */
     "    namespaceSelectors: [{matchLabels: {a: b}}]\n---\n"
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
     "spec:\n  url: https://github.com/acme/fleet\n  provider: generic\n---\n"
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: gh\n"
     "spec:\n  url: https://github.com/acme/fleet\n"
     "  provider: github\n", /* 34 */
     /* aws is implemented (src/registry/cloudauth.c): line 15 is no error */
     {{16, "ImageRepository 'default/ecr': 'spec.serviceAccountName' is not supported: it "
           "needs the Kubernetes API (the service account's imagePullSecrets); run with "
           "--kube, or use spec.secretRef or spec.provider in file mode"},
      {34, "GitRepository 'default/gh': 'spec.provider' github needs spec.secretRef"}},
     {{0}}},
    {"unknown providers name the supported ones",
     "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
     "  name: app\nspec:\n  image: ghcr.io/acme/app\n"
     "  provider: oracle\n---\n" /* 7 */
     "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
     "spec:\n  url: https://dev.azure.com/acme/fleet\n"
     "  provider: azure\n", /* 15 */
     {{7, "'spec.provider': 'oracle' is not supported (use one of: generic, aws, gcp, azure)"},
      {15, "'spec.provider': 'azure' is not supported (use one of: generic, github)"}},
     {{0}}},
    {"kinds and versions of our groups that are near misses",
     REPO "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicies\n"    /* 9 */
          "---\napiVersion: image.toolkit.fluxcd.io/v1beta3\nkind: ImagePolicy\n" /* 12 */
          "---\napiVersion: image.toolkit.fluxcd.io/v1beta\nkind: ImagePolicy\n"  /* 15 */
          "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepositry\n"    /* 18 */
          "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\n"
          "---\napiVersion: apps/v1\nkind: ImagePolicy\n",
     {{0}},
     {{9, "kind 'ImagePolicies' is not a kind of image.toolkit.fluxcd.io/v1beta2 (ignored) "
          "(did you mean 'ImagePolicy'?)"},
      {12, "ImagePolicy with apiVersion 'image.toolkit.fluxcd.io/v1beta3' is not supported "
           "(ignored) (did you mean 'image.toolkit.fluxcd.io/v1beta2'?)"},
      {15, "ImagePolicy with apiVersion 'image.toolkit.fluxcd.io/v1beta' is not supported "
           "(ignored) (did you mean 'image.toolkit.fluxcd.io/v1beta2'?)"},
      {18, "kind 'GitRepositry' is not a kind imageguard reads (ignored) (did you mean "
           "'GitRepository'?)"}}},
    {"kinds and versions, continued",
     REPO "apiVersion: source.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"     /* 9 */
          "---\napiVersion: image.toolkit.fluxcd.oi/v1\nkind: ImagePolicy\n" /* 12 */
          "---\napiVersion: imageguard.io/v1alpha2\nkind: ImagePolicy\n"     /* 15 */
          "---\napiVersion: imageguard.io/v1alpha1\nkind: ImagePolcy\n",     /* 18 */
     {{0}},
     {{9, "ImagePolicy is not a kind of 'source.toolkit.fluxcd.io/v1' (ignored; it belongs to "
          "image.toolkit.fluxcd.io/v1)"},
      {12, "ImagePolicy with apiVersion 'image.toolkit.fluxcd.oi/v1' is not supported (ignored) "
           "(did you mean 'image.toolkit.fluxcd.io'?)"},
      {15, "ImagePolicy with apiVersion 'imageguard.io/v1alpha2' is not supported (ignored) "
           "(did you mean 'imageguard.io/v1alpha1'?)"},
      {18, "kind 'ImagePolcy' is not an imageguard kind (ignored) (did you mean "
           "'ImagePolicy'?)"}}},
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
     {{0, "no ImageRepository, ImagePolicy, GitRepository or ImageUpdateAutomation found"}},
     {{0}}},
    {"our group, other version",
     "apiVersion: image.toolkit.fluxcd.io/v1alpha1\nkind: ImagePolicy\nmetadata:\n  name: x\n",
     {{0, "no ImageRepository, ImagePolicy, GitRepository or ImageUpdateAutomation found"}},
     {{2, "apiVersion 'image.toolkit.fluxcd.io/v1alpha1' is not supported"}}},
    {"imageguard unknown kind",
     "apiVersion: imageguard.io/v1alpha1\nkind: Guard\n",
     {{0, "no ImageRepository, ImagePolicy, GitRepository or ImageUpdateAutomation found"}},
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
     "      messageTemplate: '{{ range .Updated.Images }}x{{ end }}'\n", /* 18 */
     {{18, "template uses removed '.Updated' field"}},
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

/* spec.serviceAccountName as run --kube reads it (config_load_options.kube). */
static const struct kube_sa_case {
	const char *name, *field; /* field: the spec lines after image */
	const char *account;      /* what r->service_account holds; NULL: none */
	const char *error;        /* NULL: no diagnostic at all */
} kube_sa_cases[] = {
    {"generic: the account's pull secrets", "  serviceAccountName: puller\n", "puller", NULL},
    {"explicit generic", "  provider: generic\n  serviceAccountName: puller\n", "puller", NULL},
    {"empty is unset, as in Flux", "  serviceAccountName: \"\"\n", NULL, NULL},
    {"a bad name", "  serviceAccountName: Puller_1\n", NULL,
     "'spec.serviceAccountName': 'Puller_1' is not a valid Kubernetes name"},
    {"aws: object-level workload identity", "  provider: aws\n  serviceAccountName: puller\n",
     "puller", NULL},
    {"azure: object-level workload identity", "  provider: azure\n  serviceAccountName: puller\n",
     "puller", NULL},
    {"gcp: object-level workload identity", "  provider: gcp\n  serviceAccountName: puller\n",
     "puller", NULL},
};

START_TEST(kube_service_account)
{
	const struct kube_sa_case *k = &kube_sa_cases[_i];
	struct config_load_options o = {.keep_valid = true, .kube = true};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char yaml[1024];
	const char *path;

	snprintf(yaml, sizeof(yaml),
	         "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"
	         "  name: app\nspec:\n  image: ghcr.io/acme/app\n%s",
	         k->field);
	path = write_file("sa.yaml", yaml);
	config_load_with(&c, path, &o, &diags, &err);
	if (!k->error) {
		ck_assert_msg(diags.len == 0, "%s: %zu diagnostics", k->name, diags.len);
		ck_assert_ptr_nonnull(c);
		ck_assert_uint_eq(c->repositories_len, 1);
		if (k->account)
			ck_assert_str_eq(c->repositories[0].service_account, k->account);
		else
			ck_assert_ptr_null(c->repositories[0].service_account);
	} else {
		size_t line = 6; /* the error is on the field's last line */

		for (const char *f = k->field; *f; f++)
			line += *f == '\n';
		if (diags.errors != 1 || !has_diag(&diags, CONFIG_ERROR, line, k->error))
			dump(&diags);
		ck_assert_msg(diags.errors == 1 && has_diag(&diags, CONFIG_ERROR, line, k->error),
		              "%s: expected '%s'", k->name, k->error);
	}
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

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

/* ---- policySelector: which policies an automation writes ---- */

/* Five policies; their selection by each selector below, in this order. */
#define SEL_POLICY(ns, name, labels)                                                               \
	"---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata:\n"         \
	"  name: " name "\n  namespace: " ns "\n" labels "spec:\n"                                 \
	"  imageRepositoryRef: {name: app, namespace: apps}\n  policy: {alphabetical: {}}\n"
#define SEL_POLICIES                                                                               \
	SEL_POLICY("apps", "a", "  labels: {app: web, tier: front}\n")                             \
	SEL_POLICY("apps", "b", "  labels: {app: api}\n")                                          \
	SEL_POLICY("apps", "c", "")                                                                \
	SEL_POLICY("other", "d", "  labels: {app: web, tier: front}\n")                            \
	SEL_POLICY("apps", "e",                                                                    \
	           "  labels:\n    app: web\n    tier: back\n"                                     \
	           "    image.toolkit.fluxcd.io/automation: fleet\n")

static const struct selector_case {
	const char *name;
	const char *selector; /* the spec.policySelector block, "" for none */
	const char *selected; /* a, b, c, d, e: 1 when selected */
} selector_cases[] = {
    {"absent: the automation's namespace only", "", "11101"},
    {"empty selects everything in the namespace", "  policySelector: {}\n", "11101"},
    {"empty matchLabels", "  policySelector:\n    matchLabels: {}\n", "11101"},
    {"matchLabels one", "  policySelector:\n    matchLabels:\n      app: web\n", "10001"},
    {"matchLabels all must match",
     "  policySelector:\n    matchLabels:\n      app: web\n      tier: front\n", "10000"},
    {"matchLabels with a prefixed key",
     "  policySelector:\n    matchLabels:\n      image.toolkit.fluxcd.io/automation: fleet\n",
     "00001"},
    {"matchLabels value not present", "  policySelector:\n    matchLabels: {app: db}\n", "00000"},
    {"In",
     "  policySelector:\n    matchExpressions:\n      - key: app\n        operator: In\n"
     "        values: [web, api]\n",
     "11001"},
    {"NotIn matches policies without the label",
     "  policySelector:\n    matchExpressions:\n      - {key: app, operator: NotIn, values: "
     "[web]}\n",
     "01100"},
    {"Exists", "  policySelector:\n    matchExpressions:\n      - {key: tier, operator: Exists}\n",
     "10001"},
    {"DoesNotExist",
     "  policySelector:\n    matchExpressions:\n      - {key: tier, operator: DoesNotExist}\n",
     "01100"},
    {"Exists with an empty values list",
     "  policySelector:\n    matchExpressions:\n"
     "      - {key: tier, operator: Exists, values: []}\n",
     "10001"},
    {"matchLabels and matchExpressions together",
     "  policySelector:\n    matchLabels: {app: web}\n    matchExpressions:\n"
     "      - {key: tier, operator: NotIn, values: [front]}\n",
     "00001"},
    {"two expressions",
     "  policySelector:\n    matchExpressions:\n      - {key: app, operator: Exists}\n"
     "      - {key: tier, operator: DoesNotExist}\n",
     "01000"},
};

START_TEST(policy_selector)
{
	const struct selector_case *t = &selector_cases[_i];
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	const struct config_automation *a;
	char yaml[4096];
	const char *names[] = {"apps/a", "apps/b", "apps/c", "other/d", "apps/e"};

	snprintf(yaml, sizeof(yaml), "%s%s%s",
	         "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\nmetadata:\n"
	         "  name: app\n  namespace: apps\nspec:\n  image: ghcr.io/acme/app\n"
	         "  accessFrom: {namespaceSelectors: [{}]}\n" /* other/d may use it */
	         "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"
	         "  name: fleet\n  namespace: apps\nspec:\n  url: file:///srv/fleet.git\n"
	         "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
	         "metadata:\n  name: fleet\n  namespace: apps\nspec:\n  sourceRef: {kind: "
	         "GitRepository, name: fleet}\n  update: {strategy: Setters}\n",
	         t->selector, SEL_POLICIES);
	c = load_ok(write_file("sel.yaml", yaml), &diags);
	ck_assert_msg(diags.len == 0, "%s: %s", t->name, diags.len ? diags.items[0].message : "");
	a = config_find_automation(c, "apps", "fleet");
	ck_assert_ptr_nonnull(a);
	for (size_t i = 0; i < 5; i++) {
		const struct config_policy *p = config_find_policy_id(c, names[i]);

		ck_assert_ptr_nonnull(p);
		ck_assert_msg(config_automation_selects(a, p) == (t->selected[i] == '1'),
		              "%s: policy %s %s", t->name, names[i],
		              t->selected[i] == '1' ? "not selected" : "selected");
	}
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* ---- one invalid object stops only itself ---- */

#define PARTIAL_YAML                                                                               \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"               \
	"  name: good\nspec:\n  image: ghcr.io/acme/good\n---\n"                                   \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"               \
	"  name: bad\nspec:\n  image: ghcr.io/acme/bad:latest\n---\n"                              \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: p-good\nspec:\n  imageRepositoryRef: {name: good}\n"                              \
	"  policy: {semver: {range: '>=1.0.0'}}\n---\n"                                            \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: p-own\nspec:\n  imageRepositoryRef: {name: good}\n"                               \
	"  policy: {semver: {range: '>=>1'}}\n---\n"                                               \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: p-dep\nspec:\n  imageRepositoryRef: {name: bad}\n"                                \
	"  policy: {semver: {range: '>=1.0.0'}}\n---\n"                                            \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: p-missing\nspec:\n  imageRepositoryRef: {name: nope}\n"                           \
	"  policy: {semver: {range: '>=1.0.0'}}\n---\n"                                            \
	"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"                \
	"  name: g-good\nspec:\n  url: file:///srv/good.git\n---\n"                                \
	"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"                \
	"  name: g-bad\nspec:\n  url: ftp://example.com/x\n---\n"                                  \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"         \
	"  name: a-good\nspec:\n  sourceRef: {name: g-good}\n---\n"                                \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"         \
	"  name: a-dep\nspec:\n  sourceRef: {name: g-bad}\n---\n"                                  \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: dup\nspec:\n  imageRepositoryRef: {name: good}\n"                                 \
	"  policy: {semver: {range: '>=1.0.0'}}\n---\n"                                            \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: dup\nspec:\n  imageRepositoryRef: {name: good}\n"                                 \
	"  policy: {semver: {range: '>=1.0.0'}}\n"

START_TEST(keep_valid)
{
	struct config_diags strict = CONFIG_DIAGS_INIT, diags = CONFIG_DIAGS_INIT;
	struct config_load_options o = {.keep_valid = true};
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	const struct config_invalid *v;
	const char *path = write_file("partial.yaml", PARTIAL_YAML);
	char want[1024];

	/* without keep_valid: refused, every error listed */
	ck_assert_int_eq(config_load(&c, path, &strict, &err), IG_EINVALID);
	ck_assert_ptr_null(c);
	/* with it: the same errors, and the valid objects */
	ck_assert_msg(config_load_with(&c, path, &o, &diags, &err) == 0, "%s", err.msg);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(diags.errors, strict.errors);
	ck_assert_uint_eq(diags.errors, 5); /* image tag, range, not found, url, duplicate */
	ck_assert_uint_eq(c->repositories_len, 1);
	ck_assert_str_eq(c->repositories[0].id, "default/good");
	ck_assert_uint_eq(c->policies_len, 1);
	ck_assert_str_eq(c->policies[0].id, "default/p-good");
	ck_assert_ptr_eq(c->policies[0].repository, &c->repositories[0]);
	ck_assert_ptr_nonnull(c->policies[0].policy);
	ck_assert_uint_eq(c->git_sources_len, 1);
	ck_assert_uint_eq(c->automations_len, 1);
	ck_assert_str_eq(c->automations[0].id, "default/a-good");
	ck_assert_ptr_eq(c->automations[0].source, &c->git_sources[0]);
	ck_assert_str_eq(c->automations[0].checkout_branch, "master");
	ck_assert_ptr_null(config_find_policy(c, "default", "p-dep"));

	ck_assert_uint_eq(c->invalid_len, 8);
	v = config_find_invalid(c, CONFIG_KIND_REPOSITORY, "default", "bad");
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v->id, "default/bad");
	ck_assert_ptr_eq(v->file, c->files.items[0]);
	ck_assert_uint_eq(v->line, 9);
	snprintf(want, sizeof(want),
	         "%s:13: ImageRepository 'default/bad': 'spec.image': image "
	         "'ghcr.io/acme/bad:latest': a tag is not allowed",
	         path);
	ck_assert_msg(!strncmp(v->message, want, strlen(want)), "%s", v->message);

	v = config_find_invalid(c, CONFIG_KIND_POLICY, "default", "p-dep");
	ck_assert_ptr_nonnull(v);
	snprintf(want, sizeof(want),
	         "%s:32: ImagePolicy 'default/p-dep': ImageRepository 'default/bad' is invalid "
	         "(%s:13: ImageRepository 'default/bad': 'spec.image': ",
	         path, path);
	ck_assert_msg(!strncmp(v->message, want, strlen(want)), "%s", v->message);

	v = config_find_invalid(c, CONFIG_KIND_POLICY, "default", "p-own");
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(v->line, 24);
	ck_assert_ptr_nonnull(strstr(v->message, "'spec.policy': semver range"));

	v = config_find_invalid(c, CONFIG_KIND_POLICY, "default", "p-missing");
	snprintf(want, sizeof(want),
	         "%s:44: ImagePolicy 'default/p-missing': 'spec.imageRepositoryRef': "
	         "ImageRepository 'default/nope' not found",
	         path);
	ck_assert_str_eq(v->message, want);

	v = config_find_invalid(c, CONFIG_KIND_AUTOMATION, "default", "a-dep");
	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(strstr(v->message, "ImageUpdateAutomation 'default/a-dep': "
	                                         "GitRepository 'default/g-bad' is invalid ("));
	ck_assert_ptr_nonnull(config_find_invalid(c, CONFIG_KIND_GIT_SOURCE, "default", "g-bad"));
	ck_assert_ptr_eq(config_find_invalid_in(c, CONFIG_KIND_AUTOMATION, "default"), v);
	ck_assert_ptr_null(config_find_invalid_in(c, CONFIG_KIND_AUTOMATION, "other"));
	ck_assert_ptr_eq(config_find_invalid_id(c, CONFIG_KIND_AUTOMATION, "default/a-dep"), v);
	ck_assert_ptr_null(config_find_invalid_id(c, CONFIG_KIND_POLICY, "default/a-dep"));
	ck_assert_ptr_null(config_find_invalid(c, CONFIG_KIND_POLICY, "default", "p-good"));

	/* both objects of a duplicated name: which one is meant cannot be told */
	v = config_find_invalid(c, CONFIG_KIND_POLICY, "default", "dup");
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(v->line, 84);
	snprintf(want, sizeof(want), "%s:84: ImagePolicy 'default/dup' is already defined at %s:76",
	         path, path);
	ck_assert_str_eq(v->message, want);
	v = NULL;
	for (size_t i = 0; i < c->invalid_len; i++)
		if (c->invalid[i].line == 76)
			v = &c->invalid[i];
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(config_kind_name(v->kind), "ImagePolicy");
	snprintf(want, sizeof(want), "%s:76: ImagePolicy 'default/dup' is defined again at %s:84",
	         path, path);
	ck_assert_str_eq(v->message, want);
	config_free(c);
	config_diags_release(&diags);
	config_diags_release(&strict);
}
END_TEST

/* Invalid objects ahead of valid ones: the valid ones move down when the invalid leave, and
 * every reference is resolved to where they are now (not to their position while read). */
#define MOVED_YAML                                                                                 \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"               \
	"  name: bad\nspec:\n  image: ghcr.io/acme/bad:latest\n---\n"                              \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"               \
	"  name: r1\nspec:\n  image: ghcr.io/acme/r1\n---\n"                                       \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"               \
	"  name: r2\nspec:\n  image: ghcr.io/acme/r2\n  exclusionList: ['^a$', '^b$']\n---\n"      \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: p-bad\nspec:\n  imageRepositoryRef: {name: r1}\n"                                 \
	"  policy: {semver: {range: '>=>1'}}\n---\n"                                               \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: p2\nspec:\n  imageRepositoryRef: {name: r2}\n"                                    \
	"  policy: {semver: {range: '>=1.0.0'}}\n---\n"                                            \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n"                   \
	"  name: p1\nspec:\n  imageRepositoryRef: {name: r1}\n"                                    \
	"  policy: {semver: {range: '>=1.0.0'}}\n---\n"                                            \
	"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"                \
	"  name: g-bad\nspec:\n  url: ftp://example.com/x\n---\n"                                  \
	"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"                \
	"  name: g1\nspec:\n  url: file:///srv/g1.git\n  ref: {branch: trunk}\n---\n"              \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"         \
	"  name: a1\nspec:\n  sourceRef: {name: g1}\n"

/* Every way an object can be invalid, with the Ready reason Flux's controllers give it
 * (image-automation-controller api/v1 and its reconciler, image-reflector-controller's
 * ImagePolicy reconciler), which run --kube writes and posts as a Warning Event. */
static const char REASONS_YAML[] =
    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
    "spec:\n  url: file:///srv/g.git\n---\n"
    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: gs\n"
    "spec:\n  url: https://git.example/g.git\n  secretRef: {name: gone}\n---\n"
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: r\n"
    "spec:\n  image: reg.example/app\n---\n"
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: rs\n"
    "spec:\n  image: reg.example/app\n  secretRef: {name: gone}\n---\n"
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: p-range\n"
    "spec:\n  imageRepositoryRef: {name: r}\n  policy: {semver: {range: 'not a range'}}\n---\n"
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: p-missing\n"
    "spec:\n  imageRepositoryRef: {name: nowhere}\n  policy: {semver: {range: '>=1'}}\n---\n"
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: p-secret\n"
    "spec:\n  imageRepositoryRef: {name: rs}\n  policy: {semver: {range: '>=1'}}\n"
    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
    "metadata:\n  name: a-template\nspec:\n  sourceRef: {kind: GitRepository, name: g}\n"
    "  git:\n    commit:\n      messageTemplate: '{{ nosuchfunction }}'\n"
    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
    "metadata:\n  name: a-strategy\nspec:\n  sourceRef: {kind: GitRepository, name: g}\n"
    "  update: {strategy: Regex}\n"
    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
    "metadata:\n  name: a-nosource\nspec:\n  sourceRef: {kind: GitRepository, name: nowhere}\n"
    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
    "metadata:\n  name: a-secret\nspec:\n  sourceRef: {kind: GitRepository, name: gs}\n"
    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
    "metadata:\n  name: a-signing\nspec:\n  sourceRef: {kind: GitRepository, name: g}\n"
    "  git:\n    commit:\n      signingKey: {secretRef: {name: gone}}\n"
    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
    "metadata:\n  name: a-ssh\nspec:\n  sourceRef: {kind: GitRepository, name: g}\n"
    "  git:\n    commit:\n      signingKey: {secretRef: {name: gone}, type: ssh}\n"
    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
    "  name: a-kind\nspec:\n  sourceRef: {kind: OCIRepository, name: g}\n";

START_TEST(invalid_reasons)
{
	static const struct {
		enum config_kind kind;
		const char *name, *reason, *says;
	} want[] = {
	    {CONFIG_KIND_POLICY, "p-range", "InvalidPolicy", "semver range"},
	    {CONFIG_KIND_POLICY, "p-missing", "DependencyNotReady", "'default/nowhere' not found"},
	    {CONFIG_KIND_POLICY, "p-secret", "DependencyNotReady", "secret 'gone'"},
	    {CONFIG_KIND_AUTOMATION, "a-template", "GitOperationFailed", "messageTemplate"},
	    {CONFIG_KIND_AUTOMATION, "a-strategy", "InvalidUpdateStrategy", "'Regex'"},
	    {CONFIG_KIND_AUTOMATION, "a-nosource", "SourceManagerFailed",
	     "GitRepository 'default/nowhere' not found"},
	    {CONFIG_KIND_AUTOMATION, "a-secret", "SourceManagerFailed", "secret 'gone'"},
	    {CONFIG_KIND_AUTOMATION, "a-signing", "SourceManagerFailed", "signingKey"},
	    {CONFIG_KIND_AUTOMATION, "a-ssh", "InvalidConfig", "signingKey.type"},
	    {CONFIG_KIND_AUTOMATION, "a-kind", "InvalidSourceConfiguration", "OCIRepository"},
	};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config_load_options o = {.keep_valid = true, .check_secrets = true};
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char sdir[600];

	snprintf(sdir, sizeof(sdir), "%s/no-secrets", tmpdir);
	mkdir(sdir, 0700);
	o.secrets_dir = sdir;
	ck_assert_msg(
	    config_load_with(&c, write_file("reasons.yaml", REASONS_YAML), &o, &diags, &err) == 0,
	    "%s", err.msg);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct config_invalid *v =
		    config_find_invalid(c, want[i].kind, "default", want[i].name);

		ck_assert_msg(v, "%s: not invalid", want[i].name);
		ck_assert_msg(v->reason && !strcmp(v->reason, want[i].reason), "%s: reason %s",
		              want[i].name, v->reason ? v->reason : "(none)");
		ck_assert_msg(strstr(v->message, want[i].says), "%s: %s", want[i].name, v->message);
	}
	ck_assert_uint_eq(c->policies_len, 0);
	ck_assert_uint_eq(c->automations_len, 0);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

START_TEST(keep_valid_moved)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config_load_options o = {.keep_valid = true};
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	const char *path = write_file("moved.yaml", MOVED_YAML);

	ck_assert_msg(config_load_with(&c, path, &o, &diags, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(diags.errors, 3); /* the tag, the range, the url */
	ck_assert_uint_eq(c->repositories_len, 2);
	ck_assert_str_eq(c->repositories[0].id, "default/r1");
	ck_assert_str_eq(c->repositories[1].id, "default/r2");
	ck_assert_uint_eq(c->repositories[0].exclusion.len, 1);
	ck_assert_str_eq(c->repositories[0].exclusion.items[0], "^.*\\.sig$");
	ck_assert_ptr_null(c->repositories[0].exclusion.items[1]);
	ck_assert_uint_eq(c->repositories[1].exclusion.len, 2);
	ck_assert_str_eq(c->repositories[1].exclusion.items[1], "^b$");
	ck_assert_ptr_null(c->repositories[1].exclusion.items[2]);
	ck_assert_uint_eq(c->policies_len, 2);
	ck_assert_str_eq(c->policies[0].id, "default/p2");
	ck_assert_ptr_eq(c->policies[0].repository, &c->repositories[1]);
	ck_assert_str_eq(c->policies[1].id, "default/p1");
	ck_assert_ptr_eq(c->policies[1].repository, &c->repositories[0]);
	ck_assert_ptr_eq(config_find_policy(c, "default", "p1"), &c->policies[1]);
	ck_assert_ptr_eq(config_find_repository(c, "default", "r2"), &c->repositories[1]);
	ck_assert_ptr_null(config_find_policy(c, "default", "p-bad"));
	ck_assert_uint_eq(c->git_sources_len, 1);
	ck_assert_uint_eq(c->automations_len, 1);
	ck_assert_ptr_eq(c->automations[0].source, &c->git_sources[0]);
	ck_assert_str_eq(c->automations[0].checkout_branch, "trunk");
	ck_assert_str_eq(c->automations[0].push_branch, "trunk");
	ck_assert_str_eq(c->automations[0].update_path, "./");
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* --watch-label-selector in file mode: objects of every kind whose metadata.labels do not
 * match are left out as the API server leaves them out of a list; none matching is an empty
 * config, not the "nothing found" error. */
START_TEST(label_selector_filters)
{
	static const char yaml[] =
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
	    "metadata:\n  name: main\nspec:\n  image: ghcr.io/acme/main\n"
	    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
	    "metadata:\n  name: one\n  labels: {sharding.fluxcd.io/key: shard1, app: x}\n"
	    "spec:\n  image: ghcr.io/acme/one\n"
	    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
	    "metadata:\n  name: one\n  labels: {sharding.fluxcd.io/key: shard1, app: x}\n"
	    "spec:\n  imageRepositoryRef: {name: one}\n  policy: {semver: {range: '>=1.0.0'}}\n"
	    "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
	    "metadata:\n  name: main\nspec:\n  interval: 1m\n  url: https://h/x\n";
	static const struct {
		const char *sel;
		size_t repos, policies, sources;
	} cases[] = {
	    {"!sharding.fluxcd.io/key", 1, 0, 1},
	    {"sharding.fluxcd.io/key=shard1", 1, 1, 0},
	    {"sharding.fluxcd.io/key in (shard1),app", 1, 1, 0},
	    {"app notin (x)", 1, 0, 1},
	    {"", 2, 1, 1},
	    {"sharding.fluxcd.io/key=none", 0, 0, 0},
	};
	const char *path = write_file("shards.yaml", yaml);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config_diags diags = CONFIG_DIAGS_INIT;
		struct config_load_options o = {.keep_valid = true};
		struct labelsel *sel = NULL;
		struct config *c = NULL;
		struct error err = ERROR_INIT;

		ck_assert_int_eq(labelsel_parse(&sel, cases[i].sel, &err), 0);
		o.selector = sel;
		ck_assert_msg(config_load_with(&c, path, &o, &diags, &err) == 0, "'%s': %s",
		              cases[i].sel, err.msg);
		ck_assert_msg(diags.errors == 0, "'%s': %s", cases[i].sel,
		              diags.len ? diags.items[0].message : "");
		ck_assert_uint_eq(c->repositories_len, cases[i].repos);
		ck_assert_uint_eq(c->policies_len, cases[i].policies);
		ck_assert_uint_eq(c->git_sources_len, cases[i].sources);
		config_free(c);
		config_diags_release(&diags);
		labelsel_free(sel);
	}
}
END_TEST

START_TEST(keep_valid_files)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config_load_options o = {.keep_valid = true};
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char dir[600];

	write_file("cfg/a.yaml", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
	                         "metadata:\n  name: app\nspec:\n  image: ghcr.io/acme/app\n");
	write_file("cfg/b.yaml", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
	                         "metadata: [\n");
	snprintf(dir, sizeof(dir), "%s/cfg", tmpdir);
	ck_assert_msg(config_load_with(&c, dir, &o, &diags, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(diags.errors, 1);
	ck_assert_uint_eq(c->repositories_len, 1);
	ck_assert_uint_eq(c->invalid_len, 1);
	ck_assert_int_eq(c->invalid[0].kind, CONFIG_KIND_FILE);
	ck_assert_ptr_null(c->invalid[0].id);
	ck_assert_ptr_nonnull(strstr(c->invalid[0].message, "b.yaml:4: invalid YAML"));
	config_free(c);
	config_diags_release(&diags);

	/* nothing valid at all, and no object: still an error */
	write_file("cfg/a.yaml", "# gone\n");
	ck_assert_int_eq(config_load_with(&c, dir, &o, &diags, &err), IG_EINVALID);
	ck_assert_ptr_null(c);
	config_diags_release(&diags);
}
END_TEST

/* ---- secrets named by the configuration ---- */

enum secret_object { SEC_REGISTRY, SEC_CA, SEC_SSH, SEC_HTTP };

static const char *const secret_yaml[] = {
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: r\n"
    "spec:\n  image: ghcr.io/acme/app\n  secretRef:\n    name: s\n",
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: r\n"
    "spec:\n  image: ghcr.io/acme/app\n  certSecretRef:\n    name: s\n",
    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
    "spec:\n  url: ssh://git@example.com/fleet\n  secretRef:\n    name: s\n",
    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
    "spec:\n  url: https://example.com/fleet\n  secretRef:\n    name: s\n",
};

static const char *const secret_subject[] = {
    "ImageRepository 'default/r': 'spec.secretRef'",
    "ImageRepository 'default/r': 'spec.certSecretRef'",
    "GitRepository 'default/g': 'spec.secretRef'",
    "GitRepository 'default/g': 'spec.secretRef'",
};

#define AUTH_ALICE "YWxpY2U6c2VjcmV0" /* alice:secret */

static const struct secret_case {
	enum secret_object object;
	const char *files[3][2]; /* name, content */
	const char *problem;     /* NULL: usable */
} secret_cases[] = {
    {SEC_REGISTRY,
     {{0}},
     "no '.dockerconfigjson', 'username'/'password' or 'bearerToken' (for anonymous access, "
     "remove the secretRef)"},
    {SEC_REGISTRY, {{"username", "alice\n"}}, "'username' without 'password'"},
    {SEC_REGISTRY, {{"username", "alice\n"}, {"password", "secret\n"}}, NULL},
    {SEC_REGISTRY, {{"bearerToken", "tok\n"}}, NULL},
    {SEC_REGISTRY,
     {{".dockerconfigjson",
       "{\"auths\": {\"https://ghcr.io/v2/\": {\"auth\": \"" AUTH_ALICE "\"}}}"}},
     NULL},
    {SEC_REGISTRY, {{".dockerconfigjson", "{\"auths\": "}}, "'.dockerconfigjson' is not JSON ("},
    {SEC_REGISTRY,
     {{".dockerconfigjson", "{\"x\": 1}"}},
     "'.dockerconfigjson' has no \"auths\" object"},
    {SEC_REGISTRY,
     {{".dockerconfigjson", "{\"auths\": {\"docker.io\": {\"auth\": \"" AUTH_ALICE "\"}}}"}},
     "'.dockerconfigjson' has no credentials for registry 'ghcr.io'"},
    {SEC_REGISTRY,
     {{".dockerconfigjson", "{\"auths\": {\"ghcr.io\": {}}}"}},
     "'.dockerconfigjson' has no credentials for registry 'ghcr.io'"},
    {SEC_REGISTRY,
     {{".dockerconfigjson", "{\"auths\": {\"ghcr.io\": {\"auth\": \"bm9jb2xvbg==\"}}}"}},
     "'.dockerconfigjson': auths.\"ghcr.io\".auth is not base64 of user:password"},
    {SEC_REGISTRY,
     {{".dockerconfigjson", "{\"auths\": {\"ghcr.io\": {\"auth\": \"not base64!\"}}}"}},
     "'.dockerconfigjson': auths.\"ghcr.io\".auth is not base64 of user:password"},
    {SEC_REGISTRY,
     {{".dockerconfigjson", "{\"auths\": {\"ghcr.io\": {\"auth\": \"YTpi\"}}}"}},
     NULL},
    {SEC_REGISTRY,
     {{".dockerconfigjson", "{\"auths\": {\"ghcr.io\": {\"auth\": \"dTpwdw==\"}}}"}},
     NULL},
    {SEC_CA, {{0}}, "no 'ca.crt'"},
    {SEC_CA, {{"ca.crt", "PEM\n"}}, NULL},
    {SEC_CA,
     {{"ca.crt", "PEM\n"}, {"tls.crt", "PEM\n"}, {"tls.key", "PEM\n"}},
     "'tls.crt': client certificates are not supported"},
    {SEC_SSH, {{0}}, "no 'identity' (the SSH private key)"},
    {SEC_SSH,
     {{"identity", "KEY\n"}},
     "no 'known_hosts' (an SSH host key is never trusted unseen)"},
    {SEC_SSH, {{"identity", "KEY\n"}, {"known_hosts", "example.com ssh-ed25519 AAAA\n"}}, NULL},
    {SEC_HTTP, {{0}}, "no 'username'/'password', 'bearerToken' or 'ca.crt'"},
    {SEC_HTTP, {{"bearerToken", "tok\n"}}, NULL},
    {SEC_HTTP, {{"ca.crt", "PEM\n"}}, NULL},
};

/* Loads secret_yaml[obj] with keep_valid and check_secrets against secrets_dir. */
static struct config *load_secrets(enum secret_object obj, const char *secrets_dir,
                                   struct config_diags *diags)
{
	struct config_load_options o = {true,  true, secrets_dir, NULL, false,
	                                false, 0,    false,       NULL, NULL};
	struct config *c = NULL;
	struct error err = ERROR_INIT;

	ck_assert_msg(
	    config_load_with(&c, write_file("s.yaml", secret_yaml[obj]), &o, diags, &err) == 0,
	    "%s", err.msg);
	return c;
}

START_TEST(secret_folders)
{
	const struct secret_case *t = &secret_cases[_i];
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	char sdir[600], name[700], want[1400];

	for (size_t i = 0; i < 3 && t->files[i][0]; i++) {
		snprintf(name, sizeof(name), "secrets/s/%s", t->files[i][0]);
		write_file(name, t->files[i][1]);
	}
	snprintf(sdir, sizeof(sdir), "%s/secrets", tmpdir);
	mkdir(sdir, 0755);
	snprintf(name, sizeof(name), "%s/s", sdir);
	mkdir(name, 0755);
	c = load_secrets(t->object, sdir, &diags);
	if (!t->problem) {
		if (diags.len)
			dump(&diags);
		ck_assert_uint_eq(diags.len, 0);
		ck_assert_uint_eq(c->invalid_len, 0);
	} else {
		snprintf(want, sizeof(want), "%s: secret 's' ('%s/s'): %s",
		         secret_subject[t->object], sdir, t->problem);
		ck_assert_uint_eq(diags.errors, 1);
		ck_assert_msg(!strncmp(diags.items[0].message, want, strlen(want)), "%s\nwant %s",
		              diags.items[0].message, want);
		ck_assert_uint_eq(diags.items[0].line, 7); /* the secretRef line */
		ck_assert_uint_eq(c->invalid_len, 1);
		ck_assert_uint_eq(c->repositories_len + c->git_sources_len, 0);
		ck_assert(strstr(diags.items[0].message, "secret\n") == NULL);
	}
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

START_TEST(secrets_missing)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	char sdir[600], want[1024];

	/* no --secrets-dir: never the current directory, never anonymous */
	c = load_secrets(SEC_REGISTRY, NULL, &diags);
	ck_assert_uint_eq(diags.errors, 1);
	ck_assert_str_eq(diags.items[0].message,
	                 "ImageRepository 'default/r': 'spec.secretRef': secret 's' needs "
	                 "--secrets-dir (its keys are read from the folder <secrets-dir>/s)");
	ck_assert_uint_eq(c->repositories_len, 0);
	ck_assert_str_eq(config_find_invalid(c, CONFIG_KIND_REPOSITORY, "default", "r")->id,
	                 "default/r");
	config_free(c);
	config_diags_release(&diags);

	/* a folder that is not there: the secret and its path */
	snprintf(sdir, sizeof(sdir), "%s/nosecrets", tmpdir);
	mkdir(sdir, 0755);
	c = load_secrets(SEC_SSH, sdir, &diags);
	snprintf(want, sizeof(want),
	         "GitRepository 'default/g': 'spec.secretRef': secret 's' not found: '%s/s' is not "
	         "a folder",
	         sdir);
	ck_assert_uint_eq(diags.errors, 1);
	ck_assert_str_eq(diags.items[0].message, want);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* run --kube: kubesource rewrites each secretRef to "<ns>.<name>", the Secret's folder in its
 * private secrets dir; a missing or unusable Secret is named as Kubernetes names it, ns/name,
 * never by that folder. */
static const char api_yaml[] =
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: r\n"
    "  namespace: team-a\nspec:\n  image: ghcr.io/acme/app\n"
    "  secretRef: {name: team-a.regcred}\n"
    "  certSecretRef: {name: team-a.regca}\n---\n"
    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
    "  namespace: team-a\nspec:\n  url: https://example.com/fleet\n"
    "  secretRef: {name: team-a.git.cred}\n---\n"
    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: open\n"
    "  namespace: team-a\nspec:\n  url: file:///srv/g.git\n---\n"
    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
    "  name: a\n  namespace: team-a\nspec:\n  sourceRef: {name: open}\n  git:\n"
    "    commit:\n      author: {name: bot, email: bot@example.com}\n"
    "      signingKey:\n        secretRef: {name: team-a.gpg}\n"
    "    push: {branch: auto}\n";

#define NOT_IN_API " not found in the Kubernetes API (or not readable: see the kube.secret warning)"

START_TEST(secrets_from_api)
{
	static const char *const want[] = {
	    "ImageRepository 'team-a/r': 'spec.secretRef': secret 'team-a/regcred'" NOT_IN_API,
	    "ImageRepository 'team-a/r': 'spec.certSecretRef': secret 'team-a/regca': no 'ca.crt'",
	    "GitRepository 'team-a/g': 'spec.secretRef': secret 'team-a/git.cred'" NOT_IN_API,
	    "ImageUpdateAutomation 'team-a/a': 'spec.git.commit.signingKey.secretRef': secret "
	    "'team-a/gpg'" NOT_IN_API,
	};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config_load_options o = {true, true, NULL, NULL, true, true, 0, false, NULL, NULL};
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char sdir[600], dir[700], file_mode[1400];
	const char *path = write_file("api.yaml", api_yaml);

	snprintf(sdir, sizeof(sdir), "%s/kube-secrets", tmpdir);
	mkdir(sdir, 0700);
	snprintf(dir, sizeof(dir), "%s/team-a.regca", sdir); /* there, but no ca.crt */
	mkdir(dir, 0700);
	o.secrets_dir = sdir;
	ck_assert_int_eq(config_load_with(&c, path, &o, &diags, &err), 0);
	if (diags.errors != 4)
		dump(&diags);
	ck_assert_uint_eq(diags.errors, 4);
	for (size_t i = 0; i < 4; i++) {
		ck_assert_str_eq(diags.items[i].message, want[i]);
		ck_assert_ptr_null(strstr(diags.items[i].message, sdir));
	}
	ck_assert_uint_eq(c->repositories_len + c->automations_len, 0);
	ck_assert_uint_eq(c->git_sources_len, 1); /* "open", which names no secret */
	config_free(c);
	config_diags_release(&diags);

	/* check-config --kube (kube, a --secrets-dir of the user's): the folder as in file mode */
	o.secrets_from_api = false;
	ck_assert_int_eq(config_load_with(&c, path, &o, &diags, &err), 0);
	snprintf(file_mode, sizeof(file_mode),
	         "ImageRepository 'team-a/r': 'spec.secretRef': secret 'team-a.regcred' not found: "
	         "'%s/team-a.regcred' is not a folder",
	         sdir);
	ck_assert_uint_eq(diags.errors, 4);
	ck_assert_str_eq(diags.items[0].message, file_mode);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* --shards N > 1: an automation pushing a refspec to a branch beside its push branch writes
 * two (URL, branch) pairs, of which another shard could own the second: that automation is
 * an error, the others run; one branch (a refspec alone, or to the push branch itself) is
 * fine; without --shards (or with one shard) nothing changes. */
START_TEST(shards_refuse_a_second_branch)
{
	static const unsigned shards[] = {0, 1, 2};
	const char *path = write_file(
	    "shards.yaml",
	    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
	    "spec:\n  url: file:///srv/g.git\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\nmetadata:\n"
	    "  name: two\nspec:\n  sourceRef: {name: g}\n  git:\n"
	    "    push:\n      branch: auto\n"
	    "      refspec: refs/heads/auto:refs/heads/release\n" /* 17 */
	    "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
	    "metadata:\n  name: same\nspec:\n  sourceRef: {name: g}\n  git:\n"
	    "    push: {branch: auto, refspec: 'HEAD:refs/heads/auto'}\n"
	    "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
	    "metadata:\n  name: alone\nspec:\n  sourceRef: {name: g}\n  git:\n"
	    "    push: {refspec: 'HEAD:refs/heads/release'}\n");

	for (size_t k = 0; k < sizeof(shards) / sizeof(shards[0]); k++) {
		struct config_diags diags = CONFIG_DIAGS_INIT;
		struct config_load_options o = {.keep_valid = true, .shards = shards[k]};
		struct config *c = NULL;
		struct error err = ERROR_INIT;

		ck_assert_int_eq(config_load_with(&c, path, &o, &diags, &err), 0);
		if (shards[k] < 2) {
			ck_assert_uint_eq(diags.errors, 0);
			ck_assert_uint_eq(c->automations_len, 3);
		} else {
			ck_assert_uint_eq(diags.errors, 1);
			ck_assert_uint_eq(diags.items[0].line, 17);
			ck_assert_str_eq(
			    diags.items[0].message,
			    "ImageUpdateAutomation 'default/two': 'spec.git.push.refspec': "
			    "'refs/heads/auto:refs/heads/release' pushes to a second "
			    "branch beside spec.git.push.branch 'auto'; under --shards an "
			    "automation writes one branch (a shard owns one Git URL and "
			    "branch pair)");
			ck_assert_uint_eq(c->automations_len, 2);
			ck_assert_ptr_nonnull(
			    config_find_invalid(c, CONFIG_KIND_AUTOMATION, "default", "two"));
		}
		config_free(c);
		config_diags_release(&diags);
	}
}
END_TEST

/* An object whose secret is missing takes its dependents with it; the others run. */
START_TEST(secrets_dependents)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config_load_options o = {true, true, NULL, NULL, false, false, 0, false, NULL, NULL};
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	const char *path = write_file(
	    "dep.yaml",
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: r\n"
	    "spec:\n  image: ghcr.io/acme/app\n  secretRef: {name: s}\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"
	    "  name: open\nspec:\n  image: ghcr.io/acme/open\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: p\n"
	    "spec:\n  imageRepositoryRef: {name: r}\n  policy: {alphabetical: {}}\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: q\n"
	    "spec:\n  imageRepositoryRef: {name: open}\n  policy: {alphabetical: {}}\n");

	ck_assert_int_eq(config_load_with(&c, path, &o, &diags, &err), 0);
	ck_assert_uint_eq(diags.errors, 1);
	ck_assert_uint_eq(c->policies_len, 1);
	ck_assert_str_eq(c->policies[0].id, "default/q");
	ck_assert_ptr_nonnull(
	    strstr(config_find_invalid(c, CONFIG_KIND_POLICY, "default", "p")->message,
	           "ImagePolicy 'default/p': ImageRepository 'default/r' is "
	           "invalid ("));
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

START_TEST(update_path_message)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct error err = ERROR_INIT;
	struct config *c;
	char want[1024];
	const char *path = write_file(
	    "up.yaml",
	    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
	    "spec:\n  url: file:///srv/g.git\n  ref: {branch: main}\n---\n"
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
	    "  name: a\nspec:\n  sourceRef: {name: g}\n  update:\n    strategy: Setters\n"
	    "    path: ./clusters/prod\n" /* 17 */
	    "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n"
	    "  name: b\nspec:\n  sourceRef: {name: g}\n");

	c = load_ok(path, &diags);
	ck_assert_int_eq(
	    config_automation_path_error(&err, config_find_automation(c, "default", "a")),
	    IG_ENOTFOUND);
	snprintf(want, sizeof(want),
	         "%s:17: ImageUpdateAutomation 'default/a': 'spec.update.path': './clusters/prod' "
	         "does not exist on branch 'main'",
	         path);
	ck_assert_str_eq(err.msg, want);
	/* absent: the automation's own line */
	error_clear(&err);
	config_automation_path_error(&err, config_find_automation(c, "default", "b"));
	snprintf(
	    want, sizeof(want),
	    "%s:20: ImageUpdateAutomation 'default/b': 'spec.update.path': './' does not exist "
	    "on branch 'main'",
	    path);
	ck_assert_str_eq(err.msg, want);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* ---- whole configurations ---- */

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
	/* the range (">=1.0.0 <2.0.0") narrows the pick, not the order: 1.5.0 is behind 3.0.0 */
	ck_assert_int_eq(policy_compare(p->policy, "3.0.0", "1.5.0"), POLICY_INCOMPARABLE);
	ck_assert_int_eq(policy_verdict(p->policy, "3.0.0", "1.5.0"), POLICY_BACKWARD);
	ck_assert_int_eq(policy_verdict(p->policy, "3.0.0-rc.1", "1.5.0"), POLICY_BACKWARD);
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
	    "  name: app\nspec:\n  image: nginx\n  exclusionList: []\n  suspend: true\n"
	    "  accessFrom: {namespaceSelectors: [{matchLabels: {kubernetes.io/metadata.name: "
	    "web}}]}\n"
	    "---\n"
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
	/* exclusionList: [] excludes nothing (signature tags are never candidates all the same:
	 * CONTRACT §12); absent or null, the default excludes signatures */
	ck_assert_uint_eq(
	    config_find_policy(c, "default", "empty-exclusions")->repository->exclusion.len, 0);
	ck_assert(!policy_accepts(config_find_policy(c, "default", "empty-exclusions")->policy,
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

	/* a path with no object at all is an error, saying so */
	big = write_file("empty.yaml", "# nothing here\n");
	ck_assert_int_eq(config_load(&c, big, &diags, &err), IG_EINVALID);
	ck_assert_ptr_null(c);
	ck_assert_uint_eq(diags.errors, 1);
	ck_assert_str_eq(diags.items[0].file, big);
	ck_assert_uint_eq(diags.items[0].line, 0);
	ck_assert_str_eq(diags.items[0].message, "no ImageRepository, ImagePolicy, GitRepository "
	                                         "or ImageUpdateAutomation found");
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

	ck_assert_int_eq(config_load_documents(&c, docs, 1, "kubernetes api", NULL, &diags, &err),
	                 0);
	ck_assert_uint_eq(c->repositories_len, 1);
	ck_assert_str_eq(c->repositories[0].id, "t/app");
	ck_assert_str_eq(c->repositories[0].origin.file, "ImageRepository/t/app");
	ck_assert_uint_eq(c->repositories[0].origin.line, 3);
	config_free(c);
	ck_assert_int_eq(config_load_documents(&c, docs, 2, "kubernetes api", NULL, &diags, &err),
	                 IG_EINVALID);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.msg, "kubernetes api"));
	ck_assert_uint_ge(diags.errors, 1);
	ck_assert_str_eq(diags.items[diags.len - 1].file, "ImagePolicy/t/app");
	ck_assert_uint_ge(diags.items[diags.len - 1].line, 2);
	config_diags_release(&diags);
}
END_TEST

/* document_text: the texts made one at a time, in order, as the loader reads them. */
struct made {
	const char *const *texts;
	size_t calls, fail_at;
};

static char *make_text(void *ctx, size_t i, size_t *len)
{
	struct made *m = ctx;

	ck_assert_uint_eq(i, m->calls); /* in order, each once */
	if (m->calls++ == m->fail_at)
		return NULL;
	*len = strlen(m->texts[i]);
	return strdup(m->texts[i]);
}

START_TEST(documents_made_when_read)
{
	static const char *const texts[] = {
	    "{\"apiVersion\": \"image.toolkit.fluxcd.io/v1\", \"kind\": \"ImageRepository\", "
	    "\"metadata\": {\"name\": \"app\", \"namespace\": \"t\"},\n"
	    "\"spec\": {\"image\": \"reg.example/app\"}}",
	    "{\"apiVersion\": \"image.toolkit.fluxcd.io/v1\", \"kind\": \"ImagePolicy\", "
	    "\"metadata\": {\"name\": \"app\", \"namespace\": \"t\"},\n"
	    "\"spec\": {\"imageRepositoryRef\": {\"name\": \"app\"}, "
	    "\"policy\": {\"semver\": {\"range\": \">=1.0.0\"}}}}"};
	struct config_document docs[] = {{"ImageRepository/t/app", NULL, 0},
	                                 {"ImagePolicy/t/app", NULL, 0}};
	struct made m = {texts, 0, (size_t)-1};
	struct config_load_options o = {
	    .keep_valid = true, .document_text = make_text, .document_ctx = &m};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(config_load_documents(&c, docs, 2, "kubernetes api", &o, &diags, &err), 0);
	ck_assert_uint_eq(m.calls, 2);
	ck_assert_uint_eq(c->policies_len, 1);
	ck_assert_str_eq(c->policies[0].origin.file, "ImagePolicy/t/app");
	ck_assert_uint_eq(c->policies[0].origin.line, 1);
	ck_assert_ptr_eq(c->policies[0].repository, &c->repositories[0]);
	config_free(c);
	m = (struct made){texts, 0, 1}; /* out of memory making the second: no configuration */
	ck_assert_int_eq(config_load_documents(&c, docs, 2, "kubernetes api", &o, &diags, &err),
	                 IG_EFAIL);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.msg, "out of memory"));
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
	/* no --secrets-dir: no default folder, never the current directory */
	error_clear(&err);
	ck_assert_int_eq(config_secret_path(&p, NULL, "ghcr-auth", &err), IG_EINVALID);
	ck_assert_ptr_null(p);
	ck_assert_str_eq(err.msg, "secret 'ghcr-auth' needs --secrets-dir");
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
	tcase_add_loop_test(tc, kube_service_account, 0,
	                    sizeof(kube_sa_cases) / sizeof(kube_sa_cases[0]));
	tcase_add_test(tc, flux_folder);
	tcase_add_test(tc, keep_valid);
	tcase_add_test(tc, invalid_reasons);
	tcase_add_test(tc, keep_valid_moved);
	tcase_add_test(tc, keep_valid_files);
	tcase_add_test(tc, label_selector_filters);
	tcase_add_test(tc, update_path_message);
	tcase_add_loop_test(tc, secret_folders, 0, sizeof(secret_cases) / sizeof(secret_cases[0]));
	tcase_add_test(tc, secrets_missing);
	tcase_add_test(tc, secrets_from_api);
	tcase_add_test(tc, secrets_dependents);
	tcase_add_test(tc, shards_refuse_a_second_branch);
	tcase_add_loop_test(tc, policy_selector, 0,
	                    sizeof(selector_cases) / sizeof(selector_cases[0]));
	tcase_add_test(tc, imageguard_kinds);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, directory_walk);
	tcase_add_test(tc, load_failures);
	tcase_add_test(tc, secret_path);
	tcase_add_test(tc, documents);
	tcase_add_test(tc, documents_made_when_read);
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
