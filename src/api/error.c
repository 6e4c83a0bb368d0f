/*
 * api/error.c: the RLOCK_E* codes as words. One table is the single source for
 * both rlock_strerror() and rlock_err_name(), so they cannot drift apart.
 * Also the library's version (rlock_version, rlock_version_string), from
 * include/rlock/version.h and the build id.
 *
 * Public functions in src/api; nothing below the API needs them.
 */
#include "api/api.h"
#include <rlock_build_id.h> /* generated, in the build tree */

#define RLOCK_ERR_MAP(X)                                                      \
    X(RLOCK_OK, "success")                                                    \
    X(RLOCK_EINVAL, "invalid argument")                                       \
    X(RLOCK_ENOMEM, "out of memory")                                          \
    X(RLOCK_ECONN, "cannot reach Redis or the connection was lost")           \
    X(RLOCK_ETIMEDOUT, "timed out")                                           \
    X(RLOCK_ENOTOWNER, "the calling thread does not hold this lock")          \
    X(RLOCK_ELOST, "the lock was lost (expired, force-unlocked or deleted)")  \
    X(RLOCK_EPROTO, "unexpected reply from the server")                       \
    X(RLOCK_EAUTH,                                                            \
      "the server refused authentication, database selection or a command")   \
    X(RLOCK_EDEADLK, "blocking call from an rlock callback")                  \
    X(RLOCK_ECLOSED, "the client is shutting down")                           \
    X(RLOCK_EFORKED, "the client belongs to the parent process")              \
    X(RLOCK_ESERVER, "Redis answered with an error")                          \
    X(RLOCK_ECANCELED, "the asynchronous call was cancelled")                 \
    X(RLOCK_ENOTSUP, "not supported for this kind of lock or connection")                   \
    X(RLOCK_ENOTIFY, "unlocked, but Redis refused the unlock message")       \
    X(RLOCK_ETLS, "TLS failed: untrusted or wrong certificate, or handshake") \
    X(RLOCK_EREENTRY, "the non-reentrant lock is already held by this owner")

/* Returns the description of err, or a generic sentence for unknown codes. */
const char *rlock_strerror(int err)
{
#define RLOCK_ERR_TEXT(code, text) \
    case code:                     \
        return text;
    switch (err) {
        RLOCK_ERR_MAP(RLOCK_ERR_TEXT)
    }
#undef RLOCK_ERR_TEXT
    return "unknown rlock error";
}

/* Returns the macro name of err, or "RLOCK_E?" for unknown codes. */
const char *rlock_err_name(int err)
{
#define RLOCK_ERR_NAME(code, text) \
    case code:                     \
        return #code;
    switch (err) {
        RLOCK_ERR_MAP(RLOCK_ERR_NAME)
    }
#undef RLOCK_ERR_NAME
    return "RLOCK_E?";
}

/* Returns the library version as a number (RLOCK_VERSION_HEX). */
unsigned int rlock_version(void)
{
    return RLOCK_VERSION_HEX;
}

/* Returns the library version string, with the build id when one is known
 * (rlock_build_id.h, written at build time by cmake/build_id.cmake). */
const char *rlock_version_string(void)
{
    return RLOCK_VERSION_STRING RLOCK__BUILD_ID;
}
