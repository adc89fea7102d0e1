# unit tests: log
check_PROGRAMS += tests/unit/plog_test
TESTS += tests/unit/plog_test
tests_unit_plog_test_SOURCES = tests/unit/plog_test.c
tests_unit_plog_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_plog_test_LDADD = $(UNIT_LIBS)
# the storage engine: index files, recovery, checkpoints, flush policy,
# retention, DeleteRecords, truncation, log manager, cleaner
check_PROGRAMS += tests/unit/storage_test
TESTS += tests/unit/storage_test
tests_unit_storage_test_SOURCES = tests/unit/storage_test.c
tests_unit_storage_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_storage_test_LDADD = $(UNIT_LIBS)
# producer state: Kafka's sequence/epoch rules, expiration, snapshots
check_PROGRAMS += tests/unit/producer_state_test
TESTS += tests/unit/producer_state_test
tests_unit_producer_state_test_SOURCES = tests/unit/producer_state_test.c
tests_unit_producer_state_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_producer_state_test_LDADD = $(UNIT_LIBS)
# the fd cache: eviction, pinning, EMFILE, and logs beyond the capacity
check_PROGRAMS += tests/unit/fdcache_test
TESTS += tests/unit/fdcache_test
tests_unit_fdcache_test_SOURCES = tests/unit/fdcache_test.c
tests_unit_fdcache_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_fdcache_test_LDADD = $(UNIT_LIBS)
