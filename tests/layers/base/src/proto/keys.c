#include "proto.h"
#include "rlock.h"
#include <hiredis/read.h>
#include <string.h>
