# unit tests: core/quorum (quorum-state file, the plog-backed Raft log, a
# single voter over it)
check_PROGRAMS += tests/unit/quorum_test
TESTS += tests/unit/quorum_test
tests_unit_quorum_test_SOURCES = tests/unit/quorum_test.c
tests_unit_quorum_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_quorum_test_LDADD = $(UNIT_LIBS)
