/*
 * capped_reader.c: see capped_reader.h. The capped constructor table is
 * filled once, from the first reader's defaults; the fuzz targets run on
 * one thread.
 */
#include "capped_reader.h"

#include <stddef.h>

static redisReplyObjectFunctions capped_functions;
static void *(*default_create_array)(const redisReadTask *, int);

static void *create_array_capped(const redisReadTask *task, int elements)
{
    if (elements > RT_FUZZ_MAX_ELEMENTS)
        return NULL;
    return default_create_array(task, elements);
}

redisReader *rt_fuzz_reader_new(void)
{
    redisReader *rd = redisReaderCreate();

    if (rd == NULL)
        return NULL;
    if (default_create_array == NULL) {
        capped_functions = *rd->fn;
        default_create_array = capped_functions.createArray;
        capped_functions.createArray = create_array_capped;
    }
    rd->fn = &capped_functions;
    return rd;
}
