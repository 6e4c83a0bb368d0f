#include "proto.h"
/* the redisReply type only */
#include <hiredis/hiredis.h>
