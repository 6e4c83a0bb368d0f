/* spin.c: work in progress */
#include "internal.h"
