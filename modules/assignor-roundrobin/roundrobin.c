/* SPDX-License-Identifier: Apache-2.0
 *
 * assignor-roundrobin: an example third-party server-side assignor
 * (KIP-848), written against include/samsa/assignor.h only, to show
 * that the group coordinator calls assignors it does not know.
 *
 * Assignor "roundrobin": the members sorted by member id; the subscribed
 * topics sorted by topic id, each topic's partitions in order; every
 * partition goes to the next member in that cyclic order (carried on
 * from topic to topic) that subscribes to its topic. It ignores what
 * members own now (no stickiness) and racks, so its result is a pure
 * function of the member ids, their subscriptions and the partition
 * counts, which a test can recompute.
 *
 * Enabled by naming it in group.consumer.assignors (e.g.
 * "uniform,range,roundrobin"); a KIP-848 client chooses it with
 * ServerAssignor "roundrobin" (librdkafka: group.remote.assignor,
 * the Java client: group.remote.assignor).
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

static const char *member_id(const samsa_group_spec_t *g, size_t i)
{
    return g->members[i].member_id ? g->members[i].member_id : "";
}

static int rr_assign(void *cap_state, const samsa_group_spec_t *g, const samsa_topic_describer_t *topics,
                     const samsa_assignment_builder_t *out, char *errstr, size_t errlen)
{
    (void)cap_state;
    if (g->n_members == 0)
        return SAMSA_OK;
    size_t nt = 0;
    for (size_t i = 0; i < g->n_members; i++)
        nt += g->members[i].n_subscribed;
    /* memory: both arrays are ours, freed before returning */
    samsa_uuid_t *tv = malloc((nt ? nt : 1) * sizeof *tv);
    size_t *order = malloc(g->n_members * sizeof *order);
    if (!tv || !order) {
        free(tv), free(order);
        snprintf(errstr, errlen, "out of memory");
        return SAMSA_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < g->n_members; i++)
        for (size_t j = 0; j < g->members[i].n_subscribed; j++)
            tv[k++] = g->members[i].subscribed_topic_ids[j];
    qsort(tv, k, sizeof *tv, cmp_uuid);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || cmp_uuid(&tv[u - 1], &tv[i]) != 0)
            tv[u++] = tv[i];
    /* member indexes by member id (insertion sort: qsort has no context
     * argument, and groups are small) */
    for (size_t i = 0; i < g->n_members; i++) {
        size_t j = i;
        for (; j > 0 && strcmp(member_id(g, order[j - 1]), member_id(g, i)) > 0; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }

    int rc = SAMSA_OK;
    size_t next = 0; /* position in order of the next member to consider */
    for (size_t t = 0; t < u && rc == SAMSA_OK; t++) {
        int32_t np = topics->num_partitions(topics->ctx, &tv[t]);
        for (int32_t p = 0; p < np && rc == SAMSA_OK; p++) {
            for (size_t step = 0; step < g->n_members; step++) {
                size_t pos = (next + step) % g->n_members;
                if (!subscribes(&g->members[order[pos]], &tv[t]))
                    continue;
                rc = out->assign(out->ctx, order[pos], &tv[t], p);
                next = pos + 1;
                break;
            }
        }
    }
    if (rc != SAMSA_OK)
        snprintf(errstr, errlen, "the coordinator refused an assignment (%d)", rc);
    free(tv), free(order);
    return rc;
}

static const samsa_assignor_t rr_assignor = {
    .hdr = {.struct_size = sizeof(samsa_assignor_t), .kind = SAMSA_CAP_ASSIGNOR, .name = "roundrobin"},
    .assign = rr_assign,
};

static int rr_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state, (void)errstr, (void)errlen;
    return api->register_capability(host, &rr_assignor.hdr, NULL);
}

static const samsa_plugin_info_t rr_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "assignor-roundrobin",
    .version = SAMSA_MODULE_VERSION,
    .description = "example server-side assignor \"roundrobin\": partitions dealt to members in member-id order",
    .license = "Apache-2.0",
    .init = rr_init,
};

SAMSA_PLUGIN_DECLARE(assignor_roundrobin, rr_info)
