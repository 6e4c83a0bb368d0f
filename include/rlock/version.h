/*
 * rlock/version.h: rlock's version, the single place it is written.
 *
 * Included by rlock.h; users include <rlock.h>, never this file alone.
 * CMake reads the three numbers below for project(VERSION), the shared
 * library's VERSION and SONAME (librlock.so.MAJOR), rlockConfigVersion.cmake
 * and rlock.pc, so a release changes this file and nothing else.
 *
 * rlock follows semantic versioning (https://semver.org): MAJOR changes
 * when the API or ABI changes incompatibly (and with it the SONAME), MINOR
 * when something is added compatibly, PATCH for fixes alone. The rules are
 * in CONTRIBUTING.md and docs/versioning.md.
 */
#ifndef RLOCK_VERSION_H
#define RLOCK_VERSION_H

#define RLOCK_VERSION_MAJOR 1
#define RLOCK_VERSION_MINOR 0
#define RLOCK_VERSION_PATCH 0

/* 0xMMmmpp: one byte each, so versions compare as integers, e.g.
 * #if RLOCK_VERSION_HEX >= 0x010200 for "1.2.0 or later". */
#define RLOCK_VERSION_HEX                                                      \
    ((RLOCK_VERSION_MAJOR << 16) | (RLOCK_VERSION_MINOR << 8) |                \
     RLOCK_VERSION_PATCH)

#define RLOCK__VERSION_STR(x) #x
#define RLOCK__VERSION_XSTR(x) RLOCK__VERSION_STR(x)
/* "MAJOR.MINOR.PATCH", e.g. "1.0.0": built from the numbers above. */
#define RLOCK_VERSION_STRING                                                   \
    RLOCK__VERSION_XSTR(RLOCK_VERSION_MAJOR)                                   \
    "." RLOCK__VERSION_XSTR(RLOCK_VERSION_MINOR) "." RLOCK__VERSION_XSTR(      \
        RLOCK_VERSION_PATCH)

#endif /* RLOCK_VERSION_H */
