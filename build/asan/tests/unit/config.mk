# unit tests: config
check_PROGRAMS += tests/unit/config_test tests/unit/uuid_test
TESTS += tests/unit/config_test tests/unit/uuid_test

tests_unit_config_test_SOURCES = tests/unit/config_test.c
tests_unit_config_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_config_test_LDADD = $(UNIT_LIBS)

tests_unit_uuid_test_SOURCES = tests/unit/uuid_test.c
tests_unit_uuid_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_uuid_test_LDADD = $(UNIT_LIBS)
