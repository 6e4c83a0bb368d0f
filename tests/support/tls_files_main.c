/*
 * tls_files_main.c: rt-tls-files, the TLS fixture (tls_fixture.h) for the
 * shell tests. Makes the certificates and prints where they are as shell
 * assignments (TLS_DIR='...' and one per file), for `eval`. The caller
 * removes TLS_DIR. Exit status 0, or 1 after printing why on stderr.
 */
#include <stdio.h>

#include "tls_fixture.h"

int main(void)
{
    rt_tls_files f;
    if (rt_tls_make(&f) != 0) {
        if (f.dir[0] != '\0')
            rt_tls_remove(&f);
        return 1;
    }
    /* rt_tls_make refuses a TMPDIR with a quote: single quotes hold */
    printf("TLS_DIR='%s'\n", f.dir);
    printf("TLS_CA='%s'\n", f.ca_crt);
    printf("TLS_OTHER_CA='%s'\n", f.other_ca_crt);
    printf("TLS_SERVER_CRT='%s'\n", f.server_crt);
    printf("TLS_SERVER_KEY='%s'\n", f.server_key);
    printf("TLS_CLIENT_PEM='%s'\n", f.client_pem);
    return 0;
}
