/* gitstream's bounds against a Git host that accepts and never answers (a listening socket
 * this test holds): a clone ends when the peer has been silent for the timeout, and, with a
 * long timeout, within about a second of the stop flag being set; a host that is not the
 * configured origin is refused without a connection; a host that trickles bytes is cut at the
 * operation's deadline. */
#include <arpa/inet.h>
#include <check.h>
#include <git2.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/git/gitstream.h"

static int listener = -1;
static pthread_t host_thread;
static int held[32];
static int held_len;
static unsigned port;
static char dir[64];
static volatile sig_atomic_t stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Accepts connections (the backlog would too) and never writes a byte. */
static void *silent_host(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listener, NULL, NULL);

		if (fd < 0)
			return NULL; /* teardown shut the listener down */
		/* held open until the test ends: the client sees a connection that never answers */
		if (held_len < 32)
			held[held_len++] = fd;
		else
			close(fd);
	}
}

/* A listening socket on a free loopback port: the fd, its port in *out_port. */
static int listen_loopback(unsigned *out_port)
{
	struct sockaddr_in a = {0};
	socklen_t len = sizeof(a);
	int fd;

	ck_assert_int_ge(fd = socket(AF_INET, SOCK_STREAM, 0), 0);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*out_port = ntohs(a.sin_port);
	return fd;
}

static void setup(void)
{
	listener = listen_loopback(&port);
	held_len = 0;
	ck_assert_int_eq(pthread_create(&host_thread, NULL, silent_host, NULL), 0);
	snprintf(dir, sizeof(dir), "/tmp/imageguard-test-gitstream.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	stop = 0;
}

static void teardown(void)
{
	char cmd[128];

	shutdown(listener, SHUT_RDWR);
	pthread_join(host_thread, NULL);
	close(listener);
	for (int i = 0; i < held_len; i++)
		close(held[i]);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A fetch connection to the silent host (what a clone or fetch opens first: the ref
 * advertisement): how long it took, and libgit2's message. A detached remote, so no
 * repository config is read (libgit2 1.5 leaks regex match data there, which is not ours). */
static double clone_silent(const char *host, char *msg, size_t msg_size)
{
	git_remote *remote = NULL;
	char url[128];
	double t0 = now();
	int rc;

	snprintf(url, sizeof(url), "http://%s:%u/repo.git", host, port);
	ck_assert_int_eq(git_remote_create_detached(&remote, url), 0);
	rc = git_remote_connect(remote, GIT_DIRECTION_FETCH, NULL, NULL, NULL);
	ck_assert_int_lt(rc, 0);
	snprintf(msg, msg_size, "%s", git_error_last() ? git_error_last()->message : "");
	git_remote_free(remote);
	return now() - t0;
}

START_TEST(silence_times_out)
{
	char msg[512];
	double took;

	gitstream_allow("127.0.0.1", port);
	gitstream_bound(NULL, 700);
	took = clone_silent("127.0.0.1", msg, sizeof(msg));
	ck_assert_msg(took >= 0.6 && took < 10, "took %.2f s", took);
	ck_assert_msg(strstr(msg, "timed out") != NULL, "%s", msg);
}
END_TEST

static void *raise_stop(void *arg)
{
	(void)arg;
	usleep(300000);
	stop = 1;
	return NULL;
}

START_TEST(stop_ends_the_wait)
{
	pthread_t th;
	char msg[512];
	double took;

	gitstream_allow("127.0.0.1", port);
	gitstream_bound(&stop, 600000);
	ck_assert_int_eq(pthread_create(&th, NULL, raise_stop, NULL), 0);
	took = clone_silent("127.0.0.1", msg, sizeof(msg));
	pthread_join(th, NULL);
	/* 0.3 s until the stop, a second of grace: far inside the contract's 2 s after SIGTERM */
	ck_assert_msg(took >= 1.2 && took < 3.0, "took %.2f s", took);
	ck_assert_msg(strstr(msg, "stopping") != NULL, "%s", msg);
}
END_TEST

/* A host that is never silent: it answers the request with a status line and then one byte
 * of a header every 50 ms, for as long as the client reads. */
static volatile int trickling;
static unsigned trickle_port;
static int trickle_listener = -1;

static void *trickle_host(void *arg)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nX-Trickle: ";
	char req[4096];
	int fd;

	(void)arg;
	if ((fd = accept(trickle_listener, NULL, NULL)) < 0)
		return NULL;
	(void)!recv(fd, req, sizeof(req), 0);
	if (send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL) > 0)
		while (trickling && send(fd, "a", 1, MSG_NOSIGNAL) == 1)
			usleep(50000);
	close(fd);
	return NULL;
}

/* A fenced push's deadline ends the operation however lively the peer: the inactivity timeout
 * (10 minutes here) never fires on a host that trickles, the deadline does. */
START_TEST(deadline_ends_a_lively_peer)
{
	struct timespec ts;
	pthread_t th;
	char msg[512];
	double took;

	trickle_listener = listen_loopback(&trickle_port);
	trickling = 1;
	ck_assert_int_eq(pthread_create(&th, NULL, trickle_host, NULL), 0);

	gitstream_allow("127.0.0.1", trickle_port);
	gitstream_bound(NULL, 600000);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	gitstream_deadline((long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 800);
	port = trickle_port; /* clone_silent's URL */
	took = clone_silent("127.0.0.1", msg, sizeof(msg));
	trickling = 0;
	pthread_join(th, NULL);
	close(trickle_listener);
	ck_assert_msg(took >= 0.7 && took < 5, "took %.2f s", took);
	ck_assert_msg(strstr(msg, "past its deadline") != NULL, "%s", msg);
	/* gitstream_bound clears it: the next operation has no deadline */
	gitstream_bound(NULL, 600000);
}
END_TEST

START_TEST(other_origin_refused)
{
	char msg[512];
	double took;

	gitstream_allow("127.0.0.2", port); /* another host than the URL's */
	gitstream_bound(NULL, 600000);
	took = clone_silent("127.0.0.1", msg, sizeof(msg));
	ck_assert_msg(took < 2, "took %.2f s", took);
	ck_assert_msg(strstr(msg, "refusing a connection") != NULL, "%s", msg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gitstream");
	TCase *tc = tcase_create("silent host");
	SRunner *sr;
	int failed;

	git_libgit2_init();
	if (gitstream_install() != 0) {
		fprintf(stderr, "gitstream_install failed\n");
		return EXIT_FAILURE;
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, silence_times_out);
	tcase_add_test(tc, stop_ends_the_wait);
	tcase_add_test(tc, other_origin_refused);
	tcase_add_test(tc, deadline_ends_a_lively_peer);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	git_libgit2_shutdown();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
