#include "core/core.h"
#include "rlock.h"
