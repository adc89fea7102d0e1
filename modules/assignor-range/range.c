/* SPDX-License-Identifier: Apache-2.0
 *
 * assignor-range: Kafka's KIP-848 server-side assignor "range", written
 * against include/samsa/assignor.h only.
 *
 * The same assignments as Kafka's RangeAssignor of the KIP-848 group
 * coordinator (Kafka 4.0, KAFKA-16944): per topic, its subscribers in
 * order (static members first, by group.instance.id; then the others by
 * member id; both compared as Java Strings), each given a contiguous
 * range of partitions, P / S each and the first P % S one more. No
 * stickiness and no racks: Kafka's range assignor has neither; topics
 * subscribed by the same members with the same partition count are
 * therefore co-partitioned (partition i of each to the same member).
 * A subscribed topic the describer does not know (-1 partitions) fails
 * the assignment, as Kafka's PartitionAssignorException does.
 * Memory: what assign allocates it frees before returning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samsa/assignor.h"

static bool subscribes(const samsa_group_member_t *m, const samsa_uuid_t *t)
{
    for (size_t i = 0; i < m->n_subscribed; i++)
        if (memcmp(m->subscribed_topic_ids[i].b, t->b, 16) == 0)
            return true;
    return false;
}

static int cmp_uuid(const void *a, const void *b)
{
    return memcmp(((const samsa_uuid_t *)a)->b, ((const samsa_uuid_t *)b)->b, 16);
}

/* Every subscribed topic, sorted, without duplicates. */
static samsa_uuid_t *all_topics(const samsa_group_spec_t *g, size_t *n)
{
    size_t cap = 1;
    for (size_t i = 0; i < g->n_members; i++)
        cap += g->members[i].n_subscribed;
    samsa_uuid_t *v = calloc(cap, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < g->n_members; i++)
        for (size_t j = 0; j < g->members[i].n_subscribed; j++)
            v[k++] = g->members[i].subscribed_topic_ids[j];
    if (v)
        qsort(v, k, sizeof *v, cmp_uuid);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || cmp_uuid(&v[u - 1], &v[i]) != 0)
            v[u++] = v[i];
    *n = u;
    return v;
}

/* Kafka's member order: a member with an instance id before one
 * without; two static members by instance id, two others by member id.
 * strcmp orders UTF-8 as String.compareTo orders UTF-16 except for
 * characters beyond the BMP, which ids do not use. */
static int member_cmp(const samsa_group_member_t *a, const samsa_group_member_t *b)
{
    if (a->instance_id && b->instance_id)
        return strcmp(a->instance_id, b->instance_id);
    if (a->instance_id)
        return -1;
    if (b->instance_id)
        return 1;
    return strcmp(a->member_id ? a->member_id : "", b->member_id ? b->member_id : "");
}

/* Member indexes in Kafka's order (insertion sort: groups are small,
 * and qsort has no context argument in C11). */
static void sort_members(const samsa_group_spec_t *g, size_t *idx, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && member_cmp(&g->members[idx[j - 1]], &g->members[v]) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

static int range_assign(void *cap_state, const samsa_group_spec_t *g, const samsa_topic_describer_t *topics,
                        const samsa_assignment_builder_t *out, char *errstr, size_t errlen)
{
    (void)cap_state;
    if (errlen > 0)
        errstr[0] = 0;
    size_t nt;
    samsa_uuid_t *tv = all_topics(g, &nt);
    size_t *idx = calloc(g->n_members + 1, sizeof *idx);
    if (!tv || !idx) {
        free(tv), free(idx);
        snprintf(errstr, errlen, "out of memory");
        return SAMSA_ENOMEM;
    }
    int rc = SAMSA_OK;
    for (size_t t = 0; t < nt && rc == SAMSA_OK; t++) {
        size_t n = 0;
        for (size_t i = 0; i < g->n_members; i++)
            if (subscribes(&g->members[i], &tv[t]))
                idx[n++] = i;
        int32_t np = topics->num_partitions(topics->ctx, &tv[t]);
        if (np < 0) {
            snprintf(errstr, errlen, "a member is subscribed to a topic that is not in the topic metadata");
            rc = SAMSA_EINVAL;
            break;
        }
        if (n == 0 || np == 0)
            continue;
        sort_members(g, idx, n);
        int32_t per = np / (int32_t)n, extra = np % (int32_t)n, p = 0;
        for (size_t k = 0; k < n && rc == SAMSA_OK; k++) {
            int32_t take = per + ((int32_t)k < extra ? 1 : 0);
            for (int32_t j = 0; j < take && rc == SAMSA_OK; j++)
                rc = out->assign(out->ctx, idx[k], &tv[t], p++);
        }
    }
    if (rc != SAMSA_OK && !errstr[0])
        snprintf(errstr, errlen, "the coordinator refused an assignment (%d)", rc);
    free(tv), free(idx);
    return rc;
}

static const samsa_assignor_t range_assignor = {
    .hdr = {.struct_size = sizeof(samsa_assignor_t), .kind = SAMSA_CAP_ASSIGNOR, .name = "range"},
    .assign = range_assign,
};

static int range_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state, (void)errstr, (void)errlen;
    return api->register_capability(host, &range_assignor.hdr, NULL);
}

static const samsa_plugin_info_t range_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "assignor-range",
    .version = SAMSA_MODULE_VERSION,
    .description = "Kafka's server-side assignor \"range\" (KIP-848): contiguous ranges per topic",
    .license = "Apache-2.0",
    .init = range_init,
};

SAMSA_PLUGIN_DECLARE(assignor_range, range_info)
