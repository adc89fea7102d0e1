# unit tests: util
# the small per-partition mutex: exclusion under contention, trylock
check_PROGRAMS += tests/unit/slock_test
TESTS += tests/unit/slock_test
tests_unit_slock_test_SOURCES = tests/unit/slock_test.c
tests_unit_slock_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_slock_test_LDADD = $(UNIT_LIBS)

# the event-loop stall detector: a long callback counts and is logged, short ones and the off switch do not
check_PROGRAMS += tests/unit/loopwatch_test
TESTS += tests/unit/loopwatch_test
tests_unit_loopwatch_test_SOURCES = tests/unit/loopwatch_test.c
tests_unit_loopwatch_test_CFLAGS = $(UNIT_CFLAGS) $(LIBEV_CFLAGS)
tests_unit_loopwatch_test_LDADD = $(UNIT_LIBS)
