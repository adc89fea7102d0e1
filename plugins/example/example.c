/* SPDX-License-Identifier: Apache-2.0
 *
 * example: an out-of-tree samsa plugin, built only against the installed
 * headers (see GNUmakefile: pkg-config --cflags --libs samsa-plugin).
 *
 * It provides Kafka's snappy codec (compression id 2) with no library at
 * all, to show a complete codec in a page of C:
 *  - decompress reads both framings Kafka clients send: xerial
 *    (snappy-java's stream format) and raw snappy;
 *  - compress writes valid xerial-framed snappy made of literals only
 *    (no matching: correct, readable by every client, just not smaller).
 * Load it instead of codec-snappy (they would clash: one codec per id):
 *     samsa --override plugin.dir=DIR --override plugins=example
 * and snappy batches are accepted, validated and, on a topic with
 * compression.type=snappy, recompressed by this plugin.
 *
 * It also shows the host API: a config key (plugin.example.greeting,
 * logged at init), a metric, and api->log.
 *
 * And a second capability of another kind: a server-side consumer-group
 * assignor (KIP-848), "example-reverse", which deals every subscribed
 * partition in turn to the members in reverse member-id order (the last
 * id first). A server offers it once group.consumer.assignors names it
 * (e.g. "uniform,range,example-reverse"), and a consumer chooses it with
 * group.remote.assignor=example-reverse.
 */
#include <stdlib.h>
#include <string.h>

#include <samsa/assignor.h>
#include <samsa/codec.h>
#include <samsa/plugin.h>

static samsa_host_t *g_host;
static const samsa_host_api_t *g_api;
static samsa_metric_t *g_batches;

static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

static uint32_t rd_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* One raw snappy block (format description: google/snappy
 * format_description.txt): a varint length, then literal and copy
 * elements. Output goes straight into the host's bounded buffer. */
static int raw_decompress(const uint8_t *in, size_t len, samsa_out_t *out)
{
    size_t pos = 0;
    uint64_t n = 0;
    for (int shift = 0;; shift += 7) {
        if (pos >= len || shift > 28)
            return SAMSA_ECORRUPT;
        uint8_t b = in[pos++];
        n |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    if (n > UINT32_MAX)
        return SAMSA_ECORRUPT;
    if (n == 0)
        return pos == len ? SAMSA_OK : SAMSA_ECORRUPT;
    size_t avail;
    uint8_t *dst = out->reserve(out, (size_t)n, &avail);
    if (!dst)
        return SAMSA_ENOSPC;
    size_t d = 0;
    while (pos < len) {
        uint8_t tag = in[pos++];
        size_t l, off = 0;
        switch (tag & 3) {
        case 0: /* literal */
            l = tag >> 2;
            if (l >= 60) {
                size_t nb = l - 59;
                if (len - pos < nb)
                    return SAMSA_ECORRUPT;
                l = 0;
                for (size_t i = 0; i < nb; i++)
                    l |= (size_t)in[pos + i] << (8 * i);
                pos += nb;
            }
            l += 1;
            if (len - pos < l || n - d < l)
                return SAMSA_ECORRUPT;
            memcpy(dst + d, in + pos, l);
            pos += l;
            d += l;
            continue;
        case 1:
            if (len - pos < 1)
                return SAMSA_ECORRUPT;
            l = 4 + ((tag >> 2) & 7);
            off = ((size_t)(tag >> 5) << 8) | in[pos];
            pos += 1;
            break;
        case 2:
            if (len - pos < 2)
                return SAMSA_ECORRUPT;
            l = (size_t)(tag >> 2) + 1;
            off = (size_t)in[pos] | ((size_t)in[pos + 1] << 8);
            pos += 2;
            break;
        default:
            if (len - pos < 4)
                return SAMSA_ECORRUPT;
            l = (size_t)(tag >> 2) + 1;
            off = (size_t)in[pos] | ((size_t)in[pos + 1] << 8) | ((size_t)in[pos + 2] << 16) |
                  ((size_t)in[pos + 3] << 24);
            pos += 4;
            break;
        }
        if (off == 0 || off > d || n - d < l)
            return SAMSA_ECORRUPT;
        for (size_t i = 0; i < l; i++) /* may overlap: byte by byte */
            dst[d + i] = dst[d - off + i];
        d += l;
    }
    if (d != n)
        return SAMSA_ECORRUPT;
    out->commit(out, d);
    return SAMSA_OK;
}

static int ex_decompress(void *cap_state, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    (void)cap_state;
    int rc = SAMSA_OK;
    if (in_len >= 16 && memcmp(in, xerial_magic, 8) == 0) {
        for (size_t pos = 16; rc == SAMSA_OK && pos < in_len;) {
            if (in_len - pos < 4)
                return SAMSA_ECORRUPT;
            uint32_t n = rd_be32(in + pos);
            pos += 4;
            if (n > in_len - pos)
                return SAMSA_ECORRUPT;
            rc = raw_decompress(in + pos, n, out);
            pos += n;
        }
    } else {
        rc = raw_decompress(in, in_len, out);
    }
    if (rc == SAMSA_OK)
        g_api->metric_add(g_batches, 1);
    return rc;
}

/* Appends bytes through the host's buffer. */
static int put(samsa_out_t *out, const void *p, size_t n)
{
    size_t avail;
    uint8_t *d = out->reserve(out, n, &avail);
    if (!d)
        return SAMSA_ENOSPC;
    memcpy(d, p, n);
    out->commit(out, n);
    return SAMSA_OK;
}

/* xerial framing; each 32 KiB block is a raw snappy block of literals:
 * the length varint, then literals of up to 64 KiB each (tag 61<<2 with
 * a two-byte length). */
static int ex_compress(void *cap_state, int32_t level, const uint8_t *in, size_t in_len, samsa_out_t *out)
{
    (void)cap_state;
    (void)level;
    static const uint8_t version[8] = {0, 0, 0, 1, 0, 0, 0, 1};
    if (put(out, xerial_magic, 8) || put(out, version, 8))
        return SAMSA_ENOSPC;
    for (size_t pos = 0; pos < in_len;) {
        size_t n = in_len - pos > 32768 ? 32768 : in_len - pos;
        uint8_t hdr[4 + 5 + 3];
        size_t h = 4;
        for (size_t v = n; ; v >>= 7) { /* varint of n */
            hdr[h++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
            if (v < 0x80)
                break;
        }
        hdr[h++] = 61 << 2; /* literal, length-1 in the next 2 bytes */
        hdr[h++] = (uint8_t)((n - 1) & 0xff);
        hdr[h++] = (uint8_t)((n - 1) >> 8);
        uint32_t block = (uint32_t)(h - 4 + n);
        hdr[0] = (uint8_t)(block >> 24);
        hdr[1] = (uint8_t)(block >> 16);
        hdr[2] = (uint8_t)(block >> 8);
        hdr[3] = (uint8_t)block;
        if (put(out, hdr, h) || put(out, in + pos, n))
            return SAMSA_ENOSPC;
        pos += n;
    }
    return SAMSA_OK;
}

static const samsa_codec_t example_codec = {
    .hdr = {.struct_size = sizeof(samsa_codec_t), .kind = SAMSA_CAP_CODEC, .name = "snappy"},
    .id = SAMSA_CODEC_SNAPPY,
    .level_min = 0,
    .level_max = 0,
    .level_default = 0,
    .compress = ex_compress,
    .decompress = ex_decompress,
};

/* ---- the assignor ---- */

static const char *member_id(const samsa_group_spec_t *g, size_t i)
{
    return g->members[i].member_id ? g->members[i].member_id : "";
}

static int ex_assign(void *cap_state, const samsa_group_spec_t *g, const samsa_topic_describer_t *topics,
                     const samsa_assignment_builder_t *out, char *errstr, size_t errlen)
{
    (void)cap_state;
    if (g->n_members == 0)
        return SAMSA_OK;
    size_t *order = malloc(g->n_members * sizeof *order); /* freed below */
    if (!order) {
        strncpy(errstr, "out of memory", errlen);
        return SAMSA_ENOMEM;
    }
    /* member indexes by member id, largest first */
    for (size_t i = 0; i < g->n_members; i++) {
        size_t j = i;
        for (; j > 0 && strcmp(member_id(g, order[j - 1]), member_id(g, i)) < 0; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    size_t next = 0;
    int rc = SAMSA_OK;
    /* every topic some member subscribes to, in the order members list
     * them, once (a topic seen under an earlier member is skipped) */
    for (size_t m = 0; m < g->n_members && rc == SAMSA_OK; m++) {
        for (size_t t = 0; t < g->members[m].n_subscribed && rc == SAMSA_OK; t++) {
            const samsa_uuid_t *tid = &g->members[m].subscribed_topic_ids[t];
            int seen = 0;
            for (size_t pm = 0; pm <= m && !seen; pm++)
                for (size_t pt = 0; pt < g->members[pm].n_subscribed && !seen; pt++)
                    seen = (pm < m || pt < t) && memcmp(g->members[pm].subscribed_topic_ids[pt].b, tid->b, 16) == 0;
            if (seen)
                continue;
            int32_t np = topics->num_partitions(topics->ctx, tid);
            for (int32_t p = 0; p < np && rc == SAMSA_OK; p++) {
                for (size_t step = 0; step < g->n_members; step++) {
                    size_t pos = (next + step) % g->n_members;
                    const samsa_group_member_t *mm = &g->members[order[pos]];
                    int subscribed = 0;
                    for (size_t k = 0; k < mm->n_subscribed && !subscribed; k++)
                        subscribed = memcmp(mm->subscribed_topic_ids[k].b, tid->b, 16) == 0;
                    if (!subscribed)
                        continue;
                    rc = out->assign(out->ctx, order[pos], tid, p);
                    next = pos + 1;
                    break;
                }
            }
        }
    }
    free(order);
    if (rc != SAMSA_OK)
        strncpy(errstr, "the coordinator refused an assignment", errlen);
    return rc;
}

static const samsa_assignor_t example_assignor = {
    .hdr = {.struct_size = sizeof(samsa_assignor_t), .kind = SAMSA_CAP_ASSIGNOR, .name = "example-reverse"},
    .assign = ex_assign,
};

static int ex_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state;
    if (api->abi_major != SAMSA_ABI_MAJOR) {
        /* The host checks this too; a plugin may refuse more itself. */
        strncpy(errstr, "unexpected host ABI", errlen);
        return SAMSA_EUNSUPPORTED;
    }
    g_host = host;
    g_api = api;
    const char *greeting = api->config_get(host, "greeting");
    api->log(host, SAMSA_LOG_INFO, "example codec ready: %s", greeting ? greeting : "hello");
    g_batches = api->metric_register(host, "batches_decompressed", SAMSA_METRIC_COUNTER,
                                     "snappy batches decompressed by the example");
    int rc = api->register_capability(host, &example_codec.hdr, NULL);
    return rc == SAMSA_OK ? api->register_capability(host, &example_assignor.hdr, NULL) : rc;
}

static const samsa_plugin_info_t example_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "example",
    .version = "1.0.0",
    .description = "example out-of-tree plugin: a dependency-free snappy codec and a reverse assignor",
    .license = "Apache-2.0",
    .init = ex_init,
};

SAMSA_PLUGIN_DECLARE(example, example_info)
