/*
 * tls_fixture.c: a throw-away PKI for the TLS tests (see tls_fixture.h).
 *
 * The openssl tool runs with a configuration file of our own, so what the
 * certificates hold (CA basic constraints, key usage, the server's names)
 * does not depend on the system's openssl.cnf. EC keys: they take
 * milliseconds to make, where RSA would take a noticeable part of a test's
 * budget on a loaded machine.
 */
#include "tls_fixture.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char conf_text[] =
    "[req]\n"
    "distinguished_name = dn\n"
    "prompt = no\n"
    "[dn]\n"
    "CN = rlock-test\n"
    "[ca_ext]\n"
    "basicConstraints = critical,CA:TRUE\n"
    "keyUsage = critical,keyCertSign,cRLSign\n"
    "subjectKeyIdentifier = hash\n"
    "[server_ext]\n"
    "basicConstraints = CA:FALSE\n"
    "keyUsage = critical,digitalSignature\n"
    "extendedKeyUsage = serverAuth\n"
    "subjectAltName = DNS:localhost,IP:127.0.0.1\n"
    "[client_ext]\n"
    "basicConstraints = CA:FALSE\n"
    "keyUsage = critical,digitalSignature\n"
    "extendedKeyUsage = clientAuth\n";

#define NEW_KEY "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"

/* Runs one openssl command line in f->dir, its output going to openssl.log;
 * returns 0, or -1 after printing the command and that log. */
static int run(rt_tls_files *f, const char *args)
{
    char cmd[1024];
    char line[512];
    FILE *log;
    int n = snprintf(cmd, sizeof(cmd),
                     "cd '%s' && openssl %s >openssl.log 2>&1", f->dir, args);
    if (n < 0 || (size_t)n >= sizeof(cmd))
        return -1;
    if (system(cmd) == 0)
        return 0;
    fprintf(stderr, "tls_fixture: failed: openssl %s\n", args);
    snprintf(line, sizeof(line), "%s/openssl.log", f->dir);
    log = fopen(line, "r");
    while (log != NULL && fgets(line, sizeof(line), log) != NULL)
        fputs(line, stderr);
    if (log != NULL)
        fclose(log);
    return -1;
}

/* Makes a CA named cn into <name>.crt and <name>.key. */
static int make_ca(rt_tls_files *f, const char *name, const char *cn)
{
    char args[512];
    snprintf(args, sizeof(args),
             "req -x509 -new " NEW_KEY " -config openssl.cnf -extensions "
             "ca_ext -days 3 -subj /CN=%s -keyout %s.key -out %s.crt",
             cn, name, name);
    return run(f, args);
}

/* Makes <name>.key and <name>.crt signed by ca with extension section ext. */
static int make_leaf(rt_tls_files *f, const char *name, const char *cn,
                     const char *ext)
{
    char args[512];
    snprintf(args, sizeof(args),
             "req -new " NEW_KEY " -config openssl.cnf -subj /CN=%s "
             "-keyout %s.key -out %s.csr",
             cn, name, name);
    if (run(f, args) != 0)
        return -1;
    snprintf(args, sizeof(args),
             "x509 -req -in %s.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             "-days 3 -extfile openssl.cnf -extensions %s -out %s.crt",
             name, ext, name);
    return run(f, args);
}

static void path_of(rt_tls_files *f, char *out, const char *file)
{
    snprintf(out, RT_TLS_PATH, "%s/%s", f->dir, file);
}

/* Writes the files named in parts (NULL-terminated), one after the other,
 * into out. Returns 0 or -1. */
static int concatenate(const char *out, const char *const *parts)
{
    FILE *o = fopen(out, "wb");
    char buf[4096];
    size_t n;
    int rc = o != NULL ? 0 : -1;

    for (; rc == 0 && *parts != NULL; parts++) {
        FILE *in = fopen(*parts, "rb");
        if (in == NULL) {
            rc = -1;
            break;
        }
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
            if (fwrite(buf, 1, n, o) != n)
                rc = -1;
        fclose(in);
    }
    if (o != NULL && fclose(o) != 0)
        rc = -1;
    if (rc != 0)
        fprintf(stderr, "tls_fixture: cannot write %s\n", out);
    return rc;
}

int rt_tls_make(rt_tls_files *f)
{
    const char *tmp = getenv("TMPDIR");
    char conf[RT_TLS_PATH];
    FILE *out;

    memset(f, 0, sizeof(*f));
    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 150 ||
        strchr(tmp, '\'') != NULL)
        tmp = "/tmp";
    snprintf(f->dir, sizeof(f->dir), "%s/rlock-tls-XXXXXX", tmp);
    if (mkdtemp(f->dir) == NULL) {
        perror("tls_fixture: mkdtemp");
        f->dir[0] = '\0';
        return -1;
    }
    path_of(f, conf, "openssl.cnf");
    out = fopen(conf, "w");
    if (out == NULL || fputs(conf_text, out) < 0) {
        perror("tls_fixture: openssl.cnf");
        if (out != NULL)
            fclose(out);
        return -1;
    }
    fclose(out);
    if (make_ca(f, "ca", "rlock-test-ca") != 0 ||
        make_ca(f, "other_ca", "rlock-other-ca") != 0 ||
        make_leaf(f, "server", "localhost", "server_ext") != 0 ||
        make_leaf(f, "client", "rlock-test-client", "client_ext") != 0 ||
        run(f, "version") != 0) /* an openssl that runs at all */
        return -1;
    path_of(f, f->ca_dir, "cadir");
    if (mkdir(f->ca_dir, 0700) != 0 ||
        run(f, "x509 -in ca.crt -out cadir/ca.pem") != 0 ||
        run(f, "rehash cadir") != 0)
        return -1;
    path_of(f, f->ca_crt, "ca.crt");
    path_of(f, f->server_crt, "server.crt");
    path_of(f, f->server_key, "server.key");
    path_of(f, f->client_crt, "client.crt");
    path_of(f, f->client_key, "client.key");
    path_of(f, f->other_ca_crt, "other_ca.crt");
    path_of(f, f->client_pem, "client_both.pem");
    path_of(f, f->client_key_encrypted, "client_encrypted.key");
    const char *both[] = {f->client_crt, f->client_key, NULL};
    if (concatenate(f->client_pem, both) != 0 ||
        run(f, "pkey -in client.key -aes256 -passout pass:x "
               "-out client_encrypted.key") != 0)
        return -1;
    return 0;
}

const char *const *rt_tls_server_args(rt_tls_files *f, int auth_clients)
{
    const char **a = f->server_args;
    int n = 0;
    a[n++] = "--tls-cert-file";
    a[n++] = f->server_crt;
    a[n++] = "--tls-key-file";
    a[n++] = f->server_key;
    a[n++] = "--tls-ca-cert-file";
    a[n++] = f->ca_crt;
    a[n++] = "--tls-auth-clients";
    a[n++] = auth_clients ? "yes" : "no";
    a[n] = NULL;
    return f->server_args;
}

/* Removes every file in dir (no subdirectories but one level), then dir. */
static void remove_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[RT_TLS_PATH + 64];
    struct stat st;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && depth > 0)
            remove_tree(path, depth - 1);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

void rt_tls_remove(rt_tls_files *f)
{
    if (f->dir[0] == '\0' || getenv("RLOCK_TEST_KEEP_DIRS") != NULL)
        return;
    remove_tree(f->dir, 1);
    f->dir[0] = '\0';
}
