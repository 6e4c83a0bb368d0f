#include "rlock.h"
#include <stdio.h>
