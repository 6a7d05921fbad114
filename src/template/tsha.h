/* SHA-1 and SHA-256 digests of a byte string (tsha.c). */
#ifndef IMAGEGUARD_TSHA_H
#define IMAGEGUARD_TSHA_H

#include <stddef.h>

void tsha1(unsigned char out[20], const void *data, size_t len);
void tsha256(unsigned char out[32], const void *data, size_t len);

#endif
