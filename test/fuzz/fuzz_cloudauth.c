/* The cloud services' answers cloudauth parses: STS XML, container-credentials JSON, ECR and
 * ECR Public JSON, OAuth2 token JSON, GitHub's installation token, JWT `exp` and RFC 3339
 * times; the first byte picks the
 * parser. Secrets are never in an error message, so each error must not hold the input's
 * token either (checked with the marker "SECRET"). */
#include "fuzz.h"

#include "imageguard/git/githubapp.h"
#include "imageguard/registry/cloudauth.h"
#include "imageguard/util/error.h"

static void keys(const char *s, size_t n, int which)
{
	struct cloudauth_aws_keys k;
	struct error err = ERROR_INIT;
	int rc =
	    which ? cloudauth_parse_container(&k, s, n, &err) : cloudauth_parse_sts(&k, s, n, &err);

	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EAUTH || rc == IG_EFAIL);
	if (rc == 0)
		FUZZ_CHECK(k.access_key_id && k.secret_access_key && k.expires >= 0);
	else
		FUZZ_CHECK(!k.access_key_id && !strstr(err.msg, "SECRET"));
	cloudauth_aws_keys_release(&k);
}

static void ecr(const char *s, size_t n, bool pub)
{
	struct error err = ERROR_INIT;
	char *user = NULL, *pass = NULL;
	long long exp = 0;
	int rc = cloudauth_parse_ecr(&user, &pass, &exp, s, n, pub, &err);

	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
	if (rc == 0)
		FUZZ_CHECK(user && *user && pass && !strchr(pass, ':') && exp >= 0);
	else
		FUZZ_CHECK(!user && !pass && !strstr(err.msg, "SECRET"));
	free(user), free(pass);
}

static void oauth(const char *s, size_t n)
{
	struct error err = ERROR_INIT;
	char *tok = NULL;
	long long in = -1;
	int rc = cloudauth_parse_oauth(&tok, &in, s, n, "access_token", &err);

	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
	FUZZ_CHECK(rc == 0 ? tok && *tok && in >= 0 : !tok);
	free(tok);
}

static void github(const char *s, size_t n)
{
	struct error err = ERROR_INIT;
	char *tok = NULL;
	long long exp = -2;
	int rc = githubapp_parse_token(&tok, &exp, s, n, &err);

	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
	FUZZ_CHECK(rc == 0 ? tok && *tok && exp >= 0 : !tok);
	free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1)
		return 0;
	fuzz_quiet();
	if (!(s = malloc(size)))
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 7) {
	case 0:
		keys(s, size - 1, 0);
		break;
	case 1:
		keys(s, size - 1, 1);
		break;
	case 2:
		ecr(s, size - 1, data[0] & 8);
		break;
	case 3:
		oauth(s, size - 1);
		break;
	case 4:
		FUZZ_CHECK(cloudauth_jwt_exp(s) >= -1);
		break;
	case 6:
		github(s, size - 1);
		break;
	default:
		FUZZ_CHECK(cloudauth_parse_time(s) >= -1);
		break;
	}
	free(s);
	return 0;
}
