# unit tests: core/raft (rules in isolation, and the seeded simulation)
check_PROGRAMS += tests/unit/raft_test tests/unit/raft_sim_test
TESTS += tests/unit/raft_test tests/unit/raft_sim_test
tests_unit_raft_test_SOURCES = tests/unit/raft_test.c
tests_unit_raft_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_raft_test_LDADD = $(UNIT_LIBS)
tests_unit_raft_sim_test_SOURCES = tests/unit/raft_sim_test.c
tests_unit_raft_sim_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_raft_sim_test_LDADD = $(UNIT_LIBS)
