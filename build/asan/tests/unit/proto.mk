# unit tests: proto
check_PROGRAMS += tests/unit/record_batch_test tests/unit/crc32c_test
TESTS += tests/unit/record_batch_test tests/unit/crc32c_test

tests_unit_record_batch_test_SOURCES = tests/unit/record_batch_test.c
tests_unit_record_batch_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_record_batch_test_LDADD = $(UNIT_LIBS)

tests_unit_crc32c_test_SOURCES = tests/unit/crc32c_test.c
tests_unit_crc32c_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_crc32c_test_LDADD = $(UNIT_LIBS)
