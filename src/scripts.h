/*
 * scripts.h: the Lua scripts under scripts/NAME.lua, embedded at build time.
 *
 * cmake/embed_scripts.cmake turns each scripts/NAME.lua into the byte array
 * behind rlock__script_NAME, with the SHA-1 of exactly those bytes, which is
 * the name EVALSHA finds them under once SCRIPT LOAD (or one EVAL) has run.
 */
#ifndef RLOCK_SCRIPTS_H
#define RLOCK_SCRIPTS_H

#include <stddef.h>

typedef struct rlock__script {
    const char *name;          /* file name without .lua */
    const unsigned char *body; /* the file's bytes, not NUL-terminated */
    size_t len;
    const char *sha1; /* 40 lowercase hex digits */
} rlock__script;

extern const rlock__script rlock__script_lock_acquire;
extern const rlock__script rlock__script_lock_release;
extern const rlock__script rlock__script_lock_force_release;
extern const rlock__script rlock__script_lock_renew;
extern const rlock__script rlock__script_lock_release_owner;

#endif
