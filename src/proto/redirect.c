/*
 * redirect.c: what an error reply tells a cluster client to do.
 *
 * A cluster answers a call it did not run with an error whose first word
 * says why (CLUSTER-SENTINEL.md 6.3): MOVED and ASK name the slot and the
 * node to ask instead ("MOVED 3999 127.0.0.1:6381"), the others (TRYAGAIN,
 * CLUSTERDOWN, MASTERDOWN, LOADING, READONLY, NOSCRIPT, CROSSSLOT) only the
 * reason. Here that becomes a kind, a slot and an address; what to do about
 * each is the caller's.
 *
 * The address is taken strictly as Redis writes it: the slot and the port in
 * plain decimal, the host up to the last ':' (an IPv6 address keeps its
 * colons, and Redis does not bracket it). Redis 7 leaves the host empty
 * when the node's endpoint is unknown, meaning "the host you asked"; that is
 * kept as "". Anything else after MOVED or ASK is RLOCK_EPROTO: a client
 * that followed a half-read address would send a lock call to a stranger.
 */
#include "cluster.h"

/* for the redisReply type only (proto.h) */
#include <hiredis/hiredis.h>
#include <string.h>

static const struct {
    const char *word;
    rlock__redir_kind kind;
} words[] = {
    {"MOVED", RLOCK__REDIR_MOVED},
    {"ASK", RLOCK__REDIR_ASK},
    {"TRYAGAIN", RLOCK__REDIR_TRYAGAIN},
    {"CLUSTERDOWN", RLOCK__REDIR_CLUSTERDOWN},
    {"MASTERDOWN", RLOCK__REDIR_MASTERDOWN},
    {"LOADING", RLOCK__REDIR_LOADING},
    {"READONLY", RLOCK__REDIR_READONLY},
    {"NOSCRIPT", RLOCK__REDIR_NOSCRIPT},
    {"CROSSSLOT", RLOCK__REDIR_CROSSSLOT},
};

/* Reads a decimal number of 1..5 digits without a leading zero (Redis
 * writes none) from s[0..len) whole. Returns it, or -1. */
static long decimal(const char *s, size_t len)
{
    long v = 0;

    if (len == 0 || len > 5 || (s[0] == '0' && len > 1))
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Whether the len bytes at host can be a host a reply names: shorter than
 * RLOCK__HOST_MAX, with no spaces, control bytes or NULs (it becomes a C
 * string, and a host with a NUL in it would name another). Empty is valid:
 * the caller decides what an unnamed host means. */
bool rlock__host_is_valid(const char *host, size_t len)
{
    if (len >= RLOCK__HOST_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)host[i];
        if (c <= ' ' || c == 0x7f)
            return false;
    }
    return true;
}

/* Reads "<slot> <host>:<port>" (rest, len bytes) into out. Returns 0 or
 * RLOCK_EPROTO. */
static int parse_address(const char *rest, size_t len, rlock__redirect *out)
{
    const char *space = memchr(rest, ' ', len);
    if (space == NULL)
        return RLOCK_EPROTO;
    long slot = decimal(rest, (size_t)(space - rest));
    if (slot < 0 || slot >= RLOCK__SLOT_COUNT)
        return RLOCK_EPROTO;

    const char *host = space + 1;
    size_t addr_len = len - (size_t)(host - rest);
    const char *colon = NULL;
    for (size_t i = 0; i < addr_len; i++) {
        if (host[i] == ':')
            colon = host + i;
    }
    if (colon == NULL)
        return RLOCK_EPROTO;
    size_t host_len = (size_t)(colon - host);
    long port = decimal(colon + 1, addr_len - host_len - 1);
    if (port < 1 || port > 65535 || !rlock__host_is_valid(host, host_len))
        return RLOCK_EPROTO;

    out->slot = (int)slot;
    memcpy(out->host, host, host_len);
    out->host[host_len] = '\0';
    out->port = (int)port;
    return RLOCK_OK;
}

/* Classifies reply r into out: its kind, and for MOVED and ASK the slot and
 * the address. A reply that is no error (or NULL, a lost connection) is
 * RLOCK__REDIR_NONE. Returns 0, or RLOCK_EPROTO for a MOVED or ASK whose
 * address does not read (out->kind says which; slot, host and port stay
 * unset: -1, "", 0). */
int rlock__redirect_parse(const struct redisReply *r, rlock__redirect *out)
{
    out->kind = RLOCK__REDIR_NONE;
    out->slot = -1;
    out->host[0] = '\0';
    out->port = 0;
    if (r == NULL || r->type != REDIS_REPLY_ERROR)
        return RLOCK_OK;
    out->kind = RLOCK__REDIR_OTHER;
    if (r->str == NULL)
        return RLOCK_OK;

    const char *space = memchr(r->str, ' ', r->len);
    size_t word_len = space ? (size_t)(space - r->str) : r->len;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strlen(words[i].word) == word_len &&
            memcmp(words[i].word, r->str, word_len) == 0) {
            out->kind = words[i].kind;
            break;
        }
    }
    if (out->kind != RLOCK__REDIR_MOVED && out->kind != RLOCK__REDIR_ASK)
        return RLOCK_OK;
    if (space == NULL ||
        parse_address(space + 1, r->len - word_len - 1, out) != RLOCK_OK) {
        out->slot = -1;
        out->host[0] = '\0';
        out->port = 0;
        return RLOCK_EPROTO;
    }
    return RLOCK_OK;
}

/* Returns the error word of kind ("MOVED", ...), "" for NONE and OTHER. */
const char *rlock__redirect_name(rlock__redir_kind kind)
{
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (words[i].kind == kind)
            return words[i].word;
    }
    return "";
}
