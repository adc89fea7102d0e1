/* Client quotas' arithmetic: the sampled rate (util/rate.c, Kafka's
 * SampledStat and Rate: sample roll-over, obsolete samples, the minimum
 * window, the throttle time of QuotaUtils.throttleTime) and the
 * resolution of a client's quota in an image (controller/quotas.c,
 * Kafka's DefaultQuotaCallback precedence and the sharing of rates). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "controller/image.h"
#include "controller/image_build.h"
#include "proto/gen/client_quota_record.h"
#include "proto/gen/kmeta.h"
#include "util/rate.h"

static void test_rate_minimum_window(void **state)
{
    (void)state;
    struct rate r;
    rate_init(&r, 3, 1000);
    assert_int_equal(rate_window_ms(&r, 0), 2000);
    assert_true(rate_measure(&r, 0) == 0);
    rate_record(&r, 1000, 0);
    /* nothing elapsed yet: counted as (samples - 1) full windows */
    assert_int_equal(rate_window_ms(&r, 0), 2000);
    assert_true(rate_measure(&r, 0) == 500.0);
    /* 100/s over at a bound of 400/s: 25 % of the 2 s window */
    assert_int_equal(rate_throttle_ms(&r, 400, 0), 500);
    assert_int_equal(rate_throttle_ms(&r, 500, 0), 0);
    assert_int_equal(rate_throttle_ms(&r, 0, 0), 0);
}

static void test_rate_rolls_and_forgets(void **state)
{
    (void)state;
    struct rate r;
    rate_init(&r, 3, 1000);
    rate_record(&r, 1000, 0);
    rate_record(&r, 500, 999); /* same sample */
    rate_record(&r, 1000, 1500); /* the next one */
    /* 2500 over 1.5 s elapsed, raised to 2.5 s (one full window) */
    assert_int_equal(rate_window_ms(&r, 1500), 2500);
    assert_true(rate_measure(&r, 1500) == 1000.0);
    /* at 3 s the first sample (started at 0) is obsolete */
    assert_true(rate_measure(&r, 3000) == 400.0);
    /* at 4.5 s all are */
    assert_true(rate_measure(&r, 4500) == 0.0);
    /* taking back what was recorded */
    rate_record(&r, 800, 5000);
    rate_record(&r, -800, 5000);
    assert_true(rate_measure(&r, 5000) == 0.0);
}

static void test_rate_throttle_brings_rate_back(void **state)
{
    (void)state;
    /* a client sending 1000 every 100 ms against a bound of 5000/s:
     * waiting each throttle out keeps it at the bound */
    struct rate r;
    rate_init(&r, 11, 1000);
    int64_t now = 0, sent = 0;
    while (now < 60000) {
        rate_record(&r, 1000, now);
        sent += 1000;
        int64_t t = rate_throttle_ms(&r, 5000, now);
        now += 100 + t;
    }
    double avg = (double)sent / ((double)now / 1000.0);
    assert_true(avg > 4500 && avg < 5500);
}

/* ------------------------------------------------------------------ */

struct ent {
    const char *type, *name; /* name NULL: the default entity */
};

static void apply(struct mi_draft *d, int64_t off, const struct ent *e, int n, const char *key, double v, bool rm)
{
    client_quota_record_t r;
    client_quota_record_init(&r);
    client_quota_record_entity_data_t ed[3];
    for (int i = 0; i < n; i++) {
        ed[i].entity_type = KSTR(e[i].type);
        ed[i].entity_name = e[i].name ? KSTR(e[i].name) : KSTR_NULL;
    }
    r.entity.a = ed;
    r.entity.n = n;
    r.key = KSTR(key);
    r.value = v;
    r.remove = rm;
    char err[200];
    assert_int_equal(mi_draft_apply(d, off, KMETA_CLIENT_QUOTA_RECORD, 0, &r, err, sizeof err), 0);
}

/* The eight entity kinds, most specific first, with their value. */
static const struct {
    struct ent e[2];
    int n;
    double v;
    bool by_user, by_client;
} kinds[8] = {
    {{{"user", "u1"}, {"client-id", "c1"}}, 2, 80, true, true},
    {{{"user", "u1"}, {"client-id", NULL}}, 2, 70, true, true},
    {{{"user", "u1"}}, 1, 60, true, false},
    {{{"user", NULL}, {"client-id", "c1"}}, 2, 50, true, true},
    {{{"user", NULL}, {"client-id", NULL}}, 2, 40, true, true},
    {{{"user", NULL}}, 1, 30, true, false},
    {{{"client-id", "c1"}}, 1, 20, false, true},
    {{{"client-id", NULL}}, 1, 10, false, true},
};

static void test_precedence(void **state)
{
    (void)state;
    struct samsa_config *cfg = config_new();
    struct mi_draft *d = mi_draft_begin(NULL, cfg, 1);
    /* set least specific first, so that order in the image is not what decides */
    for (int k = 7; k >= 0; k--)
        apply(d, 7 - k, kinds[k].e, kinds[k].n, "producer_byte_rate", kinds[k].v, false);
    apply(d, 8, (struct ent[]){{"ip", NULL}}, 1, "connection_creation_rate", 5, false);
    struct mimage *img = mi_draft_finish(d);
    assert_int_equal(img->nquotas, 9);
    uint64_t gen = img->quota_gen;
    assert_true(gen > 0);
    double v;
    bool bu, bc;
    /* another user and client: the default user with the default client */
    assert_true(mimage_quota_lookup(img, MI_QUOTA_PRODUCER_BYTE_RATE, "u2", "c2", &v, &bu, &bc));
    assert_true(v == 40 && bu && bc);
    assert_false(mimage_quota_lookup(img, MI_QUOTA_CONSUMER_BYTE_RATE, "u1", "c1", &v, &bu, &bc));
    /* remove the most specific one at a time: the next one takes over */
    for (int k = 0; k < 8; k++) {
        assert_true(mimage_quota_lookup(img, MI_QUOTA_PRODUCER_BYTE_RATE, "u1", "c1", &v, &bu, &bc));
        assert_true(v == kinds[k].v);
        assert_int_equal(bu, kinds[k].by_user);
        assert_int_equal(bc, kinds[k].by_client);
        d = mi_draft_begin(img, cfg, 1);
        apply(d, 100 + k, kinds[k].e, kinds[k].n, "producer_byte_rate", 0, true);
        struct mimage *next = mi_draft_finish(d);
        assert_true(next->quota_gen != img->quota_gen);
        assert_int_equal(next->nquotas, 8 - k);
        mimage_release(img);
        img = next;
    }
    assert_false(mimage_quota_lookup(img, MI_QUOTA_PRODUCER_BYTE_RATE, "u1", "c1", &v, &bu, &bc));
    /* removing what is not there changes nothing, not even the generation */
    gen = img->quota_gen;
    d = mi_draft_begin(img, cfg, 1);
    apply(d, 200, kinds[0].e, 2, "producer_byte_rate", 0, true);
    struct mimage *same = mi_draft_finish(d);
    assert_true(same->quota_gen == gen);
    mimage_release(same);
    mimage_release(img);
    config_free(cfg);
}

static void test_keys_and_values(void **state)
{
    (void)state;
    struct samsa_config *cfg = config_new();
    struct mi_draft *d = mi_draft_begin(NULL, cfg, 1);
    const struct ent u[] = {{"user", "alice"}};
    apply(d, 0, u, 1, "producer_byte_rate", 1024, false);
    apply(d, 1, u, 1, "consumer_byte_rate", 2048, false);
    apply(d, 2, u, 1, "producer_byte_rate", 4096, false); /* replaces */
    apply(d, 3, u, 1, "no_such_key", 1, false);           /* skipped */
    struct mimage *img = mi_draft_finish(d);
    assert_int_equal(img->nquotas, 1);
    assert_true(img->quotas[0].values[MI_QUOTA_PRODUCER_BYTE_RATE] == 4096);
    assert_true(img->quotas[0].values[MI_QUOTA_CONSUMER_BYTE_RATE] == 2048);
    assert_int_equal(img->quotas[0].user.kind, MI_QN_NAMED);
    assert_string_equal(img->quotas[0].user.name, "alice");
    assert_int_equal(img->quotas[0].client_id.kind, MI_QN_ABSENT);
    assert_int_equal(mi_quota_key_of("request_percentage", 18), MI_QUOTA_REQUEST_PERCENTAGE);
    assert_int_equal(mi_quota_key_of("nope", 4), -1);
    assert_string_equal(mi_quota_key_name(MI_QUOTA_CONTROLLER_MUTATION_RATE), "controller_mutation_rate");
    mimage_release(img);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_minimum_window),
        cmocka_unit_test(test_rate_rolls_and_forgets),
        cmocka_unit_test(test_rate_throttle_brings_rate_back),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_keys_and_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
