#include "util/uuid.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

const uint8_t uuid_zero[UUID_LEN] = {0};
const uint8_t uuid_metadata_topic_id[UUID_LEN] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t base64url_encoded_len(size_t n) { return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0); }

size_t base64url_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        out[o++] = b64url[v >> 6 & 63];
        out[o++] = b64url[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        out[o++] = b64url[v >> 6 & 63];
    }
    out[o] = 0;
    return o;
}

static int b64url_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

ssize_t base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
    /* Padding, when present, must complete the last 4-character group,
     * as Java's decoder requires. */
    size_t pad = 0;
    while (pad < 2 && len > pad && in[len - 1 - pad] == '=')
        pad++;
    if (pad && (len % 4 != 0))
        return -1;
    size_t n = len - pad;
    if (n % 4 == 1)
        return -1; /* one character carries only 6 bits: not a byte */
    size_t need = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
    if (need > cap)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64url_value(in[i]);
        if (v < 0)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return (ssize_t)o;
}

void uuid_to_string(const uint8_t id[UUID_LEN], char out[UUID_STR_LEN + 1])
{
    base64url_encode(id, UUID_LEN, out);
}

int uuid_from_string(const char *s, uint8_t out[UUID_LEN])
{
    size_t len = strlen(s);
    if (len > 24)
        return -1;
    uint8_t tmp[UUID_LEN + 2];
    ssize_t n = base64url_decode(s, len, tmp, sizeof tmp);
    if (n != UUID_LEN)
        return -1;
    memcpy(out, tmp, UUID_LEN);
    return 0;
}

static int fill_random(uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int uuid_random(uint8_t out[UUID_LEN])
{
    for (;;) {
        if (fill_random(out, UUID_LEN) < 0)
            return -1;
        /* Same bits as java.util.UUID.randomUUID: version 4, IETF variant. */
        out[6] = (uint8_t)((out[6] & 0x0f) | 0x40);
        out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
        if (uuid_equal(out, uuid_zero) || uuid_equal(out, uuid_metadata_topic_id))
            continue;
        /* The first character encodes the top 6 bits; '-' is value 62. */
        if ((out[0] >> 2) == 62)
            continue;
        return 0;
    }
}

int uuid_random_directory_id(uint8_t out[UUID_LEN])
{
    for (;;) {
        if (uuid_random(out) < 0)
            return -1;
        bool msb_zero = true;
        for (int i = 0; i < 8; i++)
            if (out[i])
                msb_zero = false;
        bool lsb_small = out[15] < 100;
        for (int i = 8; i < 15; i++)
            if (out[i])
                lsb_small = false;
        if (!(msb_zero && lsb_small))
            return 0;
    }
}
