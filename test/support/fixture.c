/* Starting and stopping the Python peer fixtures from C tests (see fixture.h). */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

extern char **environ;

static const char *src_dir(void)
{
	const char *s = getenv("IMAGEGUARD_SRC");

	return s && *s ? s : ".";
}

int fixture_run(struct buf *out, const char *const argv[])
{
	posix_spawn_file_actions_t fa;
	int fds[2], status = -1;
	char chunk[4096];
	ssize_t n;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	if (posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (out)
		out->max = 1u << 20;
	while ((n = read(fds[0], chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && out)
			buf_append(out, chunk, (size_t)n);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void trim(struct buf *b)
{
	while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r'))
		b->data[--b->len] = '\0';
}

static int make_dir(struct fixture *f, const char *prefix)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "%s/%s.XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", prefix);
	return mkdtemp(f->dir) ? 0 : -1;
}

static void remove_dir(const char *dir)
{
	const char *argv[] = {"/bin/rm", "-rf", dir, NULL};

	if (dir[0])
		fixture_run(NULL, argv);
}

int fixture_registry_start(struct fixture *f, const char *const extra[])
{
	char script[512];
	const char *argv[32] = {"/usr/bin/python3", script, "start", "--dir", NULL};
	struct buf out = BUF_INIT;
	size_t n = 5;
	int rc;

	if (make_dir(f, "imageguard-registry") < 0)
		return -1;
	snprintf(script, sizeof(script), "%s/test/fixtures/registry.py", src_dir());
	argv[4] = f->dir;
	for (size_t i = 0; extra && extra[i] && n < 30; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	rc = fixture_run(&out, argv);
	trim(&out);
	if (rc == 0 && out.data)
		snprintf(f->host, sizeof(f->host), "%s", out.data);
	buf_release(&out);
	return rc == 0 && f->host[0] ? 0 : -1;
}

int fixture_registry_push(const struct fixture *f, const char *repo, const char *tag,
                          int multi_arch, char *digest, size_t digest_size)
{
	char script[512], url[256];
	const char *argv[] = {"/usr/bin/python3",
	                      script,
	                      "push",
	                      "--url",
	                      url,
	                      "--repo",
	                      repo,
	                      "--tag",
	                      tag,
	                      multi_arch ? "--multi-arch" : NULL,
	                      NULL};
	struct buf out = BUF_INIT;
	int rc;

	snprintf(script, sizeof(script), "%s/test/fixtures/registry.py", src_dir());
	snprintf(url, sizeof(url), "http://%s", f->host);
	rc = fixture_run(&out, argv);
	trim(&out);
	snprintf(digest, digest_size, "%s", out.data ? out.data : "");
	buf_release(&out);
	return rc == 0 ? 0 : -1;
}

void fixture_registry_stop(struct fixture *f)
{
	char script[512];
	const char *argv[] = {"/usr/bin/python3", script, "stop", "--dir", f->dir, NULL};

	if (!f->dir[0])
		return;
	snprintf(script, sizeof(script), "%s/test/fixtures/registry.py", src_dir());
	fixture_run(NULL, argv);
	remove_dir(f->dir);
	f->dir[0] = '\0';
}

int fixture_fault_start(struct fixture *f, const char *upstream)
{
	char script[512], port_file[300];
	const char *argv[] = {
	    "/usr/bin/python3", script, "--port-file", port_file, upstream ? "--upstream" : NULL,
	    upstream,           NULL};
	posix_spawn_file_actions_t fa;
	struct buf port = BUF_INIT;

	if (make_dir(f, "imageguard-fault") < 0)
		return -1;
	snprintf(script, sizeof(script), "%s/test/fixtures/faultserver.py", src_dir());
	snprintf(port_file, sizeof(port_file), "%s/port", f->dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&f->pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0)
		f->pid = 0;
	posix_spawn_file_actions_destroy(&fa);
	for (int i = 0; f->pid && i < 200; i++) {
		struct timespec ts = {0, 50000000L};

		if (buf_read_file(&port, port_file) == 0 && port.len) {
			trim(&port);
			snprintf(f->host, sizeof(f->host), "127.0.0.1:%s", port.data);
			break;
		}
		nanosleep(&ts, NULL);
	}
	buf_release(&port);
	if (!f->host[0]) {
		fixture_fault_stop(f);
		return -1;
	}
	return 0;
}

void fixture_fault_stop(struct fixture *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		waitpid(f->pid, NULL, 0);
		f->pid = 0;
	}
	remove_dir(f->dir);
	f->dir[0] = '\0';
}

int fixture_kubeapi_start(struct fixture *f, const char *script, const char *const extra[])
{
	char path[512], port_file[300];
	const char *argv[24] = {"/usr/bin/python3", path, "serve", "--dir", NULL};
	posix_spawn_file_actions_t fa;
	struct buf port = BUF_INIT;
	size_t n = 5;

	if (make_dir(f, "imageguard-kubeapi") < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/test/fixtures/%s", src_dir(), script);
	snprintf(port_file, sizeof(port_file), "%s/port", f->dir);
	argv[4] = f->dir;
	for (size_t i = 0; extra && extra[i] && n < 22; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&f->pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0)
		f->pid = 0;
	posix_spawn_file_actions_destroy(&fa);
	/* the certificates and etcd take seconds on a busy machine: up to two minutes */
	for (int i = 0; f->pid && i < 1200; i++) {
		struct timespec ts = {0, 100000000L};

		if (buf_read_file(&port, port_file) == 0 && port.len) {
			trim(&port);
			snprintf(f->host, sizeof(f->host), "127.0.0.1:%s", port.data);
			break;
		}
		if (waitpid(f->pid, NULL, WNOHANG) == f->pid) {
			f->pid = 0; /* it failed to start */
			break;
		}
		nanosleep(&ts, NULL);
	}
	buf_release(&port);
	if (!f->host[0]) {
		fixture_kubeapi_stop(f);
		return -1;
	}
	return 0;
}

void fixture_kubeapi_stop(struct fixture *f)
{
	fixture_fault_stop(f); /* the same: SIGTERM (the fixture stops its etcd), the dir */
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	return buf_append(ctx, p, size * n) < 0 ? 0 : size * n;
}

long fixture_http_get(struct buf *out, const char *url)
{
	CURL *h = curl_easy_init();
	long status = -1;

	if (!h)
		return -1;
	out->max = 64u << 20;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (!out->data)
		buf_append(out, "", 0);
	return status;
}
