/*
 * capped_reader.h: hiredis's own reply reader for the fuzz targets that
 * feed it RESP, with one change: an array header of more than
 * RT_FUZZ_MAX_ELEMENTS elements is refused as on a failed allocation.
 *
 * hiredis's reader accepts any count it can allocate, so a 2^30-element
 * header would make the fuzzer report an out-of-memory "crash" in hiredis
 * rather than anything in rlock; everything else is hiredis's code as it
 * is.
 */
#ifndef RLOCK_FUZZ_CAPPED_READER_H
#define RLOCK_FUZZ_CAPPED_READER_H

#include <hiredis/hiredis.h>

#define RT_FUZZ_MAX_ELEMENTS 4096

/* A reader with hiredis's default reply constructors, arrays capped; free
 * it with redisReaderFree(). NULL when out of memory. */
redisReader *rt_fuzz_reader_new(void);

#endif
