/* Mutexes for locks that every thread of a pass takes once or more per request. */
#ifndef IMAGEGUARD_UTIL_MUTEX_H
#define IMAGEGUARD_UTIL_MUTEX_H

#include <pthread.h>

/* Initialises m as an adaptive mutex where the C library has one (glibc's
 * PTHREAD_MUTEX_ADAPTIVE_NP, visible with _GNU_SOURCE): a contended lock that is held for a
 * few hundred instructions is spun for briefly instead of costing a futex call and a context
 * switch at once. A plain mutex elsewhere. Returns pthread_mutex_init's result. */
static inline int mutex_init_adaptive(pthread_mutex_t *m)
{
#if defined(PTHREAD_MUTEX_ADAPTIVE_NP)
	pthread_mutexattr_t a;
	int rc;

	if (pthread_mutexattr_init(&a) == 0) {
		rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP) == 0
		         ? pthread_mutex_init(m, &a)
		         : pthread_mutex_init(m, NULL);
		pthread_mutexattr_destroy(&a);
		return rc;
	}
#endif
	return pthread_mutex_init(m, NULL);
}

#endif
