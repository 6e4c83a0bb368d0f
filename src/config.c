/*
 * config.c: the client's settings with Redisson's defaults, and validation.
 * A config is plain data: the client copies it at connect time.
 */
#include "internal.h"

#include <stdlib.h>

#define RLOCK__MS_MAX ((int64_t)INT32_MAX)

/* Fills cfg with Redisson 4.x's defaults (see rlock_config_new()). */
void rlock__config_defaults(rlock_config *cfg)
{
    cfg->watchdog_timeout_ms = 30000;
    cfg->command_timeout_ms = 3000;
    cfg->connect_timeout_ms = 10000;
    cfg->retry_attempts = 3;
    cfg->retry_interval_ms = 1500;
    cfg->recheck_interval_ms = 2000;
    cfg->connections = 2;
}

/* Returns the unlock latch lifetime: long enough to outlive every retry of
 * one unlock, computed as Redisson does (attempts x (timeout + delay)). */
int64_t rlock__config_latch_ms(const rlock_config *cfg)
{
    int64_t ms = (int64_t)(cfg->retry_attempts + 1) *
                 (cfg->command_timeout_ms + cfg->retry_interval_ms);
    return ms < 1 ? 1 : ms;
}

int rlock_config_new(rlock_config **out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = malloc(sizeof(**out));
    if (*out == NULL)
        return RLOCK_ENOMEM;
    rlock__config_defaults(*out);
    return RLOCK_OK;
}

void rlock_config_free(rlock_config *cfg)
{
    free(cfg);
}

/* Stores v into *field when lo <= v <= hi; returns 0 or RLOCK_EINVAL. */
static int set_ms(rlock_config *cfg, int64_t *field, int64_t v, int64_t lo)
{
    if (cfg == NULL || v < lo || v > RLOCK__MS_MAX)
        return RLOCK_EINVAL;
    *field = v;
    return RLOCK_OK;
}

int rlock_config_set_watchdog_timeout(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->watchdog_timeout_ms : NULL, ms, 30);
}

int rlock_config_set_command_timeout(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->command_timeout_ms : NULL, ms, 1);
}

int rlock_config_set_connect_timeout(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->connect_timeout_ms : NULL, ms, 1);
}

int rlock_config_set_retry_interval(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->retry_interval_ms : NULL, ms, 0);
}

int rlock_config_set_recheck_interval(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->recheck_interval_ms : NULL, ms, 1);
}

int rlock_config_set_retry_attempts(rlock_config *cfg, int n)
{
    if (cfg == NULL || n < 0 || n > 100)
        return RLOCK_EINVAL;
    cfg->retry_attempts = n;
    return RLOCK_OK;
}

int rlock_config_set_connections(rlock_config *cfg, int n)
{
    if (cfg == NULL || n < 1 || n > 64)
        return RLOCK_EINVAL;
    cfg->connections = n;
    return RLOCK_OK;
}
