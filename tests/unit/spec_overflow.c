/*
 * spec_overflow.c: a script call with one argument more than
 * RLOCK__SPEC_ARGS must not compile (test_spec_overflow_rejected builds
 * this file and expects the static assertion's message). Built with
 * SPEC_ARGS_FIT, the same call at the limit compiles, so the failure is the
 * limit and nothing else.
 */
#include "proto/proto.h"

int main(void)
{
    rlock__spec s = {0};
#ifdef SPEC_ARGS_FIT
    RLOCK__SPEC_SET(&s, "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
                    "11");
#else
    RLOCK__SPEC_SET(&s, "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
                    "11", "12");
#endif
    return s.argc == RLOCK__SPEC_ARGS ? 0 : 1;
}
