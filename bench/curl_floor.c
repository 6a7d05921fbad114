/* The libcurl floor of the scale table (bench/reconcile_bench.py): THREADS threads, one easy
 * handle each, reused for every request without a reset, fetch the URLs of a file (one a line)
 * with the options imageguard's HTTP client sets on a plain GET (src/util/http.c), bodies and
 * headers kept in memory. What a pass cannot spend less than with libcurl.
 * Usage: curl_floor URLS-FILE THREADS */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/strvec.h"

#define THREADS_MAX 64

static struct strvec urls = STRVEC_INIT;
static size_t next_url;

static size_t keep(char *p, size_t size, size_t n, void *ctx)
{
	return buf_append(ctx, p, size * n) < 0 ? 0 : size * n;
}

static int progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)ctx, (void)dt, (void)dn, (void)ut, (void)un;
	return 0;
}

static void *fetch(void *arg)
{
	CURL *h = curl_easy_init();
	struct buf body = BUF_INIT, header = BUF_INIT;
	size_t i;

	(void)arg;
	if (!h)
		return (void *)1;
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "imageguard/floor");
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, keep);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &header);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	while ((i = __atomic_fetch_add(&next_url, 1, __ATOMIC_RELAXED)) < urls.len) {
		long status = 0;

		body.len = header.len = 0;
		curl_easy_setopt(h, CURLOPT_URL, urls.items[i]);
		if (curl_easy_perform(h) != CURLE_OK ||
		    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
		    status != 200) {
			fprintf(stderr, "curl_floor: %s: failed (HTTP %ld)\n", urls.items[i],
			        status);
			exit(1);
		}
	}
	buf_release(&body);
	buf_release(&header);
	curl_easy_cleanup(h);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS_MAX];
	char line[4096];
	FILE *f;
	long n;

	if (argc != 3 || (n = strtol(argv[2], NULL, 10)) < 1 || n > THREADS_MAX ||
	    !(f = fopen(argv[1], "r"))) {
		fprintf(stderr, "usage: curl_floor URLS-FILE THREADS (1-%d)\n", THREADS_MAX);
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] && strvec_push(&urls, line) < 0)
			return 1;
	}
	fclose(f);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (long i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, fetch, NULL) != 0)
			return 1;
	for (long i = 0; i < n; i++) {
		void *rc;

		pthread_join(th[i], &rc);
		if (rc)
			return 1;
	}
	strvec_release(&urls);
	curl_global_cleanup();
	return 0;
}
