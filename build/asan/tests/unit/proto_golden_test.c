/* Golden frames: bytes written out by hand from Kafka's protocol guide
 * (docs/protocol.html) and the message JSON, annotated field by field.
 * Each is decoded with the generated codec, its fields checked, and
 * re-encoded to the identical bytes. They pin down what round trips
 * cannot: that the generator's idea of each field matches Kafka's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "proto/gen/kapi.h"

/* Request header v2: api key, version, correlation id, client id (a
 * classic int16-length string even in v2), no tagged fields. */
static const uint8_t api_versions_v3_request[] = {
    0x00, 0x12,                                     /* api key 18 */
    0x00, 0x03,                                     /* version 3 */
    0x00, 0x00, 0x00, 0x2a,                         /* correlation id 42 */
    0x00, 0x07, 'r', 'd', 'k', 'a', 'f', 'k', 'a',  /* client id "rdkafka" */
    0x00,                                           /* header tagged fields: 0 */
    /* body */
    0x0b, 'l', 'i', 'b', 'r', 'd', 'k', 'a', 'f', 'k', 'a', /* compact "librdkafka" */
    0x06, '2', '.', '0', '.', '2',                  /* compact "2.0.2" */
    0x00,                                           /* tagged fields: 0 */
};

/* Response header v0 (ApiVersions never uses v1). */
static const uint8_t api_versions_v3_response[] = {
    0x00, 0x00, 0x00, 0x2a,                         /* correlation id 42 */
    0x00, 0x00,                                     /* error code 0 */
    0x03,                                           /* compact array: 2 entries */
    0x00, 0x00, 0x00, 0x03, 0x00, 0x0b, 0x00,       /* Produce 3..11, no tags */
    0x00, 0x12, 0x00, 0x00, 0x00, 0x04, 0x00,       /* ApiVersions 0..4, no tags */
    0x00, 0x00, 0x00, 0x00,                         /* throttle time 0 */
    0x00,                                           /* tagged fields: 0 */
};

/* Metadata v12 response body after a v1 response header. */
static const uint8_t metadata_v12_response[] = {
    0x00, 0x00, 0x00, 0x07,                         /* correlation id 7 */
    0x00,                                           /* header tagged fields */
    0x00, 0x00, 0x00, 0x00,                         /* throttle time */
    0x02,                                           /* brokers: 1 */
    0x00, 0x00, 0x00, 0x01,                         /*   node id 1 */
    0x0a, '1', '2', '7', '.', '0', '.', '0', '.', '1', /* host (compact) */
    0x00, 0x00, 0x23, 0x84,                         /*   port 9092 */
    0x00,                                           /*   rack: null */
    0x00,                                           /*   tags */
    0x05, 'a', 'b', 'c', 'd',                       /* cluster id "abcd" */
    0x00, 0x00, 0x00, 0x01,                         /* controller id 1 */
    0x02,                                           /* topics: 1 */
    0x00, 0x00,                                     /*   error code */
    0x02, 't',                                      /*   name "t" */
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /*   topic id */
    0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
    0x00,                                           /*   is internal: false */
    0x02,                                           /*   partitions: 1 */
    0x00, 0x00,                                     /*     error code */
    0x00, 0x00, 0x00, 0x00,                         /*     partition 0 */
    0x00, 0x00, 0x00, 0x01,                         /*     leader 1 */
    0x00, 0x00, 0x00, 0x05,                         /*     leader epoch 5 */
    0x02, 0x00, 0x00, 0x00, 0x01,                   /*     replicas [1] */
    0x02, 0x00, 0x00, 0x00, 0x01,                   /*     isr [1] */
    0x01,                                           /*     offline replicas [] */
    0x00,                                           /*     tags */
    0x80, 0x00, 0x00, 0x00,                         /*   authorized ops: INT32_MIN (not requested) */
    0x00,                                           /*   tags */
    0x00,                                           /* tags */
};

/* Produce v9 request (flexible) with one partition holding a 3-byte
 * stand-in for the records (the codec treats records as opaque). */
static const uint8_t produce_v9_request[] = {
    0x00, 0x00,                                     /* api key 0 */
    0x00, 0x09,                                     /* version 9 */
    0x00, 0x00, 0x00, 0x05,                         /* correlation id 5 */
    0xff, 0xff,                                     /* client id: null */
    0x00,                                           /* header tags */
    0x00,                                           /* transactional id: null */
    0xff, 0xff,                                     /* acks -1 */
    0x00, 0x00, 0x75, 0x30,                         /* timeout 30000 */
    0x02,                                           /* topics: 1 */
    0x04, 'f', 'o', 'o',                            /*   name "foo" */
    0x02,                                           /*   partitions: 1 */
    0x00, 0x00, 0x00, 0x02,                         /*     index 2 */
    0x04, 0xaa, 0xbb, 0xcc,                         /*     records: 3 bytes */
    0x00,                                           /*     tags */
    0x00,                                           /*   tags */
    0x00,                                           /* tags */
};

struct header {
    int16_t key, version;
    int32_t correlation_id;
    kstr_t client_id;
};

static void read_request_header(struct kreader *r, struct header *h)
{
    h->key = kr_i16(r);
    h->version = kr_i16(r);
    h->correlation_id = kr_i32(r);
    const struct kapi *a = kapi_get(h->key);
    assert_non_null(a);
    int hv = kapi_request_header_version(a, h->version);
    h->client_id = hv >= 1 ? kr_string(r, false) : KSTR_NULL;
    if (hv >= 2)
        assert_int_equal(kr_uvarint(r), 0);
    assert_int_equal(r->err, 0);
}

static void assert_bytes(const struct kwriter *w, const uint8_t *want, size_t n)
{
    assert_int_equal(w->b.len, n);
    assert_memory_equal(w->b.data, want, n);
}

static void test_api_versions_v3_request(void **state)
{
    (void)state;
    struct arena ar = ARENA_INIT;
    struct kreader r;
    kr_init(&r, api_versions_v3_request, sizeof api_versions_v3_request, &ar);
    struct header h;
    read_request_header(&r, &h);
    assert_int_equal(h.key, 18);
    assert_int_equal(h.version, 3);
    assert_int_equal(h.correlation_id, 42);
    assert_true(kstr_eqc(h.client_id, "rdkafka"));
    size_t hdr_len = sizeof api_versions_v3_request - kr_left(&r);
    api_versions_request_t m;
    assert_int_equal(api_versions_request_decode(&r, 3, &m), 0);
    assert_int_equal(kr_left(&r), 0);
    assert_true(kstr_eqc(m.client_software_name, "librdkafka"));
    assert_true(kstr_eqc(m.client_software_version, "2.0.2"));
    struct kwriter w;
    kw_init(&w);
    api_versions_request_encode(&w, 3, &m);
    assert_int_equal(w.b.len, sizeof api_versions_v3_request - hdr_len);
    assert_memory_equal(w.b.data, api_versions_v3_request + hdr_len, w.b.len);
    kw_free(&w);
    arena_free(&ar);
}

static void test_api_versions_v3_response(void **state)
{
    (void)state;
    struct arena ar = ARENA_INIT;
    api_versions_response_t m;
    api_versions_response_init(&m);
    m.api_keys.a = api_versions_response_api_version_new_array(&ar, 2);
    m.api_keys.n = 2;
    m.api_keys.a[0] = (api_versions_response_api_version_t){0, 3, 11};
    m.api_keys.a[1] = (api_versions_response_api_version_t){18, 0, 4};
    struct kwriter w;
    kw_init(&w);
    kw_i32(&w, 42); /* header v0: correlation id only */
    api_versions_response_encode(&w, 3, &m);
    assert_bytes(&w, api_versions_v3_response, sizeof api_versions_v3_response);

    struct kreader r;
    kr_init(&r, api_versions_v3_response + 4, sizeof api_versions_v3_response - 4, &ar);
    api_versions_response_t d;
    assert_int_equal(api_versions_response_decode(&r, 3, &d), 0);
    assert_int_equal(kr_left(&r), 0);
    assert_int_equal(d.api_keys.n, 2);
    assert_int_equal(d.api_keys.a[1].api_key, 18);
    assert_int_equal(d.api_keys.a[1].max_version, 4);
    assert_int_equal(kapi_response_header_version(kapi_get(18), 3), 0);
    kw_free(&w);
    arena_free(&ar);
}

static void test_metadata_v12_response(void **state)
{
    (void)state;
    struct arena ar = ARENA_INIT;
    const uint8_t *body = metadata_v12_response + 5;
    size_t len = sizeof metadata_v12_response - 5;
    struct kreader r;
    kr_init(&r, body, len, &ar);
    metadata_response_t m;
    assert_int_equal(metadata_response_decode(&r, 12, &m), 0);
    assert_int_equal(kr_left(&r), 0);
    assert_int_equal(m.brokers.n, 1);
    assert_int_equal(m.brokers.a[0].node_id, 1);
    assert_true(kstr_eqc(m.brokers.a[0].host, "127.0.0.1"));
    assert_int_equal(m.brokers.a[0].port, 9092);
    assert_int_equal(m.brokers.a[0].rack.len, -1);
    assert_true(kstr_eqc(m.cluster_id, "abcd"));
    assert_int_equal(m.controller_id, 1);
    assert_int_equal(m.topics.n, 1);
    assert_true(kstr_eqc(m.topics.a[0].name, "t"));
    assert_int_equal(m.topics.a[0].topic_id.b[15], 0x10);
    assert_int_equal(m.topics.a[0].partitions.a[0].leader_epoch, 5);
    assert_int_equal(m.topics.a[0].partitions.a[0].isr_nodes.a[0], 1);
    assert_int_equal(m.topics.a[0].topic_authorized_operations, INT32_MIN);
    struct kwriter w;
    kw_init(&w);
    kw_i32(&w, 7);
    kw_uvarint(&w, 0); /* header v1 */
    metadata_response_encode(&w, 12, &m);
    assert_int_equal(kapi_response_header_version(kapi_get(3), 12), 1);
    assert_bytes(&w, metadata_v12_response, sizeof metadata_v12_response);
    kw_free(&w);
    arena_free(&ar);
}

static void test_produce_v9_request(void **state)
{
    (void)state;
    struct arena ar = ARENA_INIT;
    struct kreader r;
    kr_init(&r, produce_v9_request, sizeof produce_v9_request, &ar);
    struct header h;
    read_request_header(&r, &h);
    assert_int_equal(h.key, 0);
    assert_int_equal(h.version, 9);
    assert_int_equal(h.client_id.len, -1);
    size_t hdr_len = sizeof produce_v9_request - kr_left(&r);
    produce_request_t m;
    assert_int_equal(produce_request_decode(&r, 9, &m), 0);
    assert_int_equal(kr_left(&r), 0);
    assert_int_equal(m.transactional_id.len, -1);
    assert_int_equal(m.acks, -1);
    assert_int_equal(m.timeout_ms, 30000);
    assert_int_equal(m.topic_data.n, 1);
    assert_true(kstr_eqc(m.topic_data.a[0].name, "foo"));
    assert_int_equal(m.topic_data.a[0].partition_data.a[0].index, 2);
    assert_int_equal(m.topic_data.a[0].partition_data.a[0].records.len, 3);
    assert_int_equal(m.topic_data.a[0].partition_data.a[0].records.p[2], 0xcc);
    struct kwriter w;
    kw_init(&w);
    produce_request_encode(&w, 9, &m);
    assert_int_equal(w.b.len, sizeof produce_v9_request - hdr_len);
    assert_memory_equal(w.b.data, produce_v9_request + hdr_len, w.b.len);
    kw_free(&w);
    arena_free(&ar);
}

/* A non-nullable string sent as null is malformed, as in Kafka. */
static void test_null_in_non_nullable_is_rejected(void **state)
{
    (void)state;
    static const uint8_t body[] = {
        0x00,                   /* transactional id: null (ok) */
        0x00, 0x01,             /* acks 1 */
        0x00, 0x00, 0x00, 0x10, /* timeout */
        0x02,                   /* topics: 1 */
        0x00,                   /*   name: null -> not allowed */
        0x01, 0x00, 0x00,
    };
    struct arena ar = ARENA_INIT;
    struct kreader r;
    kr_init(&r, body, sizeof body, &ar);
    produce_request_t m;
    assert_int_not_equal(produce_request_decode(&r, 9, &m), 0);
    arena_free(&ar);
}

/* A hostile array count larger than the frame never allocates. */
static void test_huge_array_count_is_rejected(void **state)
{
    (void)state;
    static const uint8_t body[] = {
        0xff, 0xff,             /* transactional id: null (v3 classic) */
        0x00, 0x01, 0x00, 0x00, 0x00, 0x10,
        0x7f, 0xff, 0xff, 0xff, /* topics: 2^31-1 */
    };
    struct arena ar = ARENA_INIT;
    struct kreader r;
    kr_init(&r, body, sizeof body, &ar);
    produce_request_t m;
    assert_int_not_equal(produce_request_decode(&r, 3, &m), 0);
    assert_true(ar.total < 65536);
    arena_free(&ar);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_versions_v3_request),
        cmocka_unit_test(test_api_versions_v3_response),
        cmocka_unit_test(test_metadata_v12_response),
        cmocka_unit_test(test_produce_v9_request),
        cmocka_unit_test(test_null_in_non_nullable_is_rejected),
        cmocka_unit_test(test_huge_array_count_is_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
