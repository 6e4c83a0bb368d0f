/*
 * critical.c: what a holder does inside the critical section, recorded.
 *
 * A read-modify-write of the lock's counter in two separate commands, so
 * that two holders at once can both read v and both write v + 1: only
 * mutual exclusion keeps every increment. Readers of a read-write lock
 * only read. A fenced holder's accesses carry its token through the
 * fencing store, and its lines carry the token too.
 */
#include "worker.h"

/* Writes a store access's completion line. */
static void complete(actor *a, const char *op, unsigned long seq,
                     store_result res, const char *err, int has_value,
                     int64_t value)
{
    hist_event e;
    actor_event(a, &e, op, seq);
    e.type = res == STORE_OK ? "ok" : res == STORE_REFUSED ? "fail" : "info";
    e.err = res == STORE_OK ? NULL : err;
    e.has_value = has_value;
    e.value = value;
    e.has_token = a->token > 0;
    e.token = a->token;
    history_write(&a->w->hist, &e);
}

/* The invoke line of a store access (with the value a write sends). */
static unsigned long invoke(actor *a, const char *op, int has_value,
                            int64_t value)
{
    unsigned long seq = atomic_fetch_add(&a->seq, 1);
    hist_event e;
    actor_event(a, &e, op, seq);
    e.type = "invoke";
    e.has_value = has_value;
    e.value = value;
    e.has_token = a->token > 0;
    e.token = a->token;
    history_write(&a->w->hist, &e);
    return seq;
}

void critical_read(actor *a)
{
    const char *err = NULL;
    int64_t value = 0;
    unsigned long seq = invoke(a, "read", 0, 0);
    store_result res = store_read(&a->store, a->w->names[a->name], a->token,
                                  &value, &err);
    a->read_ok = res == STORE_OK;
    a->value = value;
    complete(a, "read", seq, res, err, a->read_ok, value);
}

void critical_write(actor *a)
{
    /* a read that failed gives nothing to increment */
    if (!a->read_ok || atomic_load(&a->mode) != 'x')
        return;
    const char *err = NULL;
    int64_t value = a->value + 1;
    unsigned long seq = invoke(a, "write", 1, value);
    store_result res = store_write(&a->store, a->w->names[a->name], a->token,
                                   value, &err);
    complete(a, "write", seq, res, err, 1, value);
}
