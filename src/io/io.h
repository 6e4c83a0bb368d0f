/* io.h: what the transport's pieces return besides bytes and RLOCK_E* codes. */
#ifndef RLOCK_IO_H
#define RLOCK_IO_H

/* The operation cannot go on until the socket is readable or writable;
 * call it again then (positive, so never mistaken for an RLOCK_E* code). */
#define RLOCK__IO_WANT_READ 1
#define RLOCK__IO_WANT_WRITE 2

#endif /* RLOCK_IO_H */
