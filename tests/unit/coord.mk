# unit tests: the group coordinator (classic group state machine,
# __consumer_offsets records)
check_PROGRAMS += tests/unit/coord_test
TESTS += tests/unit/coord_test
tests_unit_coord_test_SOURCES = tests/unit/coord_test.c
tests_unit_coord_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_coord_test_LDADD = $(UNIT_LIBS)
# The assignor modules' sources compiled into the tests that call them
# (tests/unit/assignor_modules.h), as a static module is.
ASSIGNOR_MODULE_SOURCES = modules/assignor-uniform/uniform.c modules/assignor-range/range.c
ASSIGNOR_MODULE_TEST_CPPFLAGS = -DSAMSA_PLUGIN_STATIC -DSAMSA_MODULE_VERSION='"test"'
# KIP-848 consumer groups: reconciliation, assignors, records
check_PROGRAMS += tests/unit/consumer_group_test
TESTS += tests/unit/consumer_group_test
tests_unit_consumer_group_test_SOURCES = tests/unit/consumer_group_test.c tests/unit/assignor_modules.h \
	$(ASSIGNOR_MODULE_SOURCES)
tests_unit_consumer_group_test_CPPFLAGS = $(AM_CPPFLAGS) $(ASSIGNOR_MODULE_TEST_CPPFLAGS)
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
# the assignor modules against the scenarios of Kafka's assignor tests
check_PROGRAMS += tests/unit/kafka_assignors_test
TESTS += tests/unit/kafka_assignors_test
tests_unit_kafka_assignors_test_SOURCES = tests/unit/kafka_assignors_test.c tests/unit/assignor_modules.h \
	$(ASSIGNOR_MODULE_SOURCES)
tests_unit_kafka_assignors_test_CPPFLAGS = $(AM_CPPFLAGS) $(ASSIGNOR_MODULE_TEST_CPPFLAGS)
tests_unit_kafka_assignors_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_kafka_assignors_test_LDADD = $(UNIT_LIBS)
# the assignor capability kind: the example module assignor-roundrobin
# loaded, chosen by name (group.consumer.assignors, ServerAssignor)
check_PROGRAMS += tests/unit/assignor_test
TESTS += tests/unit/assignor_test
tests_unit_assignor_test_SOURCES = tests/unit/assignor_test.c tests/unit/assignor_modules.h $(ASSIGNOR_MODULE_SOURCES)
tests_unit_assignor_test_CPPFLAGS = $(AM_CPPFLAGS) $(ASSIGNOR_MODULE_TEST_CPPFLAGS) -DMODULE_DIR='"$(abs_builddir)/modules/.libs"'
tests_unit_assignor_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_assignor_test_LDADD = $(UNIT_LIBS)
