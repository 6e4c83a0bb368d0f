/*
 * cmd_unlock.c: "rlock unlock --force NAME...": deletes locks whoever
 * holds them and wakes their waiters.
 *
 * A lock can only be released by its owner, so the one unlock an operator
 * can do from outside is Redisson's forceUnlock, and --force is required to
 * say so. The key's layout is read first (lock_state.c): a key that is not
 * a lock is left alone, so a typo cannot delete someone's data.
 * The lock is then deleted through a library handle of its kind, whose
 * rlock_force_unlock() is that kind's Redisson forceUnlock:
 *   - lock, fenced: deletes the hash and publishes "0" on the lock channel;
 *   - fair: the same, and tells the head of its queue on its own channel;
 *   - read-write: the side of its mode, with Redisson's message for it
 *     ("1" for write, which wakes every waiter; "0" for read).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char unlock_help[] =
    "Usage: rlock unlock --force [--url URL] [--config FILE] NAME...\n"
    "\n"
    "Deletes each lock NAME whoever holds it and wakes the clients waiting\n"
    "for it (Redisson's forceUnlock). The holder is not told: its next\n"
    "renewal finds the lock gone (an 'rlock exec' holding it then stops its\n"
    "command and exits 76). A NAME that is free is reported and skipped; a\n"
    "key that is not a lock is left alone (exit status 1).\n"
    "\n"
    "Options:\n"
    "  --force        required: a lock is normally released by its owner\n"
    "  --url URL, --config FILE, -h/--help: see 'rlock --help'\n"
    "\n"
    "Exit status: 0 when every NAME is now free; 1 when a NAME is not a\n"
    "lock; otherwise as 'rlock --help' lists (64, 69, 77, 78...).\n";

enum { OPT_FORCE = CLI_OPT_FIRST_OWN };

/* Deletes lock name as its kind's forceUnlock does, through a handle of
 * that kind (the library knows each kind's channel and message). */
static int force_kind(rlock_client *c, const char *name, cli_kind kind,
                      const char *mode)
{
    rlock *l = NULL;
    rlock_rw *rw = NULL;
    int rc;
    if (kind == CLI_KIND_READ_WRITE) {
        rc = rlock_rw_get(c, name, &rw);
        if (rc == 0)
            l = strcmp(mode, "write") == 0 ? rlock_rw_write(rw)
                                           : rlock_rw_read(rw);
    } else if (kind == CLI_KIND_FAIR) {
        rc = rlock_fair_get(c, name, &l);
    } else {
        rc = rlock_get(c, name, &l);
    }
    if (rc == 0)
        rc = rlock_force_unlock(l);
    if (rw != NULL)
        rlock_rw_free(rw);
    else
        rlock_free(l);
    if (rc == RLOCK_ENOTIFY) {
        /* deleted: only its waiters were not told */
        cli_error("'%s' force-unlocked, but %s", name, rlock_strerror(rc));
        return CLI_OK;
    }
    if (rc != 0) {
        cli_error("cannot force-unlock '%s': %s", name, rlock_strerror(rc));
        return cli_status_of(rc);
    }
    return CLI_OK;
}

/* Describes st's holders as "uuid:tid (holds n), ..." into buf. */
static void holders_text(const cli_lock_state *st, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < st->nholders && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s (holds %lld)",
                               i ? ", " : "", st->holders[i].field,
                               st->holders[i].count);
}

/* Force-unlocks one name. Returns 0 or an exit status. */
static int force_one(rlock_client *c, rlock_admin_conn *a, const char *name)
{
    cli_lock_state st;
    int code = cli_lock_read(a, name, &st);
    if (code != 0)
        return code;
    char who[512];
    holders_text(&st, who, sizeof(who));
    switch (st.kind) {
    case CLI_KIND_FREE:
        printf("%s: not locked\n", name);
        break;
    case CLI_KIND_NOT_A_LOCK:
        cli_error("'%s' is not a lock (a Redis %s); left alone", name,
                  st.redis_type);
        code = CLI_FAILURE;
        break;
    case CLI_KIND_READ_WRITE:
        code = force_kind(c, name, st.kind, st.mode);
        if (code == 0)
            printf("%s: force-unlocked (read-write lock, %s mode, held by "
                   "%s)\n",
                   name, st.mode, who);
        break;
    case CLI_KIND_LOCK:
    case CLI_KIND_FAIR:
    case CLI_KIND_FENCED:
        code = force_kind(c, name, st.kind, NULL);
        if (code == 0)
            printf("%s: force-unlocked (was held by %s)\n", name, who);
        break;
    }
    cli_lock_clear(&st);
    return code;
}

int cli_cmd_unlock(int argc, char **argv, cli_common *cm)
{
    static const cli_opt opts[] = {{"force", OPT_FORCE, false},
                                   {NULL, 0, false}};
    bool force = false;
    const char **names = NULL;
    size_t n = 0;
    int st = cli_parse_names("unlock", argc, argv, cm, opts, unlock_help,
                             &force, NULL, &names, &n);
    if (st != 0 || names == NULL)
        return st;
    if (!force) {
        free(names);
        return cli_usage_error("unlock",
                               "only --force is supported: a lock is released "
                               "by its owner, and --force deletes it whoever "
                               "holds it");
    }

    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    rlock_admin_conn *a = NULL;
    st = cli_connect(cm, &cfg, &c);
    if (st == 0)
        st = cli_open(c, cfg, &a);
    int worst = st;
    for (size_t i = 0; st == 0 && i < n; i++) {
        int one = force_one(c, a, names[i]);
        if (one != 0 && worst == 0)
            worst = one;
        if (one != 0 && one != CLI_FAILURE)
            break; /* the connection or memory is gone: stop */
    }
    rlock_admin_close(a);
    rlock_client_free(c);
    rlock_config_free(cfg);
    free(names);
    return worst;
}
