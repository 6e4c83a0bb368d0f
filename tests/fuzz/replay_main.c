/*
 * replay_main.c: a main() for the fuzz targets when libFuzzer is not
 * available (gcc, or clang without the sanitizers): runs
 * LLVMFuzzerTestOneInput() once on every file named on the command line,
 * and on every regular file inside each directory named there, in name
 * order. Returns 0, or 1 if a file cannot be read or nothing was run (an
 * empty corpus proves nothing). A failed check aborts, as it does under
 * libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on the contents of path; returns 0 or -1. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    do {
        if (len == cap) {
            unsigned char *grown = realloc(buf, cap ? cap * 2 : 4096);

            if (grown == NULL) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = grown;
            cap = cap ? cap * 2 : 4096;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Runs the target on every regular file in dir; returns the number run,
 * or -1. */
static int run_dir(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name), ran = 0;

    if (n < 0) {
        perror(dir);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]->d_name) + 2;
        char *path = malloc(len);
        struct stat st;

        if (path != NULL) {
            snprintf(path, len, "%s/%s", dir, names[i]->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (run_file(path) != 0)
                    ran = -1;
                else if (ran >= 0)
                    ran++;
            }
            free(path);
        }
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    int failed = 0, total = 0;

    for (int i = 1; i < argc; i++) {
        struct stat st;
        int ran;

        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            failed = 1;
            continue;
        }
        ran = S_ISDIR(st.st_mode) ? run_dir(argv[i])
                                  : (run_file(argv[i]) == 0 ? 1 : -1);
        if (ran < 0)
            failed = 1;
        else
            total += ran;
    }
    printf("%s: %d input(s) replayed\n", argv[0], total);
    return failed || total == 0;
}
