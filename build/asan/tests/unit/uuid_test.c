/* Kafka UUIDs and base64url. Expected strings are Kafka's: ZERO_UUID and
 * METADATA_TOPIC_ID as Uuid.toString prints them, the cluster id of
 * Kafka's quick-start and the id used in Kafka's own UuidTest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/uuid.h"

static void test_rfc4648_vectors(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } v[] = {
        {"", ""},         {"f", "Zg"},          {"fo", "Zm8"},         {"foo", "Zm9v"},
        {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[16];
        size_t n = base64url_encode((const uint8_t *)v[i].in, strlen(v[i].in), out);
        assert_string_equal(out, v[i].out);
        assert_int_equal(n, strlen(v[i].out));
        assert_int_equal(base64url_encoded_len(strlen(v[i].in)), strlen(v[i].out));
        uint8_t back[16];
        ssize_t m = base64url_decode(v[i].out, strlen(v[i].out), back, sizeof back);
        assert_int_equal(m, (ssize_t)strlen(v[i].in));
        assert_memory_equal(back, v[i].in, (size_t)m);
    }
}

static void test_url_alphabet(void **state)
{
    (void)state;
    const uint8_t in[2] = {0xfb, 0xff}; /* "+/8=" in standard base64 */
    char out[8];
    base64url_encode(in, 2, out);
    assert_string_equal(out, "-_8");
    uint8_t back[4];
    assert_int_equal(base64url_decode("-_8", 3, back, sizeof back), 2);
    assert_memory_equal(back, in, 2);
    /* Padding is optional, and must be complete when present. */
    assert_int_equal(base64url_decode("-_8=", 4, back, sizeof back), 2);
    assert_int_equal(base64url_decode("Zg==", 4, back, sizeof back), 1);
    assert_int_equal(back[0], 'f');
    assert_int_equal(base64url_decode("Zg=", 3, back, sizeof back), -1);
    /* Standard-alphabet characters are not base64url. */
    assert_int_equal(base64url_decode("+/8", 3, back, sizeof back), -1);
    /* One leftover character carries no whole byte. */
    assert_int_equal(base64url_decode("Zm9vY", 5, back, sizeof back), -1);
    /* Output larger than the room given. */
    assert_int_equal(base64url_decode("Zm9vYmFy", 8, back, 4), -1);
}

static void test_kafka_known_ids(void **state)
{
    (void)state;
    char s[UUID_STR_LEN + 1];
    uuid_to_string(uuid_zero, s);
    assert_string_equal(s, "AAAAAAAAAAAAAAAAAAAAAA");
    uuid_to_string(uuid_metadata_topic_id, s);
    assert_string_equal(s, "AAAAAAAAAAAAAAAAAAAAAQ");

    /* The cluster id of Kafka's quick-start is not canonical: its last
     * character has non-zero unused bits. Java's decoder ignores them, so
     * Kafka accepts it and Uuid.toString gives it back ending in "Qg". */
    uint8_t id[UUID_LEN];
    assert_int_equal(uuid_from_string("MkU3OEVBNTcwNTJENDM2Qk", id), 0);
    assert_memory_equal(id, "2E78EA57052D436B", 16);
    uuid_to_string(id, s);
    assert_string_equal(s, "MkU3OEVBNTcwNTJENDM2Qg");
    uint8_t id2[UUID_LEN];
    assert_int_equal(uuid_from_string("MkU3OEVBNTcwNTJENDM2Qg", id2), 0);
    assert_true(uuid_equal(id, id2));

    static const uint8_t kafka_test_id[16] = {0x51, 0x7c, 0x94, 0xf6, 0x2e, 0x40, 0x46, 0x7e,
                                              0x96, 0xd3, 0x43, 0x8d, 0xda, 0xd6, 0x9e, 0x58};
    assert_int_equal(uuid_from_string("UXyU9i5ARn6W00ON2taeWA", id), 0);
    assert_memory_equal(id, kafka_test_id, 16);

    uint8_t seq[16];
    for (int i = 0; i < 16; i++)
        seq[i] = (uint8_t)i;
    uuid_to_string(seq, s);
    assert_string_equal(s, "AAECAwQFBgcICQoLDA0ODw");
}

static void test_from_string_rejects(void **state)
{
    (void)state;
    uint8_t id[UUID_LEN], keep[UUID_LEN];
    memset(id, 0x5a, sizeof id);
    memcpy(keep, id, sizeof id);
    /* Padded form of 16 bytes is 24 characters: accepted, like Java. */
    assert_int_equal(uuid_from_string("AAAAAAAAAAAAAAAAAAAAAQ==", id), 0);
    assert_memory_equal(id, uuid_metadata_topic_id, 16);
    memcpy(id, keep, sizeof id);
    assert_int_equal(uuid_from_string("AAAAAAAAAAAAAAAAAAAAA", id), -1);   /* 21 chars */
    assert_int_equal(uuid_from_string("AAAAAAAAAAAAAAAAAAAAAAA", id), -1); /* 23 chars */
    assert_int_equal(uuid_from_string("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", id), -1);
    assert_int_equal(uuid_from_string("AAAAAA", id), -1);                   /* 4 bytes */
    assert_int_equal(uuid_from_string("AAAAAAAAAAAAAAAAAAAA+A", id), -1);  /* '+' */
    assert_int_equal(uuid_from_string("", id), -1);
    assert_memory_equal(id, keep, 16);
}

static void test_random(void **state)
{
    (void)state;
    for (int i = 0; i < 2000; i++) {
        uint8_t id[UUID_LEN], back[UUID_LEN];
        assert_int_equal(uuid_random(id), 0);
        assert_int_equal(id[6] >> 4, 4);      /* version 4 */
        assert_int_equal(id[8] & 0xc0, 0x80); /* IETF variant */
        assert_false(uuid_equal(id, uuid_zero));
        assert_false(uuid_equal(id, uuid_metadata_topic_id));
        char s[UUID_STR_LEN + 1];
        uuid_to_string(id, s);
        assert_int_equal(strlen(s), UUID_STR_LEN);
        assert_true(s[0] != '-');
        assert_int_equal(uuid_from_string(s, back), 0);
        assert_true(uuid_equal(id, back));
    }
    for (int i = 0; i < 200; i++) {
        uint8_t id[UUID_LEN];
        assert_int_equal(uuid_random_directory_id(id), 0);
        bool reserved = true;
        for (int k = 0; k < 15; k++)
            if (id[k])
                reserved = false;
        assert_false(reserved && id[15] < 100);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_vectors),
        cmocka_unit_test(test_url_alphabet),
        cmocka_unit_test(test_kafka_known_ids),
        cmocka_unit_test(test_from_string_rejects),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
