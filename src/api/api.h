/*
 * api/api.h: what the files of src/api share: the public functions are
 * thin drivers of the core's operations (core/core.h).
 */
#ifndef RLOCK_API_API_H
#define RLOCK_API_API_H

#include "core/core.h"

/* Hands an async call's completion to its consumer: queued for the user's
 * loop when one is attached, else run here (completions.c). Any thread. */
void rlock__deliver(rlock_client *c, rlock_done_cb cb, rlock *lock,
                    uint64_t owner, int status, void *arg);

#endif
