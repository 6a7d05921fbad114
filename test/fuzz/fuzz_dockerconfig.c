/* `.dockerconfigjson` of a Kubernetes secret (a Docker config file), looked up for the hosts
 * the lookup treats differently: Docker Hub's aliases, a host with a port, a plain host. */
#include "fuzz.h"

#include "imageguard/registry/creds.h"
#include "imageguard/util/error.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[] = {"ghcr.io", "registry-1.docker.io", "127.0.0.1:5000"};
	const char *path = fuzz_write(".dockerconfigjson", data, size);

	for (size_t k = 0; k < sizeof(hosts) / sizeof(hosts[0]); k++) {
		struct registry_creds c = REGISTRY_CREDS_INIT;
		struct error err = ERROR_INIT;
		int rc = k == 0 ? creds_load_secret(&c, fuzz_dir_path, hosts[k], &err)
		                : creds_load_docker_config(&c, path, hosts[k], &err);

		FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_ETOOBIG || rc == IG_EFAIL);
		if (rc < 0) {
			FUZZ_CHECK(err.msg[0]);
			FUZZ_CHECK(!c.username && !c.password && !c.token);
		}
		/* A password without a user name would be sent as Basic ":password". */
		FUZZ_CHECK(!c.password || c.username);
		creds_release(&c);
	}
	return 0;
}
