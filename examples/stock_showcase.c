/*
 * stock_showcase.c: two processes and several threads selling from shared
 * stock, with rlock keeping every sale exact.
 *
 * Three products start with 300 units each, as plain Redis strings
 * (showcase:stock:<product>). Every sale is a read-modify-write that Redis
 * does not make atomic: GET the stock, think for a moment, SET it one lower.
 * Without a lock, two sellers that read the same value would both sell a
 * unit and write the same number back, so more would be sold than existed.
 * Here each sale holds the product's lock, showcase:lock:<product>, taken
 * twice by the same thread (sell_one() and then take_from_stock()), so the
 * reentrant hold count is 2 while the stock is touched.
 *
 * The program forks before it creates anything of rlock's: the parent runs
 * PARENT_THREADS sellers and the child CHILD_THREADS, and each process makes
 * its own client, so each has its own client UUID and the two contend
 * through Redis alone, as two services (or a C service and a Java one using
 * Redisson) would. Sellers run until every product is sold out.
 *
 * It prints a few sample events (the Redis hash of a nested hold, some
 * waits, who sold the last unit of each product), then a table of sales per
 * thread and the check that, for every product, units sold plus units left
 * equals the initial stock. The exit status is 0 only if that check passes
 * and nothing failed.
 *
 * Usage: stock_showcase [redis-url]   (default redis://127.0.0.1:6379)
 * scripts/demo runs it against a private redis-server. It overwrites the
 * keys showcase:stock:*, so do not point it at data you care about.
 */
#define _POSIX_C_SOURCE 200809L

#include <rlock.h>

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NPRODUCTS      3
#define INITIAL_STOCK  300
#define PARENT_THREADS 4
#define CHILD_THREADS  2
#define MAX_THREADS    PARENT_THREADS
#define THINK_US       2000   /* between GET and SET, under the lock */
#define BROWSE_US      1000   /* between two sales, lock not held */
#define START_DELAY_US 300000 /* both processes start selling together */
#define NOTICEABLE_US  5000   /* waits at least this long may be shown */
#define WAIT_SAMPLES   3      /* waits shown per process */

/* Returned by the sale functions besides rlock's own (negative) codes. */
#define SOLD      1
#define SOLD_OUT  0
#define ERR_REDIS (-1) /* a GET/SET of the stock failed */

static const char *const products[NPRODUCTS] = {"apple", "pear", "plum"};

/* What one seller did; the child sends its sellers' stats to the parent
 * through a pipe. */
typedef struct stats {
    int sold[NPRODUCTS];
    int blocked;          /* lock taken only after waiting */
    int blocked_by_other; /* ... for a thread of the other process */
    int64_t wait_us_total;
    int64_t wait_us_max;
    int bad_hold_counts; /* nested hold count other than 2 */
    int errors;
} stats;

typedef struct seller {
    char who[16]; /* "parent/T1" */
    uint64_t tid; /* rlock_thread_id(): the end of its hash field */
    pthread_t thread;
    uint32_t rng;
    redisContext *redis;
    stats st;
} seller;

/* Per-process state, set before the sellers start. */
static const char *url;
static const char *my_process, *other_process; /* "parent", "child" */
static const char *my_client_id;
static seller sellers[MAX_THREADS];
static int nsellers;
static rlock *locks[NPRODUCTS];
static int64_t go_us; /* CLOCK_MONOTONIC: the same clock in both processes */
static atomic_int wait_samples;
static atomic_bool nested_shown;

/* ------------------------------------------------------------- helpers */

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(int64_t us)
{
    if (us <= 0)
        return;
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000),
                          .tv_nsec = (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Prints one line; an event of seller s is stamped with the time since the
 * start. The line goes out in one write(), so lines of the two processes
 * never mix. */
static void event(const seller *s, const char *fmt, ...)
{
    char line[512];
    int n = s == NULL ? snprintf(line, sizeof(line), "  ")
                      : snprintf(line, sizeof(line), "[%6.3f s] %-10s ",
                                 (double)(now_us() - go_us) / 1e6, s->who);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDOUT_FILENO, line, (size_t)n) < 0)
        return;
}

/* Returns true when a hash field "<uuid>:<tid>" belongs to this process's
 * client. */
static bool is_mine(const char *field)
{
    size_t n = strlen(my_client_id);
    return strncmp(field, my_client_id, n) == 0 && field[n] == ':';
}

/* Names the owner of a hash field: one of our sellers, or the other
 * process with its field shortened to "<first 8 of uuid>...:<tid>". */
static void describe_owner(const char *field, char *out, size_t len)
{
    const char *tid = strrchr(field, ':');
    if (is_mine(field) && tid != NULL) {
        uint64_t id = strtoull(tid + 1, NULL, 10);
        for (int i = 0; i < nsellers; i++) {
            if (sellers[i].tid == id) {
                snprintf(out, len, "%s", sellers[i].who);
                return;
            }
        }
    }
    snprintf(out, len, "the %s, field %.8s...%s",
             is_mine(field) ? my_process : other_process, field,
             tid ? tid : "");
}

/* Opens a hiredis connection to url: redis://[[user]:password@]host[:port]
 * [/db] or unix:///path[?db=N], without %-decoding. Returns NULL (after
 * printing why) on failure. hiredis 0.14 has no URL parser of its own. */
static redisContext *redis_open(const char *u)
{
    char buf[512], *host, *pass = NULL, *user = NULL, *p;
    int port = 6379, db = 0;
    redisContext *ctx;
    struct timeval tv = {.tv_sec = 5};

    if (strlen(u) >= sizeof(buf))
        goto bad_url;
    if (strncmp(u, "unix://", 7) == 0) {
        strcpy(buf, u + 7);
        if ((p = strstr(buf, "?db=")) != NULL) {
            *p = '\0';
            db = atoi(p + 4);
        }
        ctx = redisConnectUnixWithTimeout(buf, tv);
    } else if (strncmp(u, "redis://", 8) == 0) {
        strcpy(buf, u + 8);
        host = buf;
        if ((p = strrchr(buf, '@')) != NULL) {
            *p = '\0';
            host = p + 1;
            pass = buf;
            if ((p = strchr(buf, ':')) != NULL) {
                *p = '\0';
                user = *buf ? buf : NULL;
                pass = p + 1;
            }
        }
        if ((p = strchr(host, '/')) != NULL) {
            *p = '\0';
            db = atoi(p + 1);
        }
        if (*host == '[') { /* [::1]:6380 */
            host++;
            if ((p = strchr(host, ']')) == NULL)
                goto bad_url;
            *p++ = '\0';
        } else {
            p = strchr(host, ':');
        }
        if (p != NULL && *p == ':') {
            *p = '\0';
            port = atoi(p + 1);
        }
        ctx = redisConnectWithTimeout(host, port, tv);
    } else {
        goto bad_url;
    }
    if (ctx == NULL || ctx->err != 0) {
        fprintf(stderr, "hiredis: cannot connect to %s: %s\n", u,
                ctx ? ctx->errstr : "out of memory");
        redisFree(ctx);
        return NULL;
    }
    redisReply *r = NULL;
    if (pass != NULL)
        r = user ? redisCommand(ctx, "AUTH %s %s", user, pass)
                 : redisCommand(ctx, "AUTH %s", pass);
    if (r == NULL || r->type != REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        r = db != 0 ? redisCommand(ctx, "SELECT %d", db) : NULL;
    }
    if (r != NULL && r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "hiredis: %s: %s\n", u, r->str);
        freeReplyObject(r);
        redisFree(ctx);
        return NULL;
    }
    freeReplyObject(r);
    return ctx;

bad_url:
    fprintf(stderr, "cannot parse Redis URL %s\n", u);
    return NULL;
}

/* --------------------------------------------------------------- selling */

/* Shows, once per process, what Redis holds for a nested hold: the lock's
 * hash (one field, "<client uuid>:<thread id>" = hold count) and lease. */
static void show_nested(seller *s, int p, int count)
{
    if (atomic_exchange(&nested_shown, true))
        return;
    redisReply *h = redisCommand(s->redis, "HGETALL %s", rlock_name(locks[p]));
    if (h != NULL && h->type == REDIS_REPLY_ARRAY && h->elements == 2) {
        event(s, "holds %s twice: hold count %d, PTTL %" PRId64 " ms",
              products[p], count, rlock_remaining_ttl(locks[p]));
        event(NULL, "%21s HGETALL %s -> %s = %s", "", rlock_name(locks[p]),
              h->element[0]->str, h->element[1]->str);
    }
    freeReplyObject(h);
}

/* Takes product p's lock, waiting if another thread or process has it, and
 * records how long the wait was and whose hold it waited for. */
static int lock_product(seller *s, int p)
{
    rlock *l = locks[p];
    int rc = rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG);
    if (rc != RLOCK_ETIMEDOUT)
        return rc; /* taken at once, or an error */

    /* Busy: look at the holder's field (it may be gone already) */
    char holder[96] = "";
    redisReply *r = redisCommand(s->redis, "HKEYS %s", rlock_name(l));
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
        snprintf(holder, sizeof(holder), "%s", r->element[0]->str);
    freeReplyObject(r);

    int64_t start = now_us();
    rc = rlock_lock(l); /* sleeps until woken by an unlock message */
    if (rc != 0)
        return rc;
    int64_t waited = now_us() - start;
    s->st.blocked++;
    s->st.wait_us_total += waited;
    if (waited > s->st.wait_us_max)
        s->st.wait_us_max = waited;
    s->st.blocked_by_other += *holder && !is_mine(holder);
    if (*holder && waited >= NOTICEABLE_US &&
        atomic_fetch_add(&wait_samples, 1) < WAIT_SAMPLES) {
        char who[96];
        describe_owner(holder, who, sizeof(who));
        event(s,
              "%s busy (held by %s): blocked, woke up holding it "
              "%.1f ms later",
              products[p], who, (double)waited / 1000.0);
    }
    return 0;
}

/* Takes one unit out of product p's stock with a GET and a SET: safe only
 * under the lock. Like any helper that may be called on its own, it takes
 * the lock itself; called from sell_one() that is a re-entry, so the hold
 * count is 2 here. Returns SOLD, SOLD_OUT, ERR_REDIS or an rlock error. */
static int take_from_stock(seller *s, int p)
{
    rlock *l = locks[p];
    int rc = rlock_lock(l); /* already held by this thread: no waiting */
    if (rc != 0)
        return rc;
    int count = rlock_hold_count(l);
    if (count != 2)
        s->st.bad_hold_counts++;
    show_nested(s, p, count);

    rc = ERR_REDIS;
    redisReply *r =
        redisCommand(s->redis, "GET showcase:stock:%s", products[p]);
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        long left = strtol(r->str, NULL, 10);
        if (left <= 0) {
            rc = SOLD_OUT;
        } else {
            sleep_us(THINK_US); /* another seller would read the same value */
            redisReply *w = redisCommand(s->redis, "SET showcase:stock:%s %ld",
                                         products[p], left - 1);
            if (w != NULL && w->type == REDIS_REPLY_STATUS)
                rc = SOLD;
            freeReplyObject(w);
            if (rc == SOLD && left == 1)
                event(s, "sold the last %s", products[p]);
        }
    }
    freeReplyObject(r);

    int urc = rlock_unlock(l); /* hold count 1: still ours */
    return urc != 0 ? urc : rc;
}

/* Sells one unit of product p under its lock. */
static int sell_one(seller *s, int p)
{
    int rc = lock_product(s, p);
    if (rc != 0)
        return rc;
    rc = take_from_stock(s, p);
    if (rc == SOLD)
        s->st.sold[p]++;
    int urc = rlock_unlock(locks[p]); /* hold count 0: released */
    return rc < 0 ? rc : urc != 0 ? urc : rc;
}

static void report_error(seller *s, int rc)
{
    s->st.errors++;
    if (rc == ERR_REDIS)
        event(s, "stock GET/SET failed: %s",
              s->redis->err ? s->redis->errstr : "unexpected reply");
    else
        event(s, "rlock error: %s (%s)", rlock_err_name(rc),
              rlock_strerror(rc));
}

static void *seller_main(void *arg)
{
    seller *s = arg;
    bool sold_out[NPRODUCTS] = {false};
    int open = NPRODUCTS;

    s->tid = rlock_thread_id();
    sleep_us(go_us - now_us());
    while (open > 0) {
        /* a random product that is not known to be sold out */
        s->rng = s->rng * 1103515245u + 12345u;
        int k = (int)((s->rng >> 16) % (unsigned)open), p = 0;
        for (;; p++)
            if (!sold_out[p] && k-- == 0)
                break;
        int rc = sell_one(s, p);
        if (rc == SOLD_OUT) {
            sold_out[p] = true;
            open--;
        } else if (rc < 0) {
            report_error(s, rc);
            break;
        }
        sleep_us(BROWSE_US);
    }
    return NULL;
}

/* Runs n sellers named "<process>/T<i>" in this process, with a fresh
 * rlock client. Fills st[0..n). Returns 0, or 1 if setting up failed. */
static int run_process(const char *process, int n, stats *st)
{
    rlock_client *client;
    int rc = rlock_client_connect(&client, url), status = 0;

    if (rc != 0) {
        fprintf(stderr, "%s: connect %s: %s\n", process, url,
                rlock_strerror(rc));
        return 1;
    }
    my_client_id = rlock_client_id(client);
    event(NULL, "%-6s pid %ld, rlock client %s", process, (long)getpid(),
          my_client_id);
    for (int p = 0; p < NPRODUCTS; p++) {
        char name[64];
        snprintf(name, sizeof(name), "showcase:lock:%s", products[p]);
        if (rlock_get(client, name, &locks[p]) != 0)
            status = 1;
    }

    int started = 0;
    for (int i = 0; status == 0 && i < n; i++) {
        seller *s = &sellers[i];
        snprintf(s->who, sizeof(s->who), "%s/T%d", process, i + 1);
        s->rng = (uint32_t)getpid() * 2654435761u + (uint32_t)i;
        s->redis = redis_open(url);
        if (s->redis == NULL ||
            pthread_create(&s->thread, NULL, seller_main, s) != 0) {
            redisFree(s->redis);
            status = 1;
            break;
        }
        nsellers = ++started;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(sellers[i].thread, NULL);
        redisFree(sellers[i].redis);
        st[i] = sellers[i].st;
        if (st[i].errors != 0 || st[i].bad_hold_counts != 0)
            status = 1;
    }

    for (int p = 0; p < NPRODUCTS; p++)
        rlock_free(locks[p]);
    rlock_client_free(client);
    return started == n ? status : 1;
}

/* ------------------------------------------------------------ reporting */

static void print_row(const char *who, const stats *s)
{
    int total = 0;
    printf("  %-10s", who);
    for (int p = 0; p < NPRODUCTS; p++) {
        printf(" %6d", s->sold[p]);
        total += s->sold[p];
    }
    printf(" %6d %8d %7d %9.1f ms %7.2f ms\n", total, s->blocked,
           s->blocked_by_other, (double)s->wait_us_max / 1000.0,
           s->blocked ? (double)s->wait_us_total / 1000.0 / s->blocked : 0.0);
}

/* Prints the table and the check; returns true when every product adds
 * up. */
static bool report(redisContext *redis, const stats *parent, const stats *child)
{
    stats all;
    memset(&all, 0, sizeof(all));
    int nested_bad = 0;
    printf("\nsales (units) and waits per thread:\n");
    printf("  %-10s", "seller");
    for (int p = 0; p < NPRODUCTS; p++)
        printf(" %6s", products[p]);
    printf(" %6s %8s %7s %12s %10s\n", "total", "blocked", "x-proc", "max wait",
           "avg wait");
    for (int i = 0; i < PARENT_THREADS + CHILD_THREADS; i++) {
        const stats *s =
            i < PARENT_THREADS ? &parent[i] : &child[i - PARENT_THREADS];
        char who[16];
        if (i < PARENT_THREADS)
            snprintf(who, sizeof(who), "parent/T%d", i + 1);
        else
            snprintf(who, sizeof(who), "child/T%d", i - PARENT_THREADS + 1);
        print_row(who, s);
        for (int p = 0; p < NPRODUCTS; p++)
            all.sold[p] += s->sold[p];
        all.blocked += s->blocked;
        all.blocked_by_other += s->blocked_by_other;
        all.wait_us_total += s->wait_us_total;
        if (s->wait_us_max > all.wait_us_max)
            all.wait_us_max = s->wait_us_max;
        nested_bad += s->bad_hold_counts;
    }
    print_row("all", &all);
    printf("  (blocked: sales whose lock was busy, so the seller slept until "
           "woken;\n   x-proc: of those, how many were held by the other "
           "process)\n");

    bool ok = true;
    printf("\ncheck: sold + left == %d for every product\n", INITIAL_STOCK);
    for (int p = 0; p < NPRODUCTS; p++) {
        long left = -1;
        redisReply *r =
            redisCommand(redis, "GET showcase:stock:%s", products[p]);
        if (r != NULL && r->type == REDIS_REPLY_STRING)
            left = strtol(r->str, NULL, 10);
        freeReplyObject(r);
        bool good = left >= 0 && all.sold[p] + left == INITIAL_STOCK;
        printf("  %-6s sold %3d + left %3ld = %3ld  %s\n", products[p],
               all.sold[p], left, all.sold[p] + left,
               good ? "ok" : "MISMATCH (lost update)");
        ok = ok && good;
    }
    printf("nested hold count was 2 in %s sale\n",
           nested_bad == 0 ? "every" : "NOT every");
    return ok && nested_bad == 0;
}

int main(int argc, char **argv)
{
    url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";

    /* Fill the shelves before anyone forks or connects with rlock */
    redisContext *redis = redis_open(url);
    if (redis == NULL)
        return 1;
    for (int p = 0; p < NPRODUCTS; p++)
        freeReplyObject(redisCommand(redis, "SET showcase:stock:%s %d",
                                     products[p], INITIAL_STOCK));
    redisFree(redis);
    printf("stock_showcase: %d products x %d units, locks showcase:lock:"
           "<product>; %d seller threads in this process, %d in a forked "
           "child, each process with its own rlock client\n",
           NPRODUCTS, INITIAL_STOCK, PARENT_THREADS, CHILD_THREADS);
    fflush(stdout);

    go_us = now_us() + START_DELAY_US;
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        stats st[CHILD_THREADS];
        memset(st, 0, sizeof(st));
        close(fds[0]);
        my_process = "child";
        other_process = "parent";
        int status = run_process("child", CHILD_THREADS, st);
        if (write(fds[1], st, sizeof(st)) != (ssize_t)sizeof(st))
            status = 1;
        close(fds[1]);
        exit(status);
    }

    close(fds[1]);
    stats parent[PARENT_THREADS], child[CHILD_THREADS];
    memset(parent, 0, sizeof(parent));
    memset(child, 0, sizeof(child));
    my_process = "parent";
    other_process = "child";
    int status = run_process("parent", PARENT_THREADS, parent);
    ssize_t got = read(fds[0], child, sizeof(child));
    close(fds[0]);
    int child_status = 0;
    if (waitpid(pid, &child_status, 0) != pid || !WIFEXITED(child_status) ||
        WEXITSTATUS(child_status) != 0 || got != (ssize_t)sizeof(child)) {
        fprintf(stderr, "the child process failed\n");
        status = 1;
    }
    double secs = (double)(now_us() - go_us) / 1e6;

    redis = redis_open(url);
    if (redis == NULL)
        return 1;
    bool ok = report(redis, parent, child);
    redisFree(redis);
    printf("%s in %.1f s\n", ok && status == 0 ? "OK" : "FAILED", secs);
    return ok && status == 0 ? 0 : 1;
}
