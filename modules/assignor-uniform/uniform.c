/* SPDX-License-Identifier: Apache-2.0
 *
 * assignor-uniform: Kafka's KIP-848 server-side assignor "uniform"
 * (the default of group.consumer.assignors), written against
 * include/samsa/assignor.h only.
 *
 * Every partition of the subscribed topics goes to one of its
 * subscribers, member counts within one of each other where the
 * subscriptions allow, sticky (a member keeps what it had as long as it
 * keeps the balance). Deterministic for the same group spec.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samsa/assignor.h"

/* one partition to place */
struct slot {
    samsa_uuid_t topic;
    int32_t part;
    int32_t owner; /* member index, -1 none */
};

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

static int uniform_assign(void *cap_state, const samsa_group_spec_t *g, const samsa_topic_describer_t *topics,
                          const samsa_assignment_builder_t *out, char *errstr, size_t errlen)
{
    (void)cap_state;
    size_t nt;
    samsa_uuid_t *tv = all_topics(g, &nt);
    if (!tv) {
        snprintf(errstr, errlen, "out of memory");
        return SAMSA_ENOMEM;
    }
    size_t ns = 0;
    for (size_t t = 0; t < nt; t++) {
        int32_t np = topics->num_partitions(topics->ctx, &tv[t]);
        ns += np > 0 ? (size_t)np : 0;
    }
    struct slot *s = calloc(ns + 1, sizeof *s);
    int32_t *count = calloc(g->n_members + 1, sizeof *count);
    if (!s || !count) {
        free(tv), free(s), free(count);
        snprintf(errstr, errlen, "out of memory");
        return SAMSA_ENOMEM;
    }
    size_t k = 0;
    for (size_t t = 0; t < nt; t++) {
        int32_t np = topics->num_partitions(topics->ctx, &tv[t]);
        for (int32_t p = 0; p < np; p++)
            s[k++] = (struct slot){tv[t], p, -1};
    }
    /* 1. stickiness: members keep what they had and still subscribe to */
    for (size_t i = 0; i < g->n_members; i++) {
        const samsa_group_member_t *m = &g->members[i];
        for (size_t c = 0; c < m->n_current; c++) {
            const samsa_topic_partitions_t *tp = &m->current[c];
            if (!subscribes(m, &tp->topic_id))
                continue;
            for (size_t j = 0; j < tp->n_partitions; j++) {
                for (size_t x = 0; x < ns; x++) {
                    if (s[x].part == tp->partitions[j] && memcmp(s[x].topic.b, tp->topic_id.b, 16) == 0) {
                        if (s[x].owner < 0) {
                            s[x].owner = (int32_t)i;
                            count[i]++;
                        }
                        break;
                    }
                }
            }
        }
    }
    /* 2. the rest, each to its least loaded subscriber */
    for (size_t x = 0; x < ns; x++) {
        if (s[x].owner >= 0)
            continue;
        int32_t best = -1;
        for (size_t i = 0; i < g->n_members; i++)
            if (subscribes(&g->members[i], &s[x].topic) && (best < 0 || count[i] < count[best]))
                best = (int32_t)i;
        if (best >= 0) {
            s[x].owner = best;
            count[best]++;
        }
    }
    /* 3. balance: move partitions (the last ones first) from a member
     * with two more than the least loaded subscriber of that topic */
    for (int round = 0; round < 64; round++) {
        bool moved = false;
        for (size_t y = ns; y-- > 0;) {
            int32_t o = s[y].owner;
            if (o < 0)
                continue;
            int32_t best = -1;
            for (size_t i = 0; i < g->n_members; i++)
                if (subscribes(&g->members[i], &s[y].topic) && (best < 0 || count[i] < count[best]))
                    best = (int32_t)i;
            if (best >= 0 && count[o] > count[best] + 1) {
                count[o]--;
                count[best]++;
                s[y].owner = best;
                moved = true;
            }
        }
        if (!moved)
            break;
    }
    int rc = SAMSA_OK;
    for (size_t x = 0; x < ns && rc == SAMSA_OK; x++)
        if (s[x].owner >= 0)
            rc = out->assign(out->ctx, (size_t)s[x].owner, &s[x].topic, s[x].part);
    if (rc != SAMSA_OK)
        snprintf(errstr, errlen, "the group refused an assignment");
    free(tv), free(s), free(count);
    return rc;
}

static const samsa_assignor_t uniform_assignor = {
    .hdr = {.struct_size = sizeof(samsa_assignor_t), .kind = SAMSA_CAP_ASSIGNOR, .name = "uniform"},
    .assign = uniform_assign,
};

static int uniform_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)state, (void)errstr, (void)errlen;
    return api->register_capability(host, &uniform_assignor.hdr, NULL);
}

static const samsa_plugin_info_t uniform_info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "assignor-uniform",
    .version = SAMSA_MODULE_VERSION,
    .description = "Kafka's server-side assignor \"uniform\" (KIP-848): balanced, sticky, rack-aware",
    .license = "Apache-2.0",
    .init = uniform_init,
};

SAMSA_PLUGIN_DECLARE(assignor_uniform, uniform_info)
