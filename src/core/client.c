/*
 * core/client.c: what the core does with a client object (layer core;
 * core/client.h): tell whether this process may use it, and open a
 * blocking connection to its server with the handshake every link of the
 * client shares. The object's life (connect, free) is src/api/client.c's;
 * these two are here because the core (notify.c, direct.c, acl.c) needs
 * them and may not call up into the api.
 */
#include "core/core.h"
#include "io/link.h"
#include "io/master.h"

#include <unistd.h>

/* Returns 0 when c may be used by this process, else the reason not. */
int rlock__client_check(const rlock_client *c)
{
    if (c == NULL)
        return RLOCK_EINVAL;
    if (getpid() != c->pid)
        return RLOCK_EFORKED;
    if (atomic_load(&c->closing))
        return RLOCK_ECLOSED;
    return RLOCK_OK;
}

/* Opens a blocking connection to c's server, its handshake done within
 * connect_ms. Returns 0, or the code the handshake failed with (err, which
 * may be NULL, says why); *out is NULL then. */
int rlock__client_sync_open(rlock_client *c, int64_t connect_ms,
                            rlock__link_sync **out, char *err, size_t errlen)
{
    rlock__link_opts o;
    char host[RLOCK__MASTER_HOST_MAX];
    rlock__master_opts(c->master, c->link_opts, &o, host, NULL); /* moves */
    o.connect_timeout_ms = connect_ms;
    return rlock__link_sync_open(&o, out, err, errlen);
}
