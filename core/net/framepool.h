/* Request frame buffers a network worker reuses.
 *
 * A frame of a large request (a produce batch) that is malloc'ed and freed
 * per request costs page faults on every request: glibc gives big blocks
 * back to the kernel when they are freed (mmap'd blocks, or a thread
 * arena's heap trimmed by madvise), so the next recv() into a new block
 * faults every page in again. Measured with librdkafka's default batches
 * of 100-byte records: ~4 000 minor faults per million records and about a
 * third of the server's CPU. A worker keeps a few such buffers instead.
 *
 * One pool per worker, used only on that worker's thread: no lock. */
#ifndef SAMSA_NET_FRAMEPOOL_H
#define SAMSA_NET_FRAMEPOOL_H

#include <stddef.h>
#include <stdint.h>

/* Frames below this size come from malloc as before: glibc keeps small
 * blocks in its bins without giving them back. */
#define FRAME_POOL_MIN_BYTES (64 * 1024)
#define FRAME_POOL_SLOTS 8
/* The most a worker keeps while idle (its RSS pays for it). */
#define FRAME_POOL_MAX_BYTES (8 * 1024 * 1024)

struct frame_pool {
    struct frame_pool_slot {
        uint8_t *p;
        size_t cap;
    } slot[FRAME_POOL_SLOTS];
    int n;
    size_t bytes;
};

/* A buffer of at least len bytes, owned by the caller; *cap is its real
 * size, to hand back to frame_pool_put (0: not pooled, free() it). */
uint8_t *frame_pool_get(struct frame_pool *fp, size_t len, size_t *cap);

/* Takes ownership of p (cap as frame_pool_get said; 0 or an unknown size:
 * freed at once). */
void frame_pool_put(struct frame_pool *fp, uint8_t *p, size_t cap);

/* Frees every kept buffer; the pool is empty and usable afterwards. */
void frame_pool_clear(struct frame_pool *fp);

#endif
