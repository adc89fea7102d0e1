/* Kafka UUIDs (topic ids, cluster ids, directory ids): 16 bytes, shown
 * as 22 characters of unpadded base64url, exactly as Kafka's
 * org.apache.kafka.common.Uuid prints and parses them. The bytes are the
 * big-endian most-significant long followed by the least-significant one,
 * which is also their order on the wire. */
#ifndef SAMSA_UTIL_UUID_H
#define SAMSA_UTIL_UUID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UUID_LEN 16
#define UUID_STR_LEN 22 /* without the terminating NUL */

/* Kafka's reserved ids: ZERO means "no id"; ONE is the KRaft metadata
 * topic's id. Uuid.randomUuid never returns either. */
extern const uint8_t uuid_zero[UUID_LEN];
extern const uint8_t uuid_metadata_topic_id[UUID_LEN];

/* base64url (RFC 4648 section 5) without padding. out needs
 * base64url_encoded_len(n) + 1 bytes; it is NUL-terminated. Returns the
 * number of characters written. */
size_t base64url_encoded_len(size_t n);
size_t base64url_encode(const uint8_t *in, size_t n, char *out);
/* Decodes len characters of base64url, with or without '=' padding, as
 * Java's Base64.getUrlDecoder() does (unused low bits of the last
 * character are ignored, as there). Returns the number of bytes written
 * to out (at most cap), or -1 on a bad character, a bad length, misplaced
 * padding, or output longer than cap. */
ssize_t base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap);

/* Writes the 22-character form and a NUL into out. */
void uuid_to_string(const uint8_t id[UUID_LEN], char out[UUID_STR_LEN + 1]);
/* Parses what Kafka's Uuid.fromString accepts: base64url of exactly 16
 * bytes, at most 24 characters (so "==" padding is allowed). Returns 0,
 * or -1 with out untouched. */
int uuid_from_string(const char *s, uint8_t out[UUID_LEN]);

/* A random version-4 UUID as Kafka's Uuid.randomUuid makes them: never
 * ZERO or ONE and never one whose string starts with '-' (which command
 * line tools would take for an option). Uses getrandom(2); returns 0, or
 * -1 when the kernel cannot supply randomness. */
int uuid_random(uint8_t out[UUID_LEN]);
/* A random log-directory id as Kafka's DirectoryId.random: additionally
 * avoids the first 100 ids, which Kafka reserves for markers such as
 * UNASSIGNED, LOST and MIGRATING. */
int uuid_random_directory_id(uint8_t out[UUID_LEN]);

static inline bool uuid_equal(const uint8_t a[UUID_LEN], const uint8_t b[UUID_LEN])
{
    for (size_t i = 0; i < UUID_LEN; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

#endif
