/* Listings kept between passes, in an open-addressing table keyed by the SHA-256 of each first
 * page's URL and body (listmemo.h). */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/listmemo.h"
#include "imageguard/util/error.h"

struct entry {
	unsigned char key[LISTMEMO_KEY_LEN];
	char *block; /* owned, NULL: an empty slot; the packed tags (tagarena_lend) */
	size_t n;
	unsigned pass; /* the last pass that read or wrote it */
};

struct listmemo {
	pthread_mutex_t mu;
	struct entry *slots;
	size_t len, cap; /* cap a power of two (or 0), len at most 3/4 of cap: find ends */
	size_t bytes;    /* packed bytes held */
	size_t max_bytes;
	unsigned pass;
};

int listmemo_new(struct listmemo **out)
{
	struct listmemo *m = calloc(1, sizeof(*m));

	*out = m;
	if (!m)
		return IG_EFAIL;
	pthread_mutex_init(&m->mu, NULL);
	m->max_bytes = LISTMEMO_BYTES_MAX;
	return 0;
}

void listmemo_set_cap(struct listmemo *m, size_t max_bytes)
{
	pthread_mutex_lock(&m->mu);
	m->max_bytes = max_bytes;
	pthread_mutex_unlock(&m->mu);
}

void listmemo_free(struct listmemo *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].block);
	free(m->slots);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static EVP_MD *sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* Fetched once: OpenSSL 3 looks EVP_sha256() up again in its provider store at every
 * EVP_DigestInit_ex, which cost more than hashing a 1 KiB page (docs/performance.md). Held for
 * the process's life. */
static void fetch_sha256(void)
{
	sha256 = EVP_MD_fetch(NULL, "SHA2-256", NULL);
}

bool listmemo_key(unsigned char key[LISTMEMO_KEY_LEN], const char *url, const char *body,
                  size_t len)
{
	EVP_MD_CTX *ctx;
	unsigned n = 0;
	bool ok;

	pthread_once(&sha256_once, fetch_sha256);
	ctx = sha256 ? EVP_MD_CTX_new() : NULL;
	ok = ctx && EVP_DigestInit_ex2(ctx, sha256, NULL) == 1 &&
	     EVP_DigestUpdate(ctx, url, strlen(url) + 1) == 1 &&
	     EVP_DigestUpdate(ctx, body, len) == 1 && EVP_DigestFinal_ex(ctx, key, &n) == 1 &&
	     n == LISTMEMO_KEY_LEN;
	if (!ok)
		memset(key, 0, LISTMEMO_KEY_LEN); /* the all-zero key is never looked up */
	EVP_MD_CTX_free(ctx);
	return ok;
}

static bool is_zero(const unsigned char key[LISTMEMO_KEY_LEN])
{
	for (size_t i = 0; i < LISTMEMO_KEY_LEN; i++)
		if (key[i])
			return false;
	return true;
}

/* The slot of key in slots (cap a power of two, never full): its entry or the empty slot
 * where it would go. The key is a SHA-256: its first bytes are already a good hash. */
static struct entry *find(struct entry *slots, size_t cap, const unsigned char *key)
{
	uint64_t h;

	memcpy(&h, key, sizeof(h));
	for (size_t i = (size_t)h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!slots[i].block || memcmp(slots[i].key, key, LISTMEMO_KEY_LEN) == 0)
			return &slots[i];
}

int listmemo_get(struct listmemo *m, const unsigned char key[LISTMEMO_KEY_LEN], struct strvec *tags,
                 struct tagarena *arena)
{
	struct entry *e;
	int rc = 0;

	if (is_zero(key))
		return 0;
	pthread_mutex_lock(&m->mu);
	if (m->cap && (e = find(m->slots, m->cap, key))->block) {
		e->pass = m->pass; /* so it stays while this pass's listing reads it */
		rc = tagarena_borrow(arena, tags, e->block, e->n) < 0 ? IG_EFAIL : 1;
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* Rehashes into cap slots, keeping the entries used in this pass or the one before. */
static int rebuild(struct listmemo *m, size_t cap)
{
	struct entry *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return IG_EFAIL;
	m->len = 0;
	m->bytes = 0;
	for (size_t i = 0; i < m->cap; i++) {
		struct entry *e = &m->slots[i];

		if (!e->block)
			continue;
		if (m->pass - e->pass > 1) {
			free(e->block);
			continue;
		}
		*find(slots, cap, e->key) = *e;
		m->len++;
		m->bytes += tagarena_block_bytes(e->block);
	}
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

void listmemo_put(struct listmemo *m, const unsigned char key[LISTMEMO_KEY_LEN],
                  struct tagarena *arena, const struct strvec *tags)
{
	struct entry *e;

	if (is_zero(key) || arena->lent || !tagarena_is_packed(arena, tags))
		return;
	pthread_mutex_lock(&m->mu);
	if (m->bytes > m->max_bytes || arena->used > m->max_bytes - m->bytes ||
	    ((m->len + 1) * 4 > m->cap * 3 && rebuild(m, m->cap ? m->cap * 2 : 64) < 0))
		goto done;
	e = find(m->slots, m->cap, key);
	if (e->block) { /* listed twice in a pass: the same tags */
		e->pass = m->pass;
		goto done;
	}
	memcpy(e->key, key, LISTMEMO_KEY_LEN);
	e->block = tagarena_lend(arena); /* not NULL: packed and not lent */
	e->n = tags->len;
	e->pass = m->pass;
	m->len++;
	m->bytes += arena->used;
done:
	pthread_mutex_unlock(&m->mu);
}

void listmemo_next_pass(struct listmemo *m)
{
	pthread_mutex_lock(&m->mu);
	m->pass++;
	if (m->cap)
		(void)rebuild(m, m->cap); /* out of memory: the old entries stay a pass longer */
	pthread_mutex_unlock(&m->mu);
}

size_t listmemo_len(const struct listmemo *m, size_t *bytes)
{
	if (bytes)
		*bytes = m->bytes;
	return m->len;
}
