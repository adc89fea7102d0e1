/* Fixture: a well-formed plugin of ABI 1.0, compiled against the frozen
 * 1.0 headers in abi-1.0/ (never include/), which must keep loading into
 * every later 1.x samsa. It registers one capability of every kind and
 * exercises the host API; tests/unit/plugin_test.c checks each through
 * the registry and the metrics it registers:
 *   samsa.plugin.abi-1-0.greeting_len   gauge, strlen of plugin.abi-1-0.greeting
 *   samsa.plugin.abi-1-0.worker_fini    counter, worker_fini calls
 *   samsa.plugin.abi-1-0.fini           counter, fini calls */
#include <stdlib.h>
#include <string.h>

#include "samsa/assignor.h"
#include "samsa/authz.h"
#include "samsa/codec.h"
#include "samsa/partitioner.h"
#include "samsa/plugin.h"
#include "samsa/sasl.h"
#include "samsa/tier.h"

struct st {
    samsa_host_t *host;
    const samsa_host_api_t *api;
    samsa_metric_t *worker_fini, *fini, *greeting_len;
};

static struct st g;

/* ---- codec "fixture-xor" (id 6): every byte xor 0x5a ---- */

static int xor_into(const uint8_t *in, size_t n, samsa_out_t *out)
{
    size_t avail;
    uint8_t *p = out->reserve(out, n ? n : 1, &avail);
    if (!p)
        return SAMSA_ENOSPC;
    for (size_t i = 0; i < n; i++)
        p[i] = in[i] ^ 0x5a;
    out->commit(out, n);
    return SAMSA_OK;
}

static int x_compress(void *s, int32_t level, const uint8_t *in, size_t n, samsa_out_t *out)
{
    (void)s;
    (void)level;
    return xor_into(in, n, out);
}

static int x_decompress(void *s, const uint8_t *in, size_t n, samsa_out_t *out)
{
    struct st *st = s;
    /* Per-thread state: a call counter in this thread's slot. */
    void **slot = st->api->worker_local(st->host);
    if (!*slot)
        *slot = calloc(1, sizeof(long));
    if (*slot)
        ++*(long *)*slot;
    return xor_into(in, n, out);
}

static const samsa_codec_t codec = {
    .hdr = {sizeof(samsa_codec_t), SAMSA_CAP_CODEC, "fixture-xor"},
    .id = 6,
    .compress = x_compress,
    .decompress = x_decompress,
};

/* ---- sasl "FIXTURE": one step, the client token is the user name ---- */

static int s_new(void *s, const samsa_sasl_conn_t *c, void **sess)
{
    (void)s;
    (void)c;
    *sess = calloc(1, 64);
    return *sess ? SAMSA_OK : SAMSA_ENOMEM;
}

static int s_step(void *s, void *sess, const uint8_t *in, size_t n, samsa_out_t *out, samsa_async_t *token,
                  char *errstr, size_t errlen)
{
    (void)s;
    (void)out;
    (void)token;
    if (n == 0 || n > 40) {
        strncpy(errstr, "bad user", errlen - 1);
        errstr[errlen - 1] = '\0';
        return SAMSA_EAUTH;
    }
    memcpy(sess, "User:", 5);
    memcpy((char *)sess + 5, in, n);
    return SAMSA_OK;
}

static const char *s_principal(void *s, void *sess)
{
    (void)s;
    return sess;
}

static void s_free(void *s, void *sess)
{
    (void)s;
    free(sess);
}

static const samsa_sasl_mech_t sasl = {
    .hdr = {sizeof(samsa_sasl_mech_t), SAMSA_CAP_SASL, "FIXTURE"},
    .session_new = s_new,
    .step = s_step,
    .principal = s_principal,
    .session_free = s_free,
};

/* ---- assignor "fixture": everything to member 0 ---- */

static int a_assign(void *s, const samsa_group_spec_t *g_, const samsa_topic_describer_t *t,
                    const samsa_assignment_builder_t *out, char *errstr, size_t errlen)
{
    (void)s;
    (void)errstr;
    (void)errlen;
    if (g_->n_members == 0)
        return SAMSA_OK;
    const samsa_group_member_t *m = &g_->members[0];
    for (size_t i = 0; i < m->n_subscribed; i++) {
        int32_t n = t->num_partitions(t->ctx, &m->subscribed_topic_ids[i]);
        for (int32_t p = 0; p < n; p++)
            out->assign(out->ctx, 0, &m->subscribed_topic_ids[i], p);
    }
    return SAMSA_OK;
}

static const samsa_assignor_t assignor = {
    .hdr = {sizeof(samsa_assignor_t), SAMSA_CAP_ASSIGNOR, "fixture"},
    .assign = a_assign,
};

/* ---- tier "fixture": every call completes asynchronously with OK ---- */

static int t_done(samsa_async_t *token)
{
    g.api->complete(token, SAMSA_OK, NULL, 0);
    return SAMSA_EAGAIN;
}
static int t_copy(void *s, const samsa_remote_segment_t *seg, const samsa_segment_files_t *f, samsa_out_t *o,
                  samsa_async_t *tk)
{
    (void)s, (void)seg, (void)f, (void)o;
    return t_done(tk);
}
static int t_fetch(void *s, const samsa_remote_segment_t *seg, int64_t a, int64_t b, samsa_out_t *o,
                   samsa_async_t *tk)
{
    (void)s, (void)seg, (void)a, (void)b, (void)o;
    return t_done(tk);
}
static int t_index(void *s, const samsa_remote_segment_t *seg, int type, samsa_out_t *o, samsa_async_t *tk)
{
    (void)s, (void)seg, (void)type, (void)o;
    return t_done(tk);
}
static int t_delete(void *s, const samsa_remote_segment_t *seg, samsa_async_t *tk)
{
    (void)s, (void)seg;
    return t_done(tk);
}
static int t_list(void *s, const samsa_uuid_t *id, int32_t p, const samsa_segment_sink_t *sink, samsa_async_t *tk)
{
    (void)s, (void)id, (void)p, (void)sink;
    return t_done(tk);
}
static int t_size(void *s, const samsa_uuid_t *id, int32_t p, int64_t *size, samsa_async_t *tk)
{
    (void)s, (void)id, (void)p, (void)tk;
    *size = 42;
    return SAMSA_OK;
}

static const samsa_tier_t tier = {
    .hdr = {sizeof(samsa_tier_t), SAMSA_CAP_TIER, "fixture"},
    .copy_segment = t_copy,
    .fetch_segment = t_fetch,
    .fetch_index = t_index,
    .delete_segment = t_delete,
    .put_segment_metadata = t_delete, /* same shape: completes with OK */
    .list_segments = t_list,
    .remote_log_size = t_size,
};

/* ---- authorizer "fixture": READ allowed, WRITE denied, rest deferred ---- */

static int z_authorize(void *s, const samsa_authz_ctx_t *c, const samsa_authz_action_t *a, size_t n,
                       uint8_t *r)
{
    (void)s;
    (void)c;
    for (size_t i = 0; i < n; i++)
        r[i] = a[i].operation == 3 ? SAMSA_AUTHZ_ALLOW : a[i].operation == 4 ? SAMSA_AUTHZ_DENY : SAMSA_AUTHZ_DEFER;
    return SAMSA_OK;
}

static const samsa_authorizer_t authz = {
    .hdr = {sizeof(samsa_authorizer_t), SAMSA_CAP_AUTHORIZER, "fixture"},
    .authorize = z_authorize,
};

/* ---- partitioner "fixture": key length modulo the count ---- */

static int32_t p_partition(void *s, const char *topic, const uint8_t *key, int32_t len, int32_t count)
{
    (void)topic;
    (void)key;
    if (s != &g)
        return -99; /* cap_state must come back unchanged */
    return len < 0 ? SAMSA_PARTITION_DEFER : len % count;
}

static const samsa_partitioner_t part = {
    .hdr = {sizeof(samsa_partitioner_t), SAMSA_CAP_PARTITIONER, "fixture"},
    .partition = p_partition,
};

/* ---- plugin ---- */

static void w_fini(void *state, void *ws)
{
    struct st *st = state;
    free(ws);
    st->api->metric_add(st->worker_fini, 1);
}

static void p_fini(void *state)
{
    struct st *st = state;
    st->api->metric_add(st->fini, 1);
}

static int p_init(samsa_host_t *host, const samsa_host_api_t *api, void **state, char *errstr, size_t errlen)
{
    (void)errstr;
    (void)errlen;
    g.host = host;
    g.api = api;
    *state = &g;
    g.worker_fini = api->metric_register(host, "worker_fini", SAMSA_METRIC_COUNTER, "worker_fini calls");
    g.fini = api->metric_register(host, "fini", SAMSA_METRIC_COUNTER, "fini calls");
    g.greeting_len = api->metric_register(host, "greeting_len", SAMSA_METRIC_GAUGE, "greeting length");
    const char *greeting = api->config_get(host, "greeting");
    api->metric_set(g.greeting_len, greeting ? (int64_t)strlen(greeting) : -1);
    if (greeting)
        api->log(host, SAMSA_LOG_INFO, "greeting: %s", greeting);
    const samsa_cap_hdr_t *caps[] = {&codec.hdr, &sasl.hdr, &assignor.hdr, &tier.hdr, &authz.hdr, &part.hdr};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        int rc = api->register_capability(host, caps[i], &g);
        if (rc != SAMSA_OK)
            return rc;
    }
    return SAMSA_OK;
}

static const samsa_plugin_info_t info = {
    SAMSA_PLUGIN_INFO_HEADER,
    .name = "abi-1-0",
    .version = "1.0-fixture",
    .description = "ABI 1.0 fixture: one capability of every kind",
    .license = "Apache-2.0",
    .init = p_init,
    .fini = p_fini,
    .worker_fini = w_fini,
};

SAMSA_PLUGIN_DECLARE(abi_1_0, info)
