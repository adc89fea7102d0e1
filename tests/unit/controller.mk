# unit tests: controller (metadata log, images, partition registry)
check_PROGRAMS += tests/unit/controller_test
TESTS += tests/unit/controller_test
tests_unit_controller_test_SOURCES = tests/unit/controller_test.c
tests_unit_controller_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_controller_test_LDADD = $(UNIT_LIBS)
# unit tests: the controller's broker-facing operations (AlterPartition,
# AllocateProducerIds, UpdateFeatures, controlled shutdown, per-broker configs)
check_PROGRAMS += tests/unit/controller_ops_test
TESTS += tests/unit/controller_ops_test
tests_unit_controller_ops_test_SOURCES = tests/unit/controller_ops_test.c
tests_unit_controller_ops_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_controller_ops_test_LDADD = $(UNIT_LIBS)
# unit tests: the broker side's producer-id blocks (prefetch at 90%,
# exhaustion, ids increasing across blocks)
check_PROGRAMS += tests/unit/pid_manager_test
TESTS += tests/unit/pid_manager_test
tests_unit_pid_manager_test_SOURCES = tests/unit/pid_manager_test.c
tests_unit_pid_manager_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_pid_manager_test_LDADD = $(UNIT_LIBS)
EXTRA_DIST += tests/unit/node_fixture.h tests/unit/ctl_fixture.h
