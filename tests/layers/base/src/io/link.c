#include "io.h"
#include "proto/proto.h"
#include <hiredis/hiredis.h>
#include <ev.h>
#include <openssl/ssl.h>
#include <pthread.h>
