/* kinds.c: work in progress */
#include "internal.h"
