/*
 * outcome.c: what an rlock status means for the history.
 *
 * A completion line is "ok" (it happened), "fail" (it definitely did not
 * happen) or "info" (unknown: it may have happened, or may yet). The
 * checker lets an info operation take effect or not, so info is always the
 * safe answer; fail is given only where rlock.h promises that nothing was
 * done in Redis, since a fail wrongly given could hide a violation.
 *
 *   acquire  0                                   ok
 *            RLOCK_ETIMEDOUT  not acquired in time (a hold a lost attempt
 *                             may have taken is given back first; one that
 *                             cannot be is reported as RLOCK_ECONN)  fail
 *            RLOCK_ECANCELED, RLOCK_EINVAL, RLOCK_ENOTSUP, RLOCK_EDEADLK,
 *            RLOCK_EFORKED    refused before anything was sent     fail
 *            anything else (RLOCK_ECONN, RLOCK_ESERVER, RLOCK_EPROTO,
 *            RLOCK_EAUTH, RLOCK_ECLOSED, ...)                      info
 *   release  0, RLOCK_ENOTIFY (released; only the unlock message was
 *                             refused)                             ok
 *            RLOCK_ENOTOWNER, RLOCK_ELOST (the hold was no longer ours:
 *                             nothing released)                    fail
 *            RLOCK_ESERVER, RLOCK_EAUTH (Redis refused it: the hold is
 *                             kept, and the worker releases again)  fail
 *            RLOCK_EINVAL, RLOCK_EFORKED, RLOCK_EDEADLK            fail
 *            anything else (RLOCK_ECONN, RLOCK_ETIMEDOUT after the
 *                             retries: the outcome is unknown)     info
 * Store accesses (store.h): ok; "fail" with err FENCED (the fencing store
 * refused the token) or ESTORE (an error reply); "info" with err EIO (the
 * connection failed) or ESTORE (a reply of an unexpected type).
 */
#include "worker.h"

const char *outcome_of_acquire(int status)
{
    switch (status) {
    case RLOCK_OK:
        return "ok";
    case RLOCK_ETIMEDOUT:
    case RLOCK_ECANCELED:
    case RLOCK_EINVAL:
    case RLOCK_ENOTSUP:
    case RLOCK_EDEADLK:
    case RLOCK_EFORKED:
        return "fail";
    default:
        return "info";
    }
}

const char *outcome_of_release(int status)
{
    switch (status) {
    case RLOCK_OK:
    case RLOCK_ENOTIFY:
        return "ok";
    case RLOCK_ENOTOWNER:
    case RLOCK_ELOST:
    case RLOCK_ESERVER:
    case RLOCK_EAUTH:
    case RLOCK_EINVAL:
    case RLOCK_EFORKED:
    case RLOCK_EDEADLK:
        return "fail";
    default:
        return "info";
    }
}

int outcome_release_kept_hold(int status)
{
    return status == RLOCK_ESERVER || status == RLOCK_EAUTH;
}
