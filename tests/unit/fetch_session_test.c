/* The fetch session cache (api/fetch_session.c) at its bound
 * (max.incremental.fetch.session.cache.slots): a full cache refuses a
 * new session (session id 0 for the client) unless KIP-227 lets it
 * evict one: the least recently used one when stale, a consumer's for
 * a follower, a session older than the eviction time for a larger one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "api/fetch_session.h"

#define EV FETCH_SESSION_EVICTION_MS

static void test_zero_slots_never_create(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 0);
    assert_null(fetch_session_new(&c, false, false, 1, 0));
    assert_null(fetch_session_new(&c, false, true, 100, 0));
    assert_int_equal(c.count, 0);
    fetch_session_cache_destroy(&c);
}

static void test_full_cache_refuses_recent_sessions(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 2);
    struct fetch_session *a = fetch_session_new(&c, false, false, 3, 0);
    struct fetch_session *b = fetch_session_new(&c, false, false, 3, 10);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(c.count, 2);
    /* both recent: a consumer session of any size is refused */
    assert_null(fetch_session_new(&c, false, false, 1, 20));
    assert_null(fetch_session_new(&c, false, false, 50, 20));
    assert_int_equal(c.count, 2);
    assert_ptr_equal(fetch_session_find(&c, a->id), a);
    assert_ptr_equal(fetch_session_find(&c, b->id), b);
    fetch_session_cache_destroy(&c);
}

static void test_stale_session_is_evicted(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 2);
    struct fetch_session *a = fetch_session_new(&c, false, false, 3, 0);
    struct fetch_session *b = fetch_session_new(&c, false, false, 3, 0);
    int32_t aid = a->id, bid = b->id;
    fetch_session_touch(&c, b, EV);
    /* a unused for more than the eviction time: the new one replaces it */
    struct fetch_session *n = fetch_session_new(&c, false, false, 1, EV + 1);
    assert_non_null(n);
    assert_int_equal(c.count, 2);
    assert_null(fetch_session_find(&c, aid));
    assert_ptr_equal(fetch_session_find(&c, bid), b);
    fetch_session_cache_destroy(&c);
}

static void test_follower_evicts_consumer(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 2);
    struct fetch_session *a = fetch_session_new(&c, false, false, 9, 0);
    struct fetch_session *b = fetch_session_new(&c, false, false, 2, 0);
    int32_t aid = a->id, bid = b->id;
    for (int i = 0; i < 9; i++)
        fetch_session_part(a, KSTR_LIT("t"), NULL, i, true);
    for (int i = 0; i < 2; i++)
        fetch_session_part(b, KSTR_LIT("t"), NULL, i, true);
    /* a follower's session evicts the smallest consumer session at once */
    struct fetch_session *f = fetch_session_new(&c, false, true, 1, 5);
    assert_non_null(f);
    assert_true(f->privileged);
    assert_null(fetch_session_find(&c, bid));
    assert_ptr_equal(fetch_session_find(&c, aid), a);
    /* another follower may evict the consumer left, not the follower */
    struct fetch_session *g = fetch_session_new(&c, false, true, 1, 6);
    assert_non_null(g);
    assert_null(fetch_session_find(&c, aid));
    assert_ptr_equal(fetch_session_find(&c, f->id), f);
    /* a third follower finds only recent follower sessions: refused */
    assert_null(fetch_session_new(&c, false, true, 100, 7));
    fetch_session_cache_destroy(&c);
}

static void test_larger_evicts_old_smaller(void **state)
{
    (void)state;
    struct fetch_session_cache c;
    fetch_session_cache_init(&c, 2);
    struct fetch_session *a = fetch_session_new(&c, false, false, 4, 0);
    struct fetch_session *b = fetch_session_new(&c, false, false, 2, 0);
    for (int i = 0; i < 4; i++)
        fetch_session_part(a, KSTR_LIT("t"), NULL, i, true);
    for (int i = 0; i < 2; i++)
        fetch_session_part(b, KSTR_LIT("t"), NULL, i, true);
    int32_t aid = a->id, bid = b->id;
    /* both in use (not stale) but created longer ago than the eviction
     * time: a smaller new session is refused, a larger one evicts the
     * smallest */
    fetch_session_touch(&c, a, EV + 5);
    fetch_session_touch(&c, b, EV + 5);
    assert_null(fetch_session_new(&c, false, false, 1, EV + 10));
    struct fetch_session *n = fetch_session_new(&c, false, false, 3, EV + 10);
    assert_non_null(n);
    assert_null(fetch_session_find(&c, bid));
    assert_ptr_equal(fetch_session_find(&c, aid), a);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
