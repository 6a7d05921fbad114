/* The version string, set at build time when the Makefile knows better. */
#ifndef IMAGEGUARD_VERSION_H
#define IMAGEGUARD_VERSION_H

#ifndef IMAGEGUARD_VERSION
#define IMAGEGUARD_VERSION "0.1.0"
#endif

#endif
