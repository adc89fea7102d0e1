# unit tests: the group coordinator (classic group state machine,
# __consumer_offsets records)
check_PROGRAMS += tests/unit/coord_test
TESTS += tests/unit/coord_test
tests_unit_coord_test_SOURCES = tests/unit/coord_test.c
tests_unit_coord_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_coord_test_LDADD = $(UNIT_LIBS)
# KIP-848 consumer groups: reconciliation, assignors, records
check_PROGRAMS += tests/unit/consumer_group_test
TESTS += tests/unit/consumer_group_test
tests_unit_consumer_group_test_SOURCES = tests/unit/consumer_group_test.c
tests_unit_consumer_group_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_consumer_group_test_LDADD = $(UNIT_LIBS)
# the transaction coordinator: state machine and __transaction_state records
check_PROGRAMS += tests/unit/txn_coord_test
TESTS += tests/unit/txn_coord_test
tests_unit_txn_coord_test_SOURCES = tests/unit/txn_coord_test.c
tests_unit_txn_coord_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_txn_coord_test_LDADD = $(UNIT_LIBS)
# the transaction marker sender against fake brokers and a real controller
check_PROGRAMS += tests/unit/txn_sender_test
TESTS += tests/unit/txn_sender_test
tests_unit_txn_sender_test_SOURCES = tests/unit/txn_sender_test.c
tests_unit_txn_sender_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_txn_sender_test_LDADD = $(UNIT_LIBS)
# the group coordinator's loader reading transactions back (coord/logscan.c)
check_PROGRAMS += tests/unit/coord_logscan_test
TESTS += tests/unit/coord_logscan_test
tests_unit_coord_logscan_test_SOURCES = tests/unit/coord_logscan_test.c
tests_unit_coord_logscan_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_coord_logscan_test_LDADD = $(UNIT_LIBS)
# the assignor capability kind: the example module assignor-roundrobin
# loaded, chosen by name (group.consumer.assignors, ServerAssignor)
check_PROGRAMS += tests/unit/assignor_test
TESTS += tests/unit/assignor_test
tests_unit_assignor_test_SOURCES = tests/unit/assignor_test.c
tests_unit_assignor_test_CPPFLAGS = $(AM_CPPFLAGS) -DMODULE_DIR='"$(abs_builddir)/modules/.libs"'
tests_unit_assignor_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_assignor_test_LDADD = $(UNIT_LIBS)
