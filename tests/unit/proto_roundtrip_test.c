/* Every message at every version: fill with random values, encode, decode,
 * encode again; both encodings must be identical and the decoder must
 * consume exactly what the encoder wrote. Then every truncation of a
 * sample must be rejected without a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "gen/gen_fill.h"

uint64_t gen_rand(uint64_t *s)
{
    /* xorshift64*: deterministic per seed */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

void gen_fill_bytes(uint64_t *rng, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)gen_rand(rng);
}

kstr_t gen_rand_str(struct arena *ar, uint64_t *rng)
{
    int32_t n = (int32_t)(gen_rand(rng) % 12);
    char *p = arena_alloc(ar, (size_t)n + 1);
    for (int32_t i = 0; i < n; i++)
        p[i] = (char)('a' + gen_rand(rng) % 26);
    return (kstr_t){p, n};
}

kbytes_t gen_rand_bytes(struct arena *ar, uint64_t *rng)
{
    int32_t n = (int32_t)(gen_rand(rng) % 20);
    uint8_t *p = arena_alloc(ar, (size_t)n + 1);
    gen_fill_bytes(rng, p, (size_t)n);
    return (kbytes_t){p, n};
}

typedef int (*decode_fn)(struct kreader *r, int16_t v, void *m);
typedef void (*encode_fn)(struct kwriter *w, int16_t v, const void *m);

static int roundtrip(const char *name, int16_t v, size_t size, gen_fill_fn fill,
                     decode_fn decode, encode_fn encode, uint64_t seed)
{
    struct arena ar = ARENA_INIT;
    uint64_t rng = seed;
    void *m = arena_alloc(&ar, size);
    fill(m, v, &ar, &rng, 0);

    struct kwriter w1, w2;
    kw_init(&w1);
    kw_init(&w2);
    encode(&w1, v, m);

    void *m2 = arena_alloc(&ar, size);
    struct kreader r;
    kr_init(&r, w1.b.data, w1.b.len, &ar);
    int rc = decode(&r, v, m2);
    int fails = 0;
    if (rc != 0 || r.err || kr_left(&r) != 0) {
        fprintf(stderr, "%s v%d seed %llu: decode rc=%d err=%d left=%zu\n", name, v,
                (unsigned long long)seed, rc, r.err, kr_left(&r));
        fails++;
    } else {
        encode(&w2, v, m2);
        if (w1.b.len != w2.b.len || (w1.b.len && memcmp(w1.b.data, w2.b.data, w1.b.len) != 0)) {
            fprintf(stderr, "%s v%d seed %llu: re-encoding differs (%zu vs %zu bytes)\n", name, v,
                    (unsigned long long)seed, w1.b.len, w2.b.len);
            fails++;
        }
        /* Every strict prefix must fail cleanly (no crash, no success
         * claiming to have consumed all input). */
        for (size_t cut = 0; cut < w1.b.len && !fails; cut++) {
            struct arena ar2 = ARENA_INIT;
            void *m3 = arena_alloc(&ar2, size);
            struct kreader r2;
            kr_init(&r2, w1.b.data, cut, &ar2);
            int rc2 = decode(&r2, v, m3);
            if (rc2 == 0) {
                fprintf(stderr, "%s v%d: a %zu-byte prefix of %zu decoded\n", name, v, cut,
                        w1.b.len);
                fails++;
            }
            arena_free(&ar2);
        }
    }
    kw_free(&w1);
    kw_free(&w2);
    arena_free(&ar);
    return fails;
}

static void test_every_api_every_version(void **state)
{
    (void)state;
    int fails = 0, runs = 0;
    for (int i = 0; i < kapi_table_len; i++) {
        const struct kapi *a = &kapi_table[i];
        const struct gen_fill_api *g = &gen_fill_apis[i];
        assert_int_equal(a->key, g->key);
        for (int16_t v = a->min_version; v <= a->max_version; v++) {
            for (uint64_t seed = 1; seed <= 40; seed++) {
                char name[96];
                snprintf(name, sizeof name, "%sRequest", a->name);
                fails += roundtrip(name, v, a->req_size, g->req_fill, a->req_decode, a->req_encode,
                                   seed * 7919 + (uint64_t)a->key * 131 + (uint64_t)v);
                snprintf(name, sizeof name, "%sResponse", a->name);
                fails += roundtrip(name, v, a->resp_size, g->resp_fill, a->resp_decode,
                                   a->resp_encode, seed * 104729 + (uint64_t)a->key * 17 + (uint64_t)v);
                runs += 2;
            }
        }
    }
    fprintf(stderr, "round trips: %d, failures: %d\n", runs, fails);
    assert_int_equal(fails, 0);
}

static void test_other_schemas(void **state)
{
    (void)state;
    int fails = 0;
    for (int i = 0; i < gen_fill_others_len; i++) {
        const struct gen_fill_other *o = &gen_fill_others[i];
        for (int16_t v = o->min_version; v <= o->max_version; v++)
            for (uint64_t seed = 1; seed <= 40; seed++)
                fails += roundtrip(o->name, v, o->size, o->fill, o->decode, o->encode, seed);
    }
    assert_int_equal(fails, 0);
}

static void test_table_is_consistent(void **state)
{
    (void)state;
    assert_non_null(kapi_get(0));
    assert_string_equal(kapi_get(0)->name, "Produce");
    assert_string_equal(kapi_get(18)->name, "ApiVersions");
    assert_null(kapi_get(-1));
    assert_null(kapi_get(30000));
    /* header versions */
    assert_int_equal(kapi_request_header_version(kapi_get(18), 3), 2);
    assert_int_equal(kapi_response_header_version(kapi_get(18), 3), 0);
    assert_int_equal(kapi_request_header_version(kapi_get(3), 8), 1);
    assert_int_equal(kapi_request_header_version(kapi_get(3), 9), 2);
    assert_int_equal(kapi_response_header_version(kapi_get(3), 9), 1);
    assert_int_equal(kapi_request_header_version(kapi_get(7), 0), 0);
    assert_non_null(kmeta_get(2));
    assert_string_equal(kmeta_get(2)->name, "TopicRecord");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_consistent),
        cmocka_unit_test(test_every_api_every_version),
        cmocka_unit_test(test_other_schemas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
