#include "core.h"
#include "io/io.h"
#include "../proto/proto.h"
