/* A program that links rlock and calls it without a server: prints the
 * library's version and exits 0 when the header and library agree. */
#include <rlock.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    const char *v = rlock_version_string();
    printf("rlock %s\n", v);
    if (strncmp(v, RLOCK_VERSION_STRING, strlen(RLOCK_VERSION_STRING)) != 0)
        return 1;
    return strcmp(rlock_err_name(RLOCK_ENOMEM), "RLOCK_ENOMEM") == 0 ? 0 : 1;
}
