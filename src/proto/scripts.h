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
extern const rlock__script rlock__script_lock_release_one_key;
extern const rlock__script rlock__script_lock_force_release;
extern const rlock__script rlock__script_lock_renew;
extern const rlock__script rlock__script_lock_release_owner;
extern const rlock__script rlock__script_lock_drop;
extern const rlock__script rlock__script_fair_drop;
extern const rlock__script rlock__script_lock_acquire_queued;
extern const rlock__script rlock__script_lock_give_up;
extern const rlock__script rlock__script_fair_acquire;
extern const rlock__script rlock__script_fair_give_up;
extern const rlock__script rlock__script_fair_release;
extern const rlock__script rlock__script_fair_force_release;
extern const rlock__script rlock__script_fenced_acquire;
extern const rlock__script rlock__script_read_acquire;
extern const rlock__script rlock__script_read_release;
extern const rlock__script rlock__script_read_renew;
extern const rlock__script rlock__script_write_acquire;
extern const rlock__script rlock__script_write_release;
extern const rlock__script rlock__script_write_drop;
extern const rlock__script rlock__script_rw_force_release;
extern const rlock__script rlock__script_rw_is_locked;
/* semaphores (proto/semaphore.c) */
extern const rlock__script rlock__script_semaphore_try_acquire;
extern const rlock__script rlock__script_semaphore_release;
extern const rlock__script rlock__script_semaphore_set_permits;
extern const rlock__script rlock__script_semaphore_add_permits;
extern const rlock__script rlock__script_semaphore_drain;
extern const rlock__script rlock__script_permit_acquire;
extern const rlock__script rlock__script_permit_release;
extern const rlock__script rlock__script_permit_update_lease;
extern const rlock__script rlock__script_permit_available;
extern const rlock__script rlock__script_permit_add_permits;
extern const rlock__script rlock__script_latch_try_set_count;
extern const rlock__script rlock__script_latch_count_down;
extern const rlock__script rlock__script_latch_delete;

/* Every script above (proto/kinds.c). */
extern const rlock__script *const rlock__all_scripts[];
extern const size_t rlock__all_scripts_count;

#endif
