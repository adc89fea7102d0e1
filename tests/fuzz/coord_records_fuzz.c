/* Fuzz target: what the group coordinator decodes from bytes it did not
 * write itself. A __consumer_offsets record (key and value, or a
 * tombstone) as coord loads it at startup — the log may hold records of
 * other Kafka versions or a corrupt batch whose CRC happened to match —
 * and a member's consumer-protocol subscription as JoinGroup carries it.
 * Input: a flag byte (bit 0: tombstone), a 2-byte key length, the key,
 * the value; the whole input is also read as a subscription and an
 * assignment and hashed as a group id. Nothing may crash, hang or read
 * out of bounds; a decoded key must re-encode. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord/records.h"
#include "proto/gen/consumer_protocol_assignment.h"
#include "proto/gen/consumer_protocol_subscription.h"

static void consumer_protocol(const uint8_t *data, size_t size)
{
    for (int kind = 0; kind < 2; kind++) {
        struct arena ar = ARENA_INIT;
        struct kreader r;
        kr_init(&r, data, size, &ar);
        int16_t v = kr_i16(&r);
        if (v < 0)
            v = 0;
        if (kind == 0) {
            consumer_protocol_subscription_t s;
            if (v > CONSUMER_PROTOCOL_SUBSCRIPTION_MAX_VERSION)
                v = CONSUMER_PROTOCOL_SUBSCRIPTION_MAX_VERSION;
            (void)consumer_protocol_subscription_decode(&r, v, &s);
        } else {
            consumer_protocol_assignment_t a;
            if (v > CONSUMER_PROTOCOL_ASSIGNMENT_MAX_VERSION)
                v = CONSUMER_PROTOCOL_ASSIGNMENT_MAX_VERSION;
            (void)consumer_protocol_assignment_decode(&r, v, &a);
        }
        arena_free(&ar);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    consumer_protocol(data, size);
    (void)coord_partition_for((kstr_t){(const char *)data, (int32_t)(size > 0x7fff ? 0x7fff : size)}, 50);
    if (size < 3)
        return 0;
    bool tombstone = data[0] & 1;
    size_t klen = (size_t)data[1] << 8 | data[2];
    if (klen > size - 3)
        klen = size - 3;
    kbytes_t key = {data + 3, (int32_t)klen};
    kbytes_t value = tombstone ? (kbytes_t){NULL, -1} : (kbytes_t){data + 3 + klen, (int32_t)(size - 3 - klen)};
    struct arena ar = ARENA_INIT;
    struct crec c;
    if (crec_parse(key, value, &ar, &c) == 0) {
        struct buf out = BUF_INIT;
        if (c.kind == CREC_OFFSET)
            crec_offset_key(&out, c.okey.group, c.okey.topic, c.okey.partition);
        else if (c.kind == CREC_GROUP)
            crec_group_key(&out, c.gkey.group);
        buf_free(&out);
    }
    arena_free(&ar);
    return 0;
}
