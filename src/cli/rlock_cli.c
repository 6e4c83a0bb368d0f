/*
 * rlock_cli.c: the rlock command-line tool's main(): subcommands, argument
 * parsing, help, where the server comes from, and connecting.
 *
 * Arguments are parsed by hand rather than with getopt_long(): exec's
 * command line after "--" (or after NAME) must reach the command untouched,
 * and GNU getopt's permutation would move NAME past the "--". Options are
 * "--name VALUE" or "--name=VALUE", anywhere before the command; -h is the
 * one short option.
 *
 * The server is, first found: --url; the --config file's address;
 * $REDIS_URL; redis://127.0.0.1:6379 (as redis-cli). A user, password or
 * /db written in --url beats the config file's; what the URL leaves out
 * comes from the file.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_URL "redis://127.0.0.1:6379"

static const char global_help[] =
    "Usage: rlock [--url URL] [--config FILE] COMMAND [ARGS...]\n"
    "\n"
    "Distributed reentrant locks on Redis, kept exactly as Java's Redisson\n"
    "keeps its RLock, so shell scripts, C programs and Java services can\n"
    "share lock names.\n"
    "\n"
    "Commands:\n"
    "  exec NAME [OPTIONS] -- CMD [ARGS...]\n"
    "                     run CMD while holding lock NAME (like flock(1),\n"
    "                     across machines)\n"
    "  info [--json] NAME...\n"
    "                     who holds each lock, how often, for how long, what\n"
    "                     kind of lock it is and how many clients wait\n"
    "  unlock --force NAME...\n"
    "                     delete each lock whoever holds it; wake its "
    "waiters\n"
    "  watch [--enable-notifications] NAME...\n"
    "                     print lock and unlock events until interrupted\n"
    "  help [COMMAND]     this text, or a command's own\n"
    "\n"
    "Options (every command takes them, before or after its name):\n"
    "  --url URL          redis://[[user]:password@]host[:port][/db],\n"
    "                     unix:///path/to/redis.sock[?db=N], or a master\n"
    "                     behind Redis Sentinel: redis+sentinel://[[user]:\n"
    "                     password@]host[:port][,host[:port]...]/name[/db],\n"
    "                     or a Redis Cluster: redis+cluster://[[user]:\n"
    "                     password@]host[:port][,host[:port]...]\n"
    "                     (rediss://, rediss+sentinel:// and\n"
    "                     rediss+cluster:// for TLS; valkey for redis\n"
    "                     in any of them, as valkey://)\n"
    "  --config FILE      a Redisson JSON config file (singleServerConfig,\n"
    "                     sentinelServersConfig or clusterServersConfig,\n"
    "                     lockWatchdogTimeout; see docs/redisson-config.md)\n"
    "  -h, --help         show help\n"
    "  --version          print the version\n"
    "\n"
    "The server is, first found: --url; the config file's address;\n"
    "$REDIS_URL; " DEFAULT_URL ". A user, password or /db in\n"
    "--url beats the config file's.\n"
    "\n"
    "Exit status:\n"
    "  0      success (exec: the status of CMD)\n"
    "  1      Redis refused a command, or NAME is not a lock\n"
    "  64     bad arguments\n"
    "  69     cannot reach the server, or the connection was lost\n"
    "  70     internal error (out of memory)\n"
    "  75     exec: the lock was not acquired within --wait\n"
    "  76     exec: the lock was lost while CMD ran\n"
    "  77     the server refused the password or the database\n"
    "  78     bad config file or URL, or TLS refused\n"
    "  126    exec: CMD could not be run\n"
    "  127    exec: CMD was not found\n"
    "  128+N  exec: CMD was killed by signal N\n";

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

/* Prints "rlock: <message>" on stderr. */
void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("rlock: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Prints a usage error for subcommand cmd (NULL: none) and returns
 * CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "rlock%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'rlock%s%s --help'.\n", cmd ? " " : "",
            cmd ? cmd : "");
    return CLI_USAGE;
}

/* ------------------------------------------------------------------------ */
/* Arguments                                                                */
/* ------------------------------------------------------------------------ */

static const cli_opt common_opts[] = {
    {"help", CLI_OPT_HELP, false},
    {"url", CLI_OPT_URL, true},
    {"config", CLI_OPT_CONFIG, true},
    {NULL, 0, false},
};

void cli_parser_init(cli_parser *p, const char *cmd, int argc, char **argv)
{
    p->cmd = cmd;
    p->argc = argc;
    p->argv = argv;
    p->i = 0;
    p->rest = -1;
}

/* Finds the option called name[0..n) in opts. */
static const cli_opt *find_opt(const cli_opt *opts, const char *name, size_t n)
{
    for (; opts != NULL && opts->name != NULL; opts++)
        if (strlen(opts->name) == n && strncmp(opts->name, name, n) == 0)
            return opts;
    return NULL;
}

/* Returns the next argument: an option id (> 0; *value holds its value if
 * it takes one), CLI_ARG_POSITIONAL (*value is the argument), CLI_ARG_END
 * (no more; after "--", p->rest indexes what follows it) or CLI_ARG_ERROR
 * (a message was printed). opts adds to the common options. */
int cli_next(cli_parser *p, const cli_opt *opts, const char **value)
{
    *value = NULL;
    if (p->i >= p->argc)
        return CLI_ARG_END;
    const char *a = p->argv[p->i++];
    if (strcmp(a, "--") == 0) {
        p->rest = p->i;
        p->i = p->argc;
        return CLI_ARG_END;
    }
    if (strcmp(a, "-h") == 0)
        return CLI_OPT_HELP;
    if (a[0] != '-' || a[1] == '\0') {
        *value = a;
        return CLI_ARG_POSITIONAL;
    }
    if (a[1] != '-') {
        cli_usage_error(p->cmd, "unknown option '%s'", a);
        return CLI_ARG_ERROR;
    }
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    const cli_opt *o = find_opt(common_opts, name, n);
    if (o == NULL)
        o = find_opt(opts, name, n);
    if (o == NULL) {
        cli_usage_error(p->cmd, "unknown option '--%.*s'", (int)n, name);
        return CLI_ARG_ERROR;
    }
    if (!o->has_value) {
        if (eq != NULL) {
            cli_usage_error(p->cmd, "option '--%s' takes no value", o->name);
            return CLI_ARG_ERROR;
        }
        return o->id;
    }
    if (eq != NULL) {
        *value = eq + 1;
    } else if (p->i < p->argc) {
        *value = p->argv[p->i++];
    } else {
        cli_usage_error(p->cmd, "option '--%s' needs a value", o->name);
        return CLI_ARG_ERROR;
    }
    return o->id;
}

/* Stores a common option (--url, --config); returns false for any other
 * id. */
bool cli_take_common(cli_common *cm, int id, const char *value)
{
    if (id == CLI_OPT_URL)
        cm->url = value;
    else if (id == CLI_OPT_CONFIG)
        cm->config = value;
    else
        return false;
    return true;
}

/* Parses a decimal number of milliseconds in [lo, hi] for option opt of
 * subcommand cmd. Returns 0, or CLI_USAGE after printing why. */
int cli_parse_ms(const char *cmd, const char *opt, const char *text, int64_t lo,
                 int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi)
        return cli_usage_error(cmd,
                               "--%s wants milliseconds from %lld to %lld, "
                               "not '%s'",
                               opt, (long long)lo, (long long)hi, text);
    *out = v;
    return CLI_OK;
}

/* ------------------------------------------------------------------------ */
/* Settings and connections                                                 */
/* ------------------------------------------------------------------------ */

/* Builds the config every subcommand connects with: the --config file (or
 * the defaults) and the server as the file header says. Returns 0, or an
 * exit status after printing why. */
int cli_make_config(const cli_common *cm, rlock_config **out)
{
    rlock_config *cfg = NULL;
    char err[512];
    int rc;

    *out = NULL;
    if (cm->config != NULL) {
        rc = rlock_config_load_file(&cfg, cm->config, err, sizeof(err));
        if (rc != 0) {
            cli_error("%s", err);
            return rc == RLOCK_ENOMEM ? CLI_SOFTWARE : CLI_CONFIG;
        }
    } else if (rlock_config_new(&cfg) != 0) {
        cli_error("out of memory");
        return CLI_SOFTWARE;
    }

    const char *url = cm->url, *source = "--url";
    const char *env = getenv("REDIS_URL");
    rlock_admin_server srv;
    if (url == NULL && rlock_admin_server_of(cfg, &srv) == RLOCK_EINVAL) {
        if (env != NULL && *env != '\0') {
            url = env;
            source = "REDIS_URL";
        } else {
            url = DEFAULT_URL;
        }
    }
    if (url != NULL) {
        /* what the URL spells out beats the file */
        rc = rlock_admin_config_set_url(cfg, url, cm->config != NULL);
        if (rc != 0) {
            rlock_config_free(cfg);
            if (rc == RLOCK_ENOMEM) {
                cli_error("out of memory");
                return CLI_SOFTWARE;
            }
            cli_error("%s is not a valid URL: expected "
                      "redis[s]://[[user]:password@]host[:port][/db], "
                      "unix:///path/to/redis.sock[?db=N] or "
                      "redis[s]+sentinel://[[user]:password@]host[:port]"
                      "[,host[:port]...]/name[/db] (or redis[s]+cluster://"
                      "..., and valkey for redis in any of them)",
                      source);
            return CLI_CONFIG;
        }
    }
    *out = cfg;
    return CLI_OK;
}

/* Maps an RLOCK_E* code to an exit status. */
int cli_status_of(int rc)
{
    switch (rc) {
    case RLOCK_OK:
        return CLI_OK;
    case RLOCK_ECONN:
    case RLOCK_ETIMEDOUT:
    case RLOCK_EPROTO:
    case RLOCK_ECLOSED:
        return CLI_UNAVAILABLE;
    case RLOCK_EAUTH:
        return CLI_NOPERM;
    case RLOCK_ENOMEM:
        return CLI_SOFTWARE;
    case RLOCK_EINVAL:
        return CLI_USAGE;
    default:
        return CLI_FAILURE;
    }
}

/* Prints why connecting to cfg's server failed with rc. */
static void connect_failed(const rlock_config *cfg, int rc)
{
    rlock_admin_server srv;
    rlock_admin_server_of(cfg, &srv);
    const char *server = srv.text;
    switch (rc) {
    case RLOCK_ECONN:
        cli_error("cannot reach Redis at %s", server);
        break;
    case RLOCK_ETIMEDOUT:
        cli_error("Redis at %s did not answer in time", server);
        break;
    case RLOCK_EAUTH:
        if (!srv.password) {
            cli_error("Redis at %s needs a password, or refused the "
                      "database (see the URL's user:password@ and /db, or "
                      "the config file's username, password and database)",
                      server);
            break;
        }
        cli_error("Redis at %s refused the password or the database "
                  "(see the URL's user:password@ and /db, or the config "
                  "file's username, password and database)",
                  server);
        break;
    case RLOCK_EPROTO:
        cli_error("the server at %s does not answer as Redis does", server);
        break;
    case RLOCK_ETLS:
        cli_error("TLS with %s failed: its certificate is not from a "
                  "trusted CA (the config file's sslTruststore, else the "
                  "system's) or not for this host, or it wants a client "
                  "certificate (sslKeystore) or refuses this one",
                  server);
        break;
    default:
        cli_error("cannot connect to Redis at %s: %s", server,
                  rlock_strerror(rc));
        break;
    }
}

/* Makes the config (kept in *cfg_out when not NULL) and connects an rlock
 * client. Returns 0, or an exit status after printing why. */
int cli_connect(const cli_common *cm, rlock_config **cfg_out,
                rlock_client **out)
{
    rlock_config *cfg;
    *out = NULL;
    if (cfg_out != NULL)
        *cfg_out = NULL;
    int st = cli_make_config(cm, &cfg);
    if (st != 0)
        return st;
    int rc = rlock_client_connect_with(out, NULL, cfg);
    if (rc != 0) {
        connect_failed(cfg, rc);
        rlock_config_free(cfg);
        /* a setting to change, as a bad URL is: TLS files or a CA that
         * does not fit the server */
        return rc == RLOCK_ETLS ? CLI_CONFIG : cli_status_of(rc);
    }
    if (cfg_out != NULL)
        *cfg_out = cfg;
    else
        rlock_config_free(cfg);
    return CLI_OK;
}

/* Parses "CMD [--FLAG] [--kind KIND] [common options] [--] NAME...", the
 * shape of info, unlock and watch: one optional boolean flag (opts[0]),
 * --kind when opts has CLI_OPT_KIND (*kind gets a cli_sync_kind; kind may
 * be NULL otherwise) and at least one non-empty lock name. Returns CLI_OK with *names (the
 * caller frees it) and *n set; CLI_OK with *names NULL when --help was
 * printed; or a usage status. */
int cli_parse_names(const char *cmd, int argc, char **argv, cli_common *cm,
                    const cli_opt *opts, const char *help, bool *flag,
                    int *kind, const char ***names, size_t *n)
{
    cli_parser p;
    const char *value;
    *names = NULL;
    *n = 0;
    const char **list = calloc((size_t)argc + 1, sizeof(*list));
    if (list == NULL) {
        cli_error("out of memory");
        return CLI_SOFTWARE;
    }
    cli_parser_init(&p, cmd, argc, argv);
    size_t count = 0;
    for (int id; (id = cli_next(&p, opts, &value)) != CLI_ARG_END;) {
        if (id == CLI_ARG_ERROR) {
            free(list);
            return CLI_USAGE;
        }
        if (id == CLI_OPT_HELP) {
            fputs(help, stdout);
            free(list);
            return CLI_OK;
        }
        if (id == opts[0].id) {
            *flag = true;
        } else if (id == CLI_OPT_KIND && kind != NULL) {
            cli_sync_kind k;
            if (!cli_sync_kind_parse(value, &k)) {
                free(list);
                return cli_usage_error(cmd, "--kind takes semaphore, "
                                            "permit-semaphore or latch, "
                                            "not '%s'",
                                       value);
            }
            *kind = (int)k;
        } else if (id == CLI_ARG_POSITIONAL) {
            list[count++] = value;
        } else {
            cli_take_common(cm, id, value);
        }
    }
    for (int i = p.rest; i >= 0 && i < argc; i++)
        list[count++] = argv[i]; /* names after "--" */
    int st = CLI_OK;
    if (count == 0)
        st = cli_usage_error(cmd, "missing the lock NAME");
    for (size_t i = 0; st == 0 && i < count; i++)
        if (list[i][0] == '\0')
            st = cli_usage_error(cmd, "a lock NAME cannot be empty");
    if (st != 0) {
        free(list);
        return st;
    }
    *names = list;
    *n = count;
    return CLI_OK;
}

/* Opens an admin connection to c's server (cfg: c's config, for
 * messages). Returns 0, or an exit status after printing why. */
int cli_open(rlock_client *c, const rlock_config *cfg, rlock_admin_conn **out)
{
    int rc = rlock_admin_open(c, out);
    if (rc == 0)
        return CLI_OK;
    connect_failed(cfg, rc);
    return cli_status_of(rc);
}

/* Prints why a command on a failed with rc; returns the exit status. */
int cli_conn_lost(rlock_admin_conn *a, int rc)
{
    if (rc == RLOCK_ENOMEM)
        cli_error("out of memory");
    else if (rc == RLOCK_EPROTO)
        cli_error("bad reply from Redis: %s", rlock_admin_error(a));
    else
        cli_error("lost the connection to Redis: %s",
                  rlock_admin_error(a)[0] ? rlock_admin_error(a)
                                          : rlock_strerror(rc));
    return cli_status_of(rc);
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv, cli_common *cm);
} subcommand;

static const subcommand subcommands[] = {
    {"exec", cli_cmd_exec},
    {"info", cli_cmd_info},
    {"unlock", cli_cmd_unlock},
    {"watch", cli_cmd_watch},
    {NULL, NULL},
};

static const subcommand *find_subcommand(const char *name)
{
    for (const subcommand *s = subcommands; s->name != NULL; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

enum { OPT_VERSION = CLI_OPT_FIRST_OWN };

int main(int argc, char **argv)
{
    static const cli_opt global_opts[] = {
        {"version", OPT_VERSION, false},
        {NULL, 0, false},
    };
    cli_common cm = {NULL, NULL};
    cli_parser p;
    const char *value;

    cli_parser_init(&p, NULL, argc - 1, argv + 1);
    for (;;) {
        int id = cli_next(&p, global_opts, &value);
        if (id == CLI_ARG_ERROR)
            return CLI_USAGE;
        if (id == CLI_ARG_END)
            return cli_usage_error(NULL, "missing a command (exec, info, "
                                         "unlock or watch)");
        if (id == CLI_OPT_HELP) {
            fputs(global_help, stdout);
            return CLI_OK;
        }
        if (id == OPT_VERSION) {
            printf("rlock %s\n", rlock_version_string());
            return CLI_OK;
        }
        if (id == CLI_ARG_POSITIONAL)
            break;
        cli_take_common(&cm, id, value);
    }

    int rest_argc = p.argc - p.i;
    char **rest = p.argv + p.i;
    if (strcmp(value, "help") == 0) {
        if (rest_argc == 0) {
            fputs(global_help, stdout);
            return CLI_OK;
        }
        const subcommand *s = find_subcommand(rest[0]);
        if (s == NULL)
            return cli_usage_error(NULL, "unknown command '%s'", rest[0]);
        char *help_argv[] = {"--help", NULL};
        return s->run(1, help_argv, &cm);
    }
    const subcommand *s = find_subcommand(value);
    if (s == NULL)
        return cli_usage_error(NULL,
                               "unknown command '%s' (exec, info, unlock "
                               "or watch)",
                               value);
    return s->run(rest_argc, rest, &cm);
}
