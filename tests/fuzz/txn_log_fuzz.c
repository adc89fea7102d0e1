/* Fuzz target: __transaction_state records as the transaction
 * coordinator loads them (coord/txn_log.c), from bytes it may not have
 * written itself. Input: a flag byte (bit 0: tombstone), a 2-byte key
 * length, the key, the value. Nothing may crash, hang or read out of
 * bounds; what decodes must re-encode to bytes that decode to the same
 * metadata. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coord/txn_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    bool tomb_in = data[0] & 1;
    size_t klen = (size_t)data[1] << 8 | data[2];
    if (klen > size - 3)
        klen = size - 3;
    kbytes_t key = {data + 3, (int32_t)klen};
    kbytes_t value = tomb_in ? (kbytes_t){NULL, -1} : (kbytes_t){data + 3 + klen, (int32_t)(size - 3 - klen)};
    kstr_t id;
    bool tomb;
    struct txn_meta *m = NULL;
    if (txn_log_parse(key, value, &id, &tomb, &m) != 0 || !m)
        return 0;
    struct buf k = BUF_INIT, v = BUF_INIT;
    txn_log_key(&k, id);
    txn_log_value(&v, m);
    kstr_t id2;
    bool tomb2;
    struct txn_meta *m2 = NULL;
    if (txn_log_parse((kbytes_t){k.data, (int32_t)k.len}, (kbytes_t){v.data, (int32_t)v.len}, &id2, &tomb2, &m2) !=
            0 ||
        !m2 || id2.len != id.len || m2->producer_id != m->producer_id || m2->epoch != m->epoch ||
        m2->state != m->state || (m->state != TXN_EMPTY && m2->nparts != m->nparts))
        abort();
    txn_meta_free(m2);
    txn_meta_free(m);
    buf_free(&k);
    buf_free(&v);
    return 0;
}
