/* CRC-32C: known vectors, chaining, and the hardware and table paths
 * agreeing with each other and with a bit-at-a-time reference on random
 * data of random lengths and alignments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/crc32c.h"

/* The definition itself, one bit at a time: the independent reference. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void check_vectors(crc_fn f)
{
    uint8_t b[32];
    assert_int_equal(f(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(f(0, "", 0), 0);
    assert_int_equal(f(0, NULL, 0), 0);
    /* RFC 3720 (iSCSI) appendix B.4. */
    memset(b, 0, sizeof b);
    assert_int_equal(f(0, b, 32), 0x8A9136AAu);
    memset(b, 0xff, sizeof b);
    assert_int_equal(f(0, b, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    assert_int_equal(f(0, b, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    assert_int_equal(f(0, b, 32), 0x113FDB5Cu);
    assert_int_equal(f(0, "a", 1), 0xC1D04330u);
}

static void test_vectors(void **state)
{
    (void)state;
    check_vectors(crc32c);
    check_vectors(crc32c_sw);
    if (crc32c_hw_available())
        check_vectors(crc32c_hw);
    else
        print_message("SSE4.2 not available: hardware path not tested\n");
}

static void test_chaining(void **state)
{
    (void)state;
    const char *s = "The quick brown fox jumps over the lazy dog, twice over for good measure.";
    size_t n = strlen(s);
    uint32_t whole = crc32c(0, s, n);
    for (size_t cut = 0; cut <= n; cut++) {
        assert_int_equal(crc32c(crc32c(0, s, cut), s + cut, n - cut), whole);
        assert_int_equal(crc32c_sw(crc32c_sw(0, s, cut), s + cut, n - cut), whole);
    }
}

static void test_random_agree(void **state)
{
    (void)state;
    enum { MAX = 4096 + 64 };
    uint8_t *buf = malloc(MAX + 16);
    assert_non_null(buf);
    for (size_t i = 0; i < MAX + 16; i++)
        buf[i] = (uint8_t)rnd();
    bool hw = crc32c_hw_available();
    for (int iter = 0; iter < 3000; iter++) {
        size_t align = rnd() % 16;
        size_t len = iter < 200 ? (size_t)iter : rnd() % MAX;
        uint32_t seed = (iter & 1) ? (uint32_t)rnd() : 0;
        const uint8_t *p = buf + align;
        uint32_t ref = crc_bitwise(seed, p, len);
        assert_int_equal(crc32c_sw(seed, p, len), ref);
        assert_int_equal(crc32c(seed, p, len), ref);
        if (hw)
            assert_int_equal(crc32c_hw(seed, p, len), ref);
    }
    free(buf);
}

/* Lengths around the hardware path's six-stream blocks (6 x 4096 and
 * 6 x 256 bytes) and their remainders. */
static void test_long_buffers_agree(void **state)
{
    (void)state;
    enum { MAX = 2 * 6 * 4096 + 4 * 6 * 256 + 64 };
    uint8_t *buf = malloc(MAX + 16);
    assert_non_null(buf);
    for (size_t i = 0; i < MAX + 16; i++)
        buf[i] = (uint8_t)rnd();
    size_t lens[] = {6 * 256 - 1, 6 * 256, 6 * 256 + 7, 6 * 4096 - 8, 6 * 4096, 6 * 4096 + 6 * 256 + 5,
                     2 * 6 * 4096 + 3 * 6 * 256 + 63, MAX};
    bool hw = crc32c_hw_available();
    for (int iter = 0; iter < 60; iter++) {
        size_t len = iter < (int)(sizeof lens / sizeof lens[0]) ? lens[iter] : rnd() % MAX;
        const uint8_t *p = buf + rnd() % 16;
        uint32_t seed = (iter & 1) ? (uint32_t)rnd() : 0;
        uint32_t ref = crc_bitwise(seed, p, len);
        assert_int_equal(crc32c_sw(seed, p, len), ref);
        assert_int_equal(crc32c(seed, p, len), ref);
        if (hw)
            assert_int_equal(crc32c_hw(seed, p, len), ref);
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_chaining),
        cmocka_unit_test(test_random_agree),
        cmocka_unit_test(test_long_buffers_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
