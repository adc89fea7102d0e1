/* The fetch session cache (api/fetch_session.c) at its bound
 * (max.incremental.fetch.session.cache.slots): a full cache refuses a
 * new session (session id 0 for the client) unless KIP-227 lets it
 * evict one: the least recently used one when stale, a consumer's for
 * a follower, a session older than the eviction time for a larger one. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "api/fetch_session.h"
#include "util/chgen.h"

#define EV FETCH_SESSION_EVICTION_MS

/* The cache's calls as one thread makes them: fetch_session_new returns
 * the session's shard locked, find and touch want it held. */
static struct fetch_session *new_(struct fetch_session_cache *c, bool by_id, bool privileged, int32_t nparts,
                                  int64_t now)
{
    struct fetch_session *s = fetch_session_new(c, by_id, privileged, nparts, now);
    if (s)
        fetch_session_unlock(c, s->id);
    return s;
}

static struct fetch_session *find_(struct fetch_session_cache *c, int32_t id)
{
    fetch_session_lock(c, id);
    struct fetch_session *s = fetch_session_find(c, id);
    fetch_session_unlock(c, id);
    return s;
}

static void touch_(struct fetch_session_cache *c, struct fetch_session *s, int64_t now)
{
    fetch_session_lock(c, s->id);
    fetch_session_touch(c, s, now);
    fetch_session_unlock(c, s->id);
}

static void test_zero_slots_never_create(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 0);
    assert_null(new_(&c, false, false, 1, 0));
    assert_null(new_(&c, false, true, 100, 0));
    assert_int_equal(c.count, 0);
    fetch_session_cache_destroy(&c);
}

static void test_full_cache_refuses_recent_sessions(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 2);
    struct fetch_session *a = new_(&c, false, false, 3, 0);
    struct fetch_session *b = new_(&c, false, false, 3, 10);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(c.count, 2);
    /* both recent: a consumer session of any size is refused */
    assert_null(new_(&c, false, false, 1, 20));
    assert_null(new_(&c, false, false, 50, 20));
    assert_int_equal(c.count, 2);
    assert_ptr_equal(find_(&c, a->id), a);
    assert_ptr_equal(find_(&c, b->id), b);
    fetch_session_cache_destroy(&c);
}

static void test_stale_session_is_evicted(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 2);
    struct fetch_session *a = new_(&c, false, false, 3, 0);
    struct fetch_session *b = new_(&c, false, false, 3, 0);
    int32_t aid = a->id, bid = b->id;
    touch_(&c, b, EV);
    /* a unused for more than the eviction time: the new one replaces it */
    struct fetch_session *n = new_(&c, false, false, 1, EV + 1);
    assert_non_null(n);
    assert_int_equal(c.count, 2);
    assert_null(find_(&c, aid));
    assert_ptr_equal(find_(&c, bid), b);
    fetch_session_cache_destroy(&c);
}

static void test_follower_evicts_consumer(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 2);
    struct fetch_session *a = new_(&c, false, false, 9, 0);
    struct fetch_session *b = new_(&c, false, false, 2, 0);
    int32_t aid = a->id, bid = b->id;
    for (int i = 0; i < 9; i++)
        fetch_session_part(a, KSTR_LIT("t"), NULL, i, true);
    for (int i = 0; i < 2; i++)
        fetch_session_part(b, KSTR_LIT("t"), NULL, i, true);
    /* a follower's session evicts the smallest consumer session at once */
    struct fetch_session *f = new_(&c, false, true, 1, 5);
    assert_non_null(f);
    assert_true(f->privileged);
    assert_null(find_(&c, bid));
    assert_ptr_equal(find_(&c, aid), a);
    /* another follower may evict the consumer left, not the follower */
    struct fetch_session *g = new_(&c, false, true, 1, 6);
    assert_non_null(g);
    assert_null(find_(&c, aid));
    assert_ptr_equal(find_(&c, f->id), f);
    /* a third follower finds only recent follower sessions: refused */
    assert_null(new_(&c, false, true, 100, 7));
    fetch_session_cache_destroy(&c);
}

static void test_larger_evicts_old_smaller(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 2);
    struct fetch_session *a = new_(&c, false, false, 4, 0);
    struct fetch_session *b = new_(&c, false, false, 2, 0);
    for (int i = 0; i < 4; i++)
        fetch_session_part(a, KSTR_LIT("t"), NULL, i, true);
    for (int i = 0; i < 2; i++)
        fetch_session_part(b, KSTR_LIT("t"), NULL, i, true);
    int32_t aid = a->id, bid = b->id;
    /* both in use (not stale) but created longer ago than the eviction
     * time: a smaller new session is refused, a larger one evicts the
     * smallest */
    touch_(&c, a, EV + 5);
    touch_(&c, b, EV + 5);
    assert_null(new_(&c, false, false, 1, EV + 10));
    struct fetch_session *n = new_(&c, false, false, 3, EV + 10);
    assert_non_null(n);
    assert_null(find_(&c, bid));
    assert_ptr_equal(find_(&c, aid), a);
    fetch_session_cache_destroy(&c);
}

/* The cache is sharded by id, the bound and the LRU are not: 40 sessions
 * spread over every shard fill a 40-slot cache, and the stale one to go
 * is the least recently used of them all, whatever its shard. */
static void test_bound_and_lru_span_shards(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 40);
    int32_t ids[40];
    for (int i = 0; i < 40; i++) {
        struct fetch_session *s = new_(&c, false, false, 1, i);
        assert_non_null(s);
        ids[i] = s->id;
    }
    assert_int_equal(c.count, 40);
    for (int k = 0; k < c.nshards; k++)
        assert_true(c.shards[k].count > 0);
    assert_null(new_(&c, false, false, 1, 100));
    /* all but ids[7] used recently: ids[7] is the one stale session */
    for (int i = 0; i < 40; i++)
        if (i != 7)
            touch_(&c, find_(&c, ids[i]), EV + 50);
    struct fetch_session *n = new_(&c, false, false, 1, EV + 60);
    assert_non_null(n);
    assert_int_equal(c.count, 40);
    assert_null(find_(&c, ids[7]));
    for (int i = 0; i < 40; i++)
        if (i != 7)
            assert_non_null(find_(&c, ids[i]));
    assert_null(new_(&c, false, false, 0, EV + 70));
    fetch_session_cache_destroy(&c);
}

/* Two threads creating, using and closing sessions in a cache of 8:
 * the bound holds at every step and the shards' counts add up to it. */
struct churn {
    struct fetch_session_cache *c;
    int seed;
    int over; /* times the cache was seen above its bound */
};

static void *churn_main(void *arg)
{
    struct churn *ch = arg;
    unsigned r = (unsigned)ch->seed;
    int32_t mine[4] = {0};
    for (int i = 0; i < 20000; i++) {
        r = r * 1103515245u + 12345u;
        int slot = (int)((r >> 16) & 3);
        if (mine[slot] > 0) {
            int32_t id = mine[slot];
            fetch_session_lock(ch->c, id);
            struct fetch_session *s = fetch_session_find(ch->c, id);
            if (s && (r & 0x100))
                fetch_session_remove(ch->c, s);
            else if (s)
                fetch_session_touch(ch->c, s, i);
            fetch_session_unlock(ch->c, id);
            if (!s || (r & 0x100))
                mine[slot] = 0;
        } else {
            /* stale from the start: a full cache always evicts for it */
            struct fetch_session *s = fetch_session_new(ch->c, false, false, 1, EV + 1 + i);
            if (s) {
                fetch_session_part(s, KSTR_LIT("t"), NULL, slot, true);
                mine[slot] = s->id;
                fetch_session_unlock(ch->c, s->id);
            }
        }
        if (atomic_load(&ch->c->count) > ch->c->max)
            ch->over++;
    }
    return NULL;
}

static void test_concurrent_churn(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 8);
    struct churn a = {&c, 1, 0}, b = {&c, 2, 0};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, churn_main, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, churn_main, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.over + b.over, 0);
    int32_t sum = 0;
    for (int k = 0; k < c.nshards; k++)
        sum += c.shards[k].count;
    assert_int_equal(sum, c.count);
    assert_true(c.count <= 8);
    fetch_session_cache_destroy(&c);
}

/* Runs: consecutive partitions of one topic, the unit an incremental
 * consumer poll skips (util/chgen.h). */
static struct fetch_session *runs_session(struct fetch_session_cache *c)
{
    fetch_session_cache_init(c, 4);
    struct fetch_session *s = fetch_session_new(c, false, false, 4, 0);
    fetch_session_part(s, KSTR_LIT("a"), &(kuuid_t){{0}}, 0, true);
    fetch_session_part(s, KSTR_LIT("a"), &(kuuid_t){{0}}, 1, true);
    fetch_session_part(s, KSTR_LIT("b"), &(kuuid_t){{0}}, 0, true);
    fetch_session_part(s, KSTR_LIT("a"), &(kuuid_t){{0}}, 2, true); /* added later: a run of its own */
    fetch_session_unlock(c, s->id);
    return s;
}

static void test_runs_follow_the_partitions(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    struct fetch_session *s = runs_session(&c);
    assert_true(s->runs_stale);
    fetch_session_runs_build(s);
    assert_false(s->runs_stale);
    assert_int_equal(s->nruns, 3);
    int32_t want[3][2] = {{0, 2}, {2, 1}, {3, 1}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s->runs[i].start, want[i][0]);
        assert_int_equal(s->runs[i].count, want[i][1]);
        assert_false(s->runs[i].valid); /* a new layout is walked whole */
    }
    int32_t run_of[4] = {0, 0, 1, 2};
    for (int i = 0; i < 4; i++)
        assert_int_equal(s->parts[i].run, run_of[i]);
    uint32_t layout = s->layout;
    fetch_session_runs_build(s); /* nothing changed: kept */
    assert_int_equal(s->layout, layout);
    /* forgetting b-0 merges the a runs */
    fetch_session_forget(s, KSTR_LIT("b"), &(kuuid_t){{0}}, 0);
    assert_true(s->runs_stale);
    fetch_session_runs_build(s);
    assert_int_equal(s->nruns, 1);
    assert_int_equal(s->runs[0].count, 3);
    assert_int_not_equal(s->layout, layout);
    fetch_session_cache_destroy(&c);
}

static void test_run_skipped_only_when_nothing_changed(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    struct fetch_session *s = runs_session(&c);
    fetch_session_runs_build(s);
    kuuid_t id = {{1, 2, 3}}, other = {{9}};
    uint32_t slot = chgen_slot_of(id.b, 0);
    uint64_t g = chgen_read(slot);
    struct fs_run *r = &s->runs[0];
    /* never walked since the layout: not skipped */
    assert_false(fetch_session_run_unchanged(s, r, 0, &id, g));
    /* what a walk that answered everything stores */
    r->valid = true;
    r->topic_id = id;
    r->slot = slot;
    r->gen = g;
    s->isolation = 0;
    assert_true(fetch_session_run_unchanged(s, r, 0, &id, g));
    /* a change anywhere in the topic: its generation moved */
    chgen_bump(id.b, CHGEN_CHUNK - 1); /* the run's chunk: partitions 0..CHUNK-1 */
    uint64_t g2 = chgen_read(slot);
    assert_true(g2 != g);
    assert_false(fetch_session_run_unchanged(s, r, 0, &id, g2));
    r->gen = g2;
    assert_true(fetch_session_run_unchanged(s, r, 0, &id, g2));
    /* every topic changed (a log dir offline) */
    uint64_t go = chgen_read(chgen_slot_of(other.b, 0));
    chgen_bump_all();
    assert_true(chgen_read(slot) != g2);
    assert_true(chgen_read(chgen_slot_of(other.b, 0)) != go);
    assert_false(fetch_session_run_unchanged(s, r, 0, &id, chgen_read(slot)));
    g2 = r->gen = chgen_read(slot);
    /* another topic of the same name (deleted and created again) */
    assert_false(fetch_session_run_unchanged(s, r, 0, &other, g2));
    /* the topic is gone from the image */
    assert_false(fetch_session_run_unchanged(s, r, 0, NULL, g2));
    /* a read_committed poll after read_uncommitted walks */
    assert_false(fetch_session_run_unchanged(s, r, 1, &id, g2));
    /* news left behind (records past the fetch offset, an error) */
    r->pending = true;
    assert_false(fetch_session_run_unchanged(s, r, 0, &id, g2));
    r->pending = false;
    /* the request moved a fetch offset of the run: dirty */
    fetch_session_lock(&c, s->id);
    struct fs_partition *sp = fetch_session_part(s, KSTR_LIT("a"), &(kuuid_t){{0}}, 1, false);
    fetch_session_part_changed(s, sp);
    fetch_session_unlock(&c, s->id);
    assert_true(r->dirty);
    assert_false(s->runs[1].dirty);
    assert_false(fetch_session_run_unchanged(s, r, 0, &id, g2));
    r->dirty = false;
    assert_true(fetch_session_run_unchanged(s, r, 0, &id, g2));
    /* a partition added: the layout is stale, nothing is skipped */
    fetch_session_part(s, KSTR_LIT("c"), &(kuuid_t){{0}}, 0, true);
    assert_false(fetch_session_run_unchanged(s, r, 0, &id, g2));
    fetch_session_cache_destroy(&c);
}

static void test_chgen_slots(void **state)
{
    (void)state;
    /* a chunk's partitions share its slot; bumping one slot leaves the
     * others (two chunks may share a slot: a spurious walk only) */
    kuuid_t a = {{0xaa, 1}}, b = {{0xbb, 2}};
    uint32_t sa = chgen_slot_of(a.b, 0), sb = chgen_slot_of(b.b, 0), sa1 = chgen_slot_of(a.b, 1);
    assert_true(sa < CHGEN_SLOTS && sb < CHGEN_SLOTS && sa1 < CHGEN_SLOTS);
    assert_int_equal(chgen_chunk_of(CHGEN_CHUNK - 1), 0);
    assert_int_equal(chgen_chunk_of(CHGEN_CHUNK), 1);
    uint64_t ga = chgen_read(sa), gb = chgen_read(sb), ga1 = chgen_read(sa1);
    chgen_bump(a.b, 3);
    assert_true(chgen_read(sa) == ga + 1);
    if (sa != sb)
        assert_true(chgen_read(sb) == gb);
    if (sa != sa1)
        assert_true(chgen_read(sa1) == ga1);
    /* a topic's image change: every chunk */
    ga = chgen_read(sa);
    chgen_bump_topic(a.b, CHGEN_CHUNK + 1);
    assert_true(chgen_read(sa) != ga);
    assert_true(chgen_read(sa1) != ga1);
    assert_true(chgen_park_key(a.b) != chgen_park_key(b.b));
}

static void test_runs_split_at_chunks(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 4);
    struct fetch_session *s = fetch_session_new(&c, false, false, 4, 0);
    int32_t idx[] = {0, CHGEN_CHUNK - 1, CHGEN_CHUNK, CHGEN_CHUNK + 1, 1};
    for (int i = 0; i < 5; i++)
        fetch_session_part(s, KSTR_LIT("a"), &(kuuid_t){{0}}, idx[i], true);
    fetch_session_unlock(&c, s->id);
    fetch_session_runs_build(s);
    /* chunk 0 (0, 31), chunk 1 (32, 33), chunk 0 again (1) */
    assert_int_equal(s->nruns, 3);
    assert_int_equal(s->runs[0].count, 2);
    assert_int_equal(s->runs[1].count, 2);
    assert_int_equal(s->runs[2].start, 4);
    fetch_session_cache_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_slots_never_create),
        cmocka_unit_test(test_full_cache_refuses_recent_sessions),
        cmocka_unit_test(test_stale_session_is_evicted),
        cmocka_unit_test(test_follower_evicts_consumer),
        cmocka_unit_test(test_larger_evicts_old_smaller),
        cmocka_unit_test(test_bound_and_lru_span_shards),
        cmocka_unit_test(test_concurrent_churn),
        cmocka_unit_test(test_runs_follow_the_partitions),
        cmocka_unit_test(test_run_skipped_only_when_nothing_changed),
        cmocka_unit_test(test_chgen_slots),
        cmocka_unit_test(test_runs_split_at_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
