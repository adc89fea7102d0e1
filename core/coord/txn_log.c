/* __transaction_state record encoding (see txn_log.h): Kafka's
 * TransactionLog.keyToBytes / valueToBytes / readTxnRecordValue. */
#include "coord/txn_log.h"

#include <string.h>

#include "proto/gen/transaction_log_key.h"
#include "proto/gen/transaction_log_value.h"

#define KEY_VERSION 0

void txn_log_key(struct buf *out, kstr_t transactional_id)
{
    transaction_log_key_t k;
    transaction_log_key_init(&k);
    k.transactional_id = transactional_id;
    struct kwriter w;
    kw_init(&w);
    kw_i16(&w, KEY_VERSION);
    transaction_log_key_encode(&w, KEY_VERSION, &k);
    buf_append(out, w.b.data, w.b.len);
    kw_free(&w);
}

void txn_log_value(struct buf *out, const struct txn_meta *m)
{
    struct arena a = ARENA_INIT;
    transaction_log_value_t v;
    transaction_log_value_init(&v);
    v.producer_id = m->producer_id;
    v.previous_producer_id = m->prev_producer_id;
    v.next_producer_id = m->next_producer_id;
    v.producer_epoch = m->epoch;
    v.transaction_timeout_ms = m->timeout_ms;
    v.transaction_status = (int8_t)m->state;
    v.transaction_last_update_timestamp_ms = m->update_ts;
    v.transaction_start_timestamp_ms = m->start_ts;
    v.client_transaction_version = m->client_version;
    if (m->state == TXN_EMPTY) {
        v.transaction_partitions.a = NULL;
        v.transaction_partitions.n = -1;
    } else {
        /* one entry per topic: parts are sorted by topic */
        int32_t ntopics = 0;
        for (int32_t i = 0; i < m->nparts; i++)
            if (i == 0 || strcmp(m->parts[i].topic, m->parts[i - 1].topic) != 0)
                ntopics++;
        v.transaction_partitions.a = transaction_log_value_partitions_schema_new_array(&a, ntopics);
        v.transaction_partitions.n = ntopics;
        int32_t t = -1;
        for (int32_t i = 0; i < m->nparts; i++) {
            if (i == 0 || strcmp(m->parts[i].topic, m->parts[i - 1].topic) != 0) {
                t++;
                int32_t cnt = 0;
                for (int32_t j = i; j < m->nparts && strcmp(m->parts[j].topic, m->parts[i].topic) == 0; j++)
                    cnt++;
                v.transaction_partitions.a[t].topic = KSTR(m->parts[i].topic);
                v.transaction_partitions.a[t].partition_ids.a = arena_alloc(&a, (size_t)cnt * sizeof(int32_t));
                v.transaction_partitions.a[t].partition_ids.n = 0;
            }
            transaction_log_value_partitions_schema_t *ps = &v.transaction_partitions.a[t];
            ps->partition_ids.a[ps->partition_ids.n++] = m->parts[i].partition;
        }
    }
    int16_t version = m->client_version >= 2 ? 1 : 0;
    struct kwriter w;
    kw_init(&w);
    kw_i16(&w, version);
    transaction_log_value_encode(&w, version, &v);
    buf_append(out, w.b.data, w.b.len);
    kw_free(&w);
    arena_free(&a);
}

int txn_log_parse(kbytes_t key, kbytes_t value, kstr_t *id, bool *tombstone, struct txn_meta **out)
{
    *out = NULL;
    *tombstone = value.len < 0;
    if (key.len < 2)
        return -1;
    struct arena a = ARENA_INIT;
    struct kreader r;
    kr_init(&r, key.p, (size_t)key.len, &a);
    int16_t kv = kr_i16(&r);
    if (kv != KEY_VERSION) {
        arena_free(&a);
        return kv > KEY_VERSION ? 1 : -1;
    }
    transaction_log_key_t k;
    transaction_log_key_init(&k);
    if (transaction_log_key_decode(&r, kv, &k) < 0 || k.transactional_id.len < 0) {
        arena_free(&a);
        return -1;
    }
    *id = k.transactional_id;
    if (*tombstone) {
        arena_free(&a);
        return 0;
    }
    if (value.len < 2) {
        arena_free(&a);
        return -1;
    }
    struct kreader vr;
    kr_init(&vr, value.p, (size_t)value.len, &a);
    int16_t vv = kr_i16(&vr);
    if (vv < 0) {
        arena_free(&a);
        return -1;
    }
    if (vv > TRANSACTION_LOG_VALUE_MAX_VERSION)
        vv = TRANSACTION_LOG_VALUE_MAX_VERSION; /* newer values only add tagged fields */
    transaction_log_value_t v;
    transaction_log_value_init(&v);
    if (transaction_log_value_decode(&vr, vv, &v) < 0 || v.transaction_status < 0 ||
        v.transaction_status > TXN_PREPARE_EPOCH_FENCE || v.transaction_timeout_ms < 0) {
        arena_free(&a);
        return -1;
    }
    /* a topic name never holds a NUL (the metadata keeps C strings) */
    for (int32_t i = 0; i < v.transaction_partitions.n; i++) {
        kstr_t t = v.transaction_partitions.a[i].topic;
        if (t.len < 0 || memchr(t.p, 0, (size_t)t.len)) {
            arena_free(&a);
            return -1;
        }
    }
    struct txn_meta *m = txn_meta_new(k.transactional_id, v.producer_id, v.transaction_timeout_ms,
                                      v.transaction_last_update_timestamp_ms);
    m->prev_producer_id = v.previous_producer_id;
    m->next_producer_id = v.next_producer_id;
    m->epoch = v.producer_epoch;
    m->state = (enum txn_state)v.transaction_status;
    m->start_ts = v.transaction_start_timestamp_ms;
    m->client_version = v.client_transaction_version;
    for (int32_t i = 0; i < v.transaction_partitions.n; i++) {
        const transaction_log_value_partitions_schema_t *t = &v.transaction_partitions.a[i];
        for (int32_t j = 0; j < t->partition_ids.n; j++)
            txn_meta_add_part(m, t->topic, t->partition_ids.a[j]);
    }
    arena_free(&a);
    *out = m;
    return 0;
}
