# unit tests: util
# the small per-partition mutex: exclusion under contention, trylock
check_PROGRAMS += tests/unit/slock_test
TESTS += tests/unit/slock_test
tests_unit_slock_test_SOURCES = tests/unit/slock_test.c
tests_unit_slock_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_slock_test_LDADD = $(UNIT_LIBS)
