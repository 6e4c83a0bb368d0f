/*
 * ids.c: the text forms of the ids Redisson puts in Redis: owner tags
 * ("<uuid>:<tid>"), version 4 UUIDs in Java's form and hex request ids.
 * Formatting only: the random bytes come from the caller (core/owner.c reads
 * them from the kernel), so the forms are tested with fixed bytes.
 */
#include "proto.h"

#include <stdio.h>

/* Writes the 2n lowercase hex digits of in[0..n) and a NUL to out. */
void rlock__hex(char *out, const unsigned char *in, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Writes the version 4 UUID made of 16 random bytes in Java's lowercase
 * 8-4-4-4-12 form (the version and variant bits are set here). */
void rlock__uuid4_format(char out[RLOCK__UUID_LEN + 1],
                         const unsigned char random[16])
{
    unsigned char b[16];
    char hex[33];
    for (size_t i = 0; i < sizeof(b); i++)
        b[i] = random[i];
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    rlock__hex(hex, b, sizeof(b));
    snprintf(out, RLOCK__UUID_LEN + 1, "%.8s-%.4s-%.4s-%.4s-%.12s", hex,
             hex + 8, hex + 12, hex + 16, hex + 20);
}

/* Writes the hash field "<uuid>:<tid>" that marks an owner. */
void rlock__owner_tag(char out[RLOCK__OWNER_MAX], const char *uuid,
                      uint64_t tid)
{
    snprintf(out, RLOCK__OWNER_MAX, "%s:%llu", uuid, (unsigned long long)tid);
}
