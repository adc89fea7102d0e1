# unit tests: core/replica (replication decisions, the follower's append)
check_PROGRAMS += tests/unit/repl_test
TESTS += tests/unit/repl_test
tests_unit_repl_test_SOURCES = tests/unit/repl_test.c
tests_unit_repl_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_repl_test_LDADD = $(UNIT_LIBS)
